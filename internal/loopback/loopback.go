// Package loopback tells whether a request comes from a client of this
// machine: what praetor dev's open tenant, served without a token on
// loopback, asks of a request (the gateway's API and the memory service's
// MCP endpoint).
package loopback

import (
	"net"
	"net/http"
)

// Remote reports whether r's connection comes from a loopback address.
func Remote(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Forwarded returns the header by which a proxy says it forwards r for
// another client, or "" when r has none. Such a proxy on this machine makes
// every client look local: its word is taken, and r is not a local client's.
func Forwarded(r *http.Request) string {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return h
		}
	}
	return ""
}
