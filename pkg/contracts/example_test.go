package contracts_test

import (
	"fmt"
	"time"

	"github.com/praetorhq/praetor/pkg/contracts"
)

// A producer builds a catalog event from its payload; the catalog gives its
// type and subject, and a consumer decodes it back with its contract checked.
func Example() {
	ev, err := contracts.NewEvent(contracts.Meta{ID: "turn-1", Source: "/praetor/gateway",
		Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)},
		contracts.TurnReceived{TenantID: "acme", SessionID: "s1", TurnID: "turn-1", Message: "Hello"})
	if err != nil {
		panic(err)
	}
	subject, _ := contracts.Subject(ev)
	fmt.Println(ev.Type())
	fmt.Println(subject)

	turn, err := contracts.DecodeAs[contracts.TurnReceived](ev)
	fmt.Println(turn.Message, err)
	// Output:
	// dev.praetor.turn.received.v1
	// praetor.turn.received.acme.s1
	// Hello <nil>
}
