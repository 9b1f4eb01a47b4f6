// Package collector registers Prometheus collectors that several
// components of one process share: the executors of a node's tenants, its
// worker pools, its dispatchers, each making the same collectors for one
// registry.
package collector

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or returns the collector
// registered there already under c's description, so that components
// sharing reg count into the same series. Any other failure, a collector of
// another type under the description included, is joined into *errp and c
// is returned.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	*errp = errors.Join(*errp, err)
	return c
}
