package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/testenv"
)

// praetor tenant gives a serve deployment its credentials: a tenant, an API
// token that authenticates as it, and a revocation that stops it — on the
// dev SQLite store and on PostgreSQL.
func TestTenantCommands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// where returns the store flags and the store the server opens.
		where func(t *testing.T) (flags []string, open func() (store.DB, error))
	}{
		{"sqlite", func(t *testing.T) ([]string, func() (store.DB, error)) {
			dir := t.TempDir()
			return []string{"--data-dir", dir, "--database-url", ""}, func() (store.DB, error) {
				return node.OpenStore(context.Background(), true, dir, "")
			}
		}},
		{"postgres", func(t *testing.T) ([]string, func() (store.DB, error)) {
			url := testenv.Postgres(t)
			return []string{"--database-url", url}, func() (store.DB, error) {
				return node.OpenStore(context.Background(), false, "", url)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flags, open := tc.where(t)
			run := func(args ...string) (stdout, stderr string, err error) {
				cmd := exec.Command(binary, append(append([]string{"tenant"}, flags...), args...)...)
				var out, errb strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errb
				err = cmd.Run()
				return out.String(), errb.String(), err
			}
			mustRun := func(want string, args ...string) string {
				t.Helper()
				out, errOut, err := run(args...)
				if err != nil || !strings.Contains(out+errOut, want) {
					t.Fatalf("praetor tenant %s: %v; output lacks %q:\n%s%s", strings.Join(args, " "), err, want, out, errOut)
				}
				return out
			}
			refused := func(want string, args ...string) {
				t.Helper()
				out, errOut, err := run(args...)
				if err == nil || !strings.Contains(out+errOut, want) {
					t.Fatalf("praetor tenant %s: %v, want a failure saying %q:\n%s%s", strings.Join(args, " "), err, want, out, errOut)
				}
			}

			refused("praetor migrate", "add", "--tenant", "acme")
			mustRun("tenant acme added", "add", "--tenant", "acme", "--name", "Acme Inc", "--migrate")
			refused("already exists", "add", "--tenant", "acme")
			refused(`"bad id"`, "add", "--tenant", "bad id")
			mustRun("Acme Inc", "list")

			secret := strings.TrimSpace(mustRun("prt_", "token", "issue", "--tenant", "acme", "--name", "chat-gateway", "--ttl", "1h"))
			if strings.Contains(secret, "\n") {
				t.Fatalf("token issue printed %q, want the secret alone on stdout", secret)
			}
			refused("--name", "token", "issue", "--tenant", "acme")
			refused("not found", "token", "issue", "--tenant", "ghost", "--name", "x")

			db, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			tok, err := store.Authenticate(ctx, db, secret, time.Now())
			if err != nil || tok.TenantID != "acme" || tok.Name != "chat-gateway" {
				t.Fatalf("the issued token authenticates as %+v, %v; want tenant acme", tok, err)
			}
			var listed []struct {
				ID        string     `json:"id"`
				RevokedAt *time.Time `json:"revoked_at"`
			}
			if err := json.Unmarshal([]byte(mustRun("", "token", "list", "--tenant", "acme", "--json")), &listed); err != nil ||
				len(listed) != 1 || listed[0].ID != tok.ID {
				t.Fatalf("token list = %+v (%v), want %s", listed, err, tok.ID)
			}
			mustRun("revoked", "token", "revoke", "--tenant", "acme", tok.ID)
			mustRun("revoked ", "token", "list", "--tenant", "acme")
			var te *store.TokenError
			if _, err := store.Authenticate(ctx, db, secret, time.Now()); !errors.As(err, &te) || te.Reason != store.TokenRevoked {
				t.Errorf("a revoked token authenticates: %v", err)
			}
			refused("not found", "token", "revoke", "--tenant", "acme", "tok_missing")
		})
	}
}

// Names stored before the rule against control characters are read as they
// are: tenant list and token list show one that holds a control, line
// separator or bidirectional character quoted with it escaped, so it can
// neither clear the terminal nor pass for another row; a plain name is
// shown as it is.
func TestTenantListEscapesNamesStoredBeforeTheRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flags := []string{"--data-dir", dir, "--database-url", ""}
	list := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, append(append([]string{"tenant"}, flags...), args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("praetor tenant %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	list("add", "--migrate", "--tenant", "acme", "--name", "Acme Inc")
	list("token", "issue", "--tenant", "acme", "--name", "chat-gateway")

	db, err := node.OpenStore(context.Background(), true, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Straight into the store, as names were stored before the rule.
	const evil = "Evil\x1b[2J\nacme  FAKE"
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)`, []any{"evil", evil, time.Now().UTC()}},
		{`INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)`, []any{"rtl", "a\u202eevil\u2028b", time.Now().UTC()}},
		{`UPDATE api_tokens SET name = $1 WHERE tenant_id = $2`, []any{evil, "acme"}},
	} {
		if _, err := db.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	out := list("list")
	for _, want := range []string{"Acme Inc", `"Evil\x1b[2J\nacme  FAKE"`, `"a\u202eevil\u2028b"`} {
		if !strings.Contains(out, want) {
			t.Errorf("tenant list lacks %s:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\u202e\u2028") || strings.Count(out, "\n") != 4 {
		t.Errorf("tenant list prints a name's control characters (want a header and 3 rows):\n%q", out)
	}
	out = list("token", "list", "--tenant", "acme")
	if !strings.Contains(out, `"Evil\x1b[2J\nacme  FAKE"`) || strings.Contains(out, "\x1b") || strings.Count(out, "\n") != 2 {
		t.Errorf("token list prints a name's control characters (want a header and 1 row, the name escaped):\n%q", out)
	}
}
