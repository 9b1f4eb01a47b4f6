package loopback_test

import (
	"net/http/httptest"
	"testing"

	"github.com/praetorhq/praetor/internal/loopback"
)

func TestRemoteAndForwarded(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:4000": true, "[::1]:4000": true, "10.1.2.3:4000": false, "junk": false} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		if got := loopback.Remote(r); got != want {
			t.Errorf("Remote(%s) = %t, want %t", addr, got, want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	if h := loopback.Forwarded(r); h != "" {
		t.Errorf("Forwarded without a header = %q", h)
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-IP"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set(h, "for=203.0.113.7")
		if got := loopback.Forwarded(r); got == "" {
			t.Errorf("Forwarded with %s = %q", h, got)
		}
	}
}
