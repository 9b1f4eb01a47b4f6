//go:build !linux

package postgres

import (
	"syscall"
	"time"
)

// setUserTimeout does nothing: TCP_USER_TIMEOUT is Linux's. The keepalive
// probes still end an idle connection to a server gone silent.
func setUserTimeout(syscall.RawConn, time.Duration) error { return nil }
