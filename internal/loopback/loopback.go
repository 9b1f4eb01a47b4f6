// Package loopback tells whether a request comes from a client of this
// machine: what praetor dev's open tenant, served without a token on
// loopback, asks of a request (the gateway's API and the memory service's
// MCP endpoint).
package loopback

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
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

// Foreign says why a request from a loopback address (Remote) may still
// come from elsewhere, or "" when it does not: a web page of another site
// the developer has open can send requests to a loopback address (a
// cross-site request, which carries that site's Origin), or reach it under
// a name of its own that resolves to 127.0.0.1 (DNS rebinding, whose Host
// is that name), and a proxy on the machine forwards others' requests. A
// client that is not a browser sends no Origin. (A proxy that sends a
// loopback Host and no forwarding header cannot be told from a local
// client: the open tenant is for a developer's machine, not one that
// proxies to it.)
func Foreign(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !Name(host) {
		return fmt.Sprintf("Host %q is not a loopback name", r.Host)
	}
	if h := Forwarded(r); h != "" {
		return fmt.Sprintf("the request came through a proxy (%s)", h)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return fmt.Sprintf("Origin %q is not this server's (http://%s)", origin, r.Host)
		}
	}
	return ""
}

// Name reports whether host names this machine: localhost (or a name under
// it) or a loopback address.
func Name(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
