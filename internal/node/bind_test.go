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

// With a metrics address, /metrics is served there alone: the API port
// answers it 404 and keeps /healthz and /readyz, which the metrics port
// does not serve. Without one, /metrics is on the API port.
func TestMetricsAddr(t *testing.T) {
	for _, tc := range []struct {
		name        string
		metricsAddr string
	}{
		{"on the API port by default", ""},
		{"on a port of its own", "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var started atomic.Int32
			available := map[string]node.Factory{
				"svc": func(context.Context, node.Deps) (node.Service, error) { return startCounter{&started}, nil },
			}
			ready := make(chan string, 1)
			metricsReady := make(chan string, 1)
			ran := make(chan error, 1)
			go func() {
				ran <- node.Run(ctx, node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", MetricsAddr: tc.metricsAddr,
					Services: []string{"svc"}, Available: available, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
					Ready: func(addr string) { ready <- addr }, MetricsReady: func(addr string) { metricsReady <- addr }})
			}()
			api := "http://" + eventstest.Wait(t, ready, 30*time.Second, "the node to serve")
			want := map[string]int{api + "/healthz": http.StatusOK, api + "/readyz": http.StatusOK, api + "/metrics": http.StatusOK}
			if tc.metricsAddr != "" {
				var metrics string
				select {
				case addr := <-metricsReady:
					metrics = "http://" + addr
				default:
					t.Fatal("the node serves without having given its metrics address")
				}
				want[api+"/metrics"] = http.StatusNotFound
				want[metrics+"/metrics"] = http.StatusOK
				want[metrics+"/healthz"] = http.StatusNotFound
			} else if len(metricsReady) > 0 {
				t.Errorf("without a metrics address the node gave one: %s", <-metricsReady)
			}
			for url, status := range want {
				res, err := http.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(res.Body)
				_ = res.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if res.StatusCode != status {
					t.Errorf("GET %s: %d, want %d", url, res.StatusCode, status)
				}
				if strings.HasSuffix(url, "/metrics") && status == http.StatusOK && !strings.Contains(string(body), "praetor_build_info{") {
					t.Errorf("GET %s has no praetor_build_info", url)
				}
			}
			stop()
			if err := eventstest.Wait(t, ran, 30*time.Second, "the node to stop"); err != nil {
				t.Errorf("Run = %v", err)
			}
		})
	}
}

// A node whose metrics port is taken fails before any service starts, as
// one whose HTTP port is.
func TestMetricsPortInUseFailsBeforeServicesStart(t *testing.T) {
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
	err = node.Run(context.Background(), node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0",
		MetricsAddr: taken.Addr().String(), Services: []string{"svc"}, Available: available,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var se *node.SettingError
	if !errors.As(err, &se) || se.Setting != "metrics-addr" {
		t.Fatalf("Run on a taken metrics port = %v, want a metrics-addr setting error", err)
	}
	if b, s := built.Load(), started.Load(); b != 0 || s != 0 {
		t.Errorf("services built %d, started %d before the bind failed, want 0 and 0", b, s)
	}
}

// A metrics address that is not host:port, or is the HTTP address, is
// refused naming --metrics-addr.
func TestMetricsAddrValidation(t *testing.T) {
	for _, tc := range []struct{ http, metrics, mentions string }{
		{"127.0.0.1:8080", "9090", "not host:port"},
		{"127.0.0.1:8080", "127.0.0.1:8080", "listens where --http-addr"},
		// The same port on an address that covers the other's.
		{"127.0.0.1:8080", ":8080", "listens where --http-addr"},
		{":8080", "127.0.0.1:8080", "listens where --http-addr"},
		{"[::]:8080", "localhost:8080", "listens where --http-addr"},
		{"LOCALHOST:8080", "localhost:8080", "listens where --http-addr"},
		{"127.0.0.1:http", "127.0.0.1:80", "listens where --http-addr"},
	} {
		err := node.Validate(node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: tc.http, MetricsAddr: tc.metrics})
		var se *node.SettingError
		if !errors.As(err, &se) || se.Setting != "metrics-addr" || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("Validate(--metrics-addr %s, --http-addr %s) = %v, want a metrics-addr error mentioning %q", tc.metrics, tc.http, err, tc.mentions)
		}
	}
	for _, tc := range []struct{ http, metrics string }{
		{"127.0.0.1:8080", "127.0.0.1:9090"},
		{"127.0.0.1:8080", "10.0.0.1:8080"}, // two interfaces, one port
		{":0", ":0"},                        // each takes a free port
	} {
		if err := node.Validate(node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: tc.http, MetricsAddr: tc.metrics}); err != nil {
			t.Errorf("Validate(--metrics-addr %s, --http-addr %s) = %v, want nil", tc.metrics, tc.http, err)
		}
	}
}
