package postgres

import (
	"context"
	"net"
)

// WithDial returns c, its connections dialed by dial with the dialer Open
// makes (a test's, say in a network of its own).
func WithDial(c Config, dial func(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error)) Config {
	c.dial = dial
	return c
}
