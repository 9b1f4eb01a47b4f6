package node_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"

	"github.com/praetorhq/praetor/internal/node"
)

// A node whose HTTP port is taken fails before any service starts: a
// service that started would have joined its consumer group (and taken
// events) for a process about to exit 1.
func TestHTTPPortInUseFailsBeforeServicesStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = taken.Close() })
	var built, started atomic.Int32
	available := map[string]node.Factory{
		"svc": func(context.Context, node.Deps) (node.Service, error) {
			built.Add(1)
			return startCounter{&started}, nil
		},
	}
	err = node.Run(context.Background(), node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: taken.Addr().String(),
		Services: []string{"svc"}, Available: available, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var se *node.SettingError
	if !errors.As(err, &se) || se.Setting != "http-addr" {
		t.Fatalf("Run on a taken port = %v, want a http-addr setting error", err)
	}
	if b, s := built.Load(), started.Load(); b != 0 || s != 0 {
		t.Errorf("services built %d, started %d before the bind failed, want 0 and 0", b, s)
	}
}

type startCounter struct{ n *atomic.Int32 }

func (s startCounter) Start(context.Context) error { s.n.Add(1); return nil }
func (startCounter) Stop(context.Context) error    { return nil }
