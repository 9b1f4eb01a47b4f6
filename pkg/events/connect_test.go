package events_test

import (
	"net"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/pkg/events"
)

// A failed connection names the server without its credentials: the
// error is printed and logged.
func TestConnectErrorHidesCredentials(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, tt := range []struct{ url, secret, want string }{
		{"nats://u:NatsSecret@" + addr, "NatsSecret", "nats://u:xxxxx@" + addr},
		{"nats://NatsToken@" + addr, "NatsToken", "nats://xxxxx@" + addr},
		// url.Parse's error quotes the URL it cannot parse.
		{"nats://u:Nats%zzSecret@" + addr, "Secret", "nats://u:xxxxx@" + addr},
		{"nats://u:Nats Secret@" + addr, "Secret", "nats://u:xxxxx@" + addr},
	} {
		nc, err := events.Connect(tt.url, "test")
		if err == nil {
			nc.Close()
			t.Fatalf("Connect(%s) succeeded with nothing listening", tt.want)
		}
		if strings.Contains(err.Error(), tt.secret) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Connect error is %q, want %s and not the secret", err, tt.want)
		}
	}
}
