package postgres

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/praetorhq/praetor/internal/store"
)

// pgx's errors carry the SQLSTATE that store.SerializationFailure reads:
// Tx retries what it reports.
func TestPgErrorsAreSerializationFailures(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "40001"}, true},
		{fmt.Errorf("handler: %w", &pgconn.PgError{Code: "40P01"}), true},
		{&pgconn.PgError{Code: "23505"}, false},
		{errors.New("40001"), false},
		{nil, false},
	} {
		if got := store.SerializationFailure(tc.err); got != tc.want {
			t.Errorf("SerializationFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for attempt := 1; attempt < 40; attempt++ {
		if d := backoff(attempt); d <= 0 || d > 100*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want in (0, 100ms]", attempt, d)
		}
	}
}
