package events_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/pkg/events"
)

// An embedded server, a partitioned stream, a keyed consumer and a publish:
// the whole life of an event.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, _ := srv.Connect()
	defer nc.Close()

	route := func(ev event.Event) (string, error) {
		return "demo.greeting.t1." + ev.Extensions()["partitionkey"].(string), nil
	}
	bus, _ := events.New(nc, events.Config{Subject: route})
	ctx := context.Background()
	if err := bus.EnsureStream(ctx, events.StreamConfig{Name: "DEMO", Subjects: []string{"demo.greeting.*.*"}, Partitions: 4}); err != nil {
		panic(err)
	}
	got := make(chan string, 1)
	sub, err := bus.Subscribe(ctx, events.ConsumerConfig{Stream: "DEMO", Name: "greeter", Keyed: true,
		Subjects: []string{"demo.greeting.*.*"}}, func(ctx context.Context, ev event.Event) error {
		got <- string(ev.Data())
		return nil
	})
	if err != nil {
		panic(err)
	}
	defer sub.Stop(ctx)

	ev := event.New()
	ev.SetID("g1")
	ev.SetType("dev.example.greeting.v1")
	ev.SetSource("/example")
	ev.SetExtension("partitionkey", "alice")
	_ = ev.SetData(event.ApplicationJSON, map[string]string{"hello": "alice"})
	if err := bus.Publish(ctx, ev); err != nil {
		panic(err)
	}
	select {
	case data := <-got:
		fmt.Println(data)
	case <-time.After(10 * time.Second):
		fmt.Println("no delivery")
	}
	_ = bus.Close(ctx)
	// Output: {"hello":"alice"}
}
