package node_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// idle is a service that does nothing.
type idle struct{}

func (idle) Start(context.Context) error { return nil }
func (idle) Stop(context.Context) error  { return nil }

// A stream max age under the default duplicate window (a minute in dev)
// starts: the window is the max age, which NATS requires, and which keeps
// two copies of an id out of the stream as well (the first is gone when
// the window ends).
func TestShortMaxAgeStarts(t *testing.T) {
	var bus *events.Bus
	available := map[string]node.Factory{"idle": func(_ context.Context, d node.Deps) (node.Service, error) {
		bus = d.Bus
		return idle{}, nil
	}}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		ran <- node.Run(ctx, node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0",
			AckWait: 10 * time.Second, Streams: node.StreamSettings{MaxAge: 20 * time.Second}, Available: available,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(string) { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-ran:
		t.Fatalf("dev with --stream-max-age 20s: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not serve in 30s")
	}
	s, err := bus.JetStream().Stream(ctx, contracts.Streams()[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Duplicates; got != 20*time.Second {
		t.Errorf("duplicate window %v, want the max age 20s", got)
	}
	stop()
	if err := eventstest.Wait(t, ran, 30*time.Second, "the node to stop"); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// A duplicate window given longer than the max age is refused before
// anything starts, naming both settings and what to set.
func TestDuplicateWindowOverMaxAgeRefused(t *testing.T) {
	err := node.Validate(node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0",
		AckWait: 10 * time.Second, Streams: node.StreamSettings{MaxAge: 20 * time.Second, Duplicates: 2 * time.Minute}})
	var se *node.SettingError
	if !errors.As(err, &se) || se.Setting != "duplicate-window" {
		t.Fatalf("validate: %v, want a SettingError on duplicate-window", err)
	}
	for _, want := range []string{"--stream-max-age", "20s", "2m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// A max age within the ack wait is refused: an event whose worker dies
// would expire before it is delivered again.
func TestMaxAgeWithinTheAckWaitRefused(t *testing.T) {
	err := node.Validate(node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0",
		AckWait: 30 * time.Second, Streams: node.StreamSettings{MaxAge: 20 * time.Second}})
	var se *node.SettingError
	if !errors.As(err, &se) || se.Setting != "stream-max-age" || !strings.Contains(err.Error(), "--ack-wait 30s") {
		t.Fatalf("validate: %v, want a SettingError on stream-max-age naming --ack-wait", err)
	}
}
