package node_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
)

// A dev node asked to listen for NATS on port 0 takes a free port and
// says which (NATSReady), as --http-addr's port 0 does: the embedded
// server took port 0 for its default, so two such nodes (two test suites,
// pkg/praetortest) both wanted 4222.
func TestNATSListenOnPortZeroTakesAFreePort(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	natsReady := make(chan string, 1)
	ready := make(chan string, 1)
	ran := make(chan error, 1)
	go func() {
		ran <- node.Run(ctx, node.Config{Dev: true, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
			Available: map[string]node.Factory{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			NATSReady: func(u string) { natsReady <- u }, Ready: func(addr string) { ready <- addr }})
	}()
	select {
	case <-ready:
	case err := <-ran:
		t.Fatalf("the node did not start: %v", err)
	}
	var got string
	select {
	case got = <-natsReady:
	default:
		t.Fatal("NATSReady was not called before Ready")
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatalf("NATSReady's URL %q: %v", got, err)
	}
	if host, port, _ := net.SplitHostPort(u.Host); host != "127.0.0.1" || port == "0" || port == "4222" {
		t.Errorf("NATSReady's URL %s, want 127.0.0.1 on a free port (neither 0 nor the default 4222)", got)
	}
	nc, err := nats.Connect(got)
	if err != nil {
		t.Fatalf("connect to %s: %v", got, err)
	}
	nc.Close()
	stop()
	if err := eventstest.Wait(t, ran, 30*time.Second, "the node to stop"); err != nil {
		t.Errorf("Run = %v", err)
	}
}
