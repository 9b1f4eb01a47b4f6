package loopback_test

import (
	"net/http/httptest"
	"strings"
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

// TestForeign: a request from loopback without a token is this machine's
// own client only under a loopback name, with no proxy and from no other
// site's page.
func TestForeign(t *testing.T) {
	for _, tc := range []struct {
		name, host, origin, header string
		want                       string // what the reason mentions; "" for none
	}{
		{"a client that is no browser", "127.0.0.1:8080", "", "", ""},
		{"as localhost", "localhost:8080", "", "", ""},
		{"as a name under localhost", "app.localhost:8080", "", "", ""},
		{"as [::1]", "[::1]:8080", "", "", ""},
		{"the server's own page", "127.0.0.1:8080", "http://127.0.0.1:8080", "", ""},
		{"another site's page", "127.0.0.1:8080", "https://evil.example.com", "", `Origin "https://evil.example.com"`},
		{"another port's page", "127.0.0.1:8080", "http://127.0.0.1:9999", "", "Origin"},
		{"an Origin that is no URL", "127.0.0.1:8080", "%zz", "", "Origin"},
		{"another site's name (DNS rebinding)", "evil.example.com:8080", "", "", `Host "evil.example.com:8080"`},
		{"another site's name, from its page", "evil.example.com:8080", "http://evil.example.com:8080", "", "Host"},
		{"through a proxy", "127.0.0.1:8080", "", "X-Forwarded-For", "proxy (X-Forwarded-For)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.RemoteAddr, r.Host = "127.0.0.1:40000", tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.header != "" {
				r.Header.Set(tc.header, "203.0.113.7")
			}
			got := loopback.Foreign(r)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("Foreign = %q, want none", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("Foreign = %q, want a reason mentioning %q", got, tc.want)
			}
		})
	}
}
