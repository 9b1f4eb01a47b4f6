package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnavailable reports whether err says the database cannot be reached or
// is not serving, an outage to wait out rather than a fault of the
// statement or its data: a connection refused, reset or cut, a connection
// that could not be made, or the server's own word that it is shutting
// down, starting up or has lost the connection (SQLSTATE class 08, 57P01 to
// 57P03). A constraint violation, a bad statement, a serialization failure
// or a cancelled statement is not.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server answered: it says whether it serves.
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection exception
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The caller gave up (a handler's timeout, a shutdown), whatever
		// the database's state; pgx calls a statement it did not send for
		// that safe to retry.
		return false
	}
	if pgconn.SafeToRetry(err) {
		// Failed before the statement was sent: its connection was gone.
		return true
	}
	for _, cut := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, io.ErrUnexpectedEOF, net.ErrClosed, driver.ErrBadConn} {
		if errors.Is(err, cut) {
			return true
		}
	}
	return false
}
