package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/pkg/events"
)

// A tool whose --data-dir holds no store reads the praetor dev listening
// on the default address, which may run on any other directory: it says
// which server it reads and why, and how to choose another.
func TestToolSaysWhichNATSItFallsBackTo(t *testing.T) {
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	was := localDevURL
	localDevURL = srv.ClientURL()
	t.Cleanup(func() { localDevURL = was })

	dataDir := filepath.Join(t.TempDir(), ".praetor")
	var stderr bytes.Buffer
	nc, closeConn, err := toolConn("replay", "", dataDir, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	if got := nc.ConnectedUrl(); got != srv.ClientURL() {
		t.Fatalf("connected to %s, want the local dev's %s", got, srv.ClientURL())
	}
	for _, want := range []string{srv.ClientURL(), filepath.Join(dataDir, "nats") + " not found", "--data-dir", "--nats-url"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not say %q", stderr.String(), want)
		}
	}
}
