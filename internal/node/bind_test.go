package node_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
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

// A node's /metrics says which build it runs (praetor_build_info) and how
// many events wait in the outbox (praetor_outbox_unsent), labelled with
// the node's services.
func TestMetricsBuildInfoAndOutbox(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var started atomic.Int32
	available := map[string]node.Factory{
		"svc": func(context.Context, node.Deps) (node.Service, error) { return startCounter{&started}, nil },
	}
	ready := make(chan string, 1)
	ran := make(chan error, 1)
	go func() {
		ran <- node.Run(ctx, node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Version: "v9.8.7 (abc)",
			Services: []string{"svc"}, Available: available, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(addr string) { ready <- addr }})
	}()
	addr := eventstest.Wait(t, ready, 30*time.Second, "the node to serve")
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`praetor_build_info{goversion="` + runtime.Version() + `",version="v9.8.7 (abc)"} 1`,
		`praetor_outbox_unsent{service="svc"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	stop()
	if err := eventstest.Wait(t, ran, 30*time.Second, "the node to stop"); err != nil {
		t.Errorf("Run = %v", err)
	}
}
