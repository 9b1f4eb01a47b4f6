package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// DatabaseURLVar names the PostgreSQL server tests use (scripts/postgres.sh
// prints it).
const DatabaseURLVar = "DATABASE_URL"

// postgresImage is the image of the container started when no server is
// given and a Docker engine answers.
const postgresImage = "postgres:16-alpine"

// Postgres returns the connection string of a new, empty schema for this test
// alone: its search_path names the schema, so unqualified tables (and goose's
// version table) go there. The schema is dropped when the test ends.
//
// The server is DATABASE_URL's; when that is unset and a Docker engine
// answers, a container started once per test process (removed by
// testcontainers' reaper when the process ends); otherwise the test is skipped,
// or failed under PRAETOR_REQUIRE_SERVICES=1. A DATABASE_URL that does not
// answer fails the test: the variable says a server should be there.
func Postgres(t testing.TB) string {
	t.Helper()
	base, source := os.Getenv(DatabaseURLVar), DatabaseURLVar
	if base == "" {
		var why string
		if base, why = postgresContainer(); base == "" {
			Unavailable(t, "PostgreSQL", DatabaseURLVar, why)
			return ""
		}
		source = "the " + postgresImage + " container"
	}

	schema := "t_" + randomHex(8)
	err := withConn(base, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CREATE SCHEMA "+schema)
		return err
	})
	if err != nil {
		t.Fatalf("testenv: PostgreSQL from %s: create schema %s: %v", source, schema, err)
	}
	t.Cleanup(func() {
		err := withConn(base, func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			return err
		})
		if err != nil {
			t.Errorf("testenv: drop schema %s: %v (is a connection of the test still in a transaction?)", schema, err)
		}
	})
	u, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("testenv: %s: %v", source, err)
	}
	return u
}

// withConn runs fn on a new connection, closed after: no pool, whose
// background goroutines would outlive the test and trip goleak.
func withConn(dsn string, fn func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(ctx, conn)
}

// withSearchPath sets search_path in a connection string, as a URL
// (postgres://...) or as keyword=value pairs; pgx sends it to the server as a
// run-time parameter of every connection.
func withSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("connection string is not a valid URL: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// keyword=value: a later keyword overrides an earlier one.
	return strings.TrimSpace(dsn) + " search_path=" + schema, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// postgresOnce starts at most one container per test process.
var postgresOnce struct {
	sync.Once
	url string
	why string
}

// postgresContainer returns the URL of a PostgreSQL container, or why there
// is none.
func postgresContainer() (dsn, why string) {
	postgresOnce.Do(func() {
		postgresOnce.url, postgresOnce.why = startPostgresContainer()
	})
	return postgresOnce.url, postgresOnce.why
}

func startPostgresContainer() (dsn, why string) {
	defer func() {
		// testcontainers panics in some set-ups without a Docker engine.
		if r := recover(); r != nil {
			dsn, why = "", fmt.Sprintf("no Docker engine: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := dockerHealthy(ctx); err != nil {
		return "", DatabaseURLVar + " is unset and no Docker engine answers for testcontainers: " + err.Error()
	}
	ctr, err := tcpostgres.Run(ctx, postgresImage,
		tcpostgres.WithDatabase("praetor"),
		tcpostgres.WithUsername("praetor"),
		tcpostgres.WithPassword("praetor"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return "", DatabaseURLVar + " is unset and the " + postgresImage + " container did not start: " + err.Error()
	}
	dsn, err = ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return "", "the " + postgresImage + " container has no connection string: " + err.Error()
	}
	return dsn, ""
}

// dockerHealthy reports whether a Docker engine answers testcontainers.
func dockerHealthy(ctx context.Context) error {
	p, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Health(ctx)
}
