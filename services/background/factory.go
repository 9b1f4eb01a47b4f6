package background

import (
	"context"

	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/node"
)

// Factory builds the background service of a node: the default handlers
// on the node's LLM (the offline provider gets the research skill), checked
// against the node's engines. On PostgreSQL its consumer pauses while the
// database is down.
func Factory(_ context.Context, d node.Deps) (node.Service, error) {
	if d.Offline != nil {
		d.Offline.Handle(tasks.PurposeResearch, offlineskill.Research)
	}
	h, err := DefaultHandlers(d.LLM)
	if err != nil {
		return nil, err
	}
	return New(Config{DB: d.DB, Bus: d.Bus, Relay: d.Relay, Handlers: h, Engines: d.Engines, Logger: d.Logger,
		Registerer: d.Registerer, AckWait: d.AckWait, Unavailable: d.StoreUnavailable()})
}
