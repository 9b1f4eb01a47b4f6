package sqlmemory_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store/testdb"

	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/memory/governance"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/internal/memtest"
	"github.com/praetorhq/praetor/services/memory/sqlmemory"
	"github.com/praetorhq/praetor/services/memory/write"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// A token's name holding a control character (stored before Issue checked
// names, straight into the store here) is described quoted with it
// escaped, as tenant list shows one; a plain name is shown as it is.
func TestTokenDescribeEscapesTheName(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := memtest.Ctx(t)
		memtest.Tenant(t, db, "acme")
		tk := sqlmemory.NewTokens(db, func() time.Time { return t0 })
		_, plain, err := tk.Issue(ctx, "acme", "architecture board", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, forged, err := tk.Issue(ctx, "acme", "placeholder", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		raw := "board\x1b[2J\nfake\u202erow"
		if _, err := db.Exec(ctx, `UPDATE memory_governance_tokens SET name = $1 WHERE id = $2`, raw, forged.ID); err != nil {
			t.Fatal(err)
		}
		list, err := tk.List(ctx, "acme")
		if err != nil || len(list) != 2 {
			t.Fatalf("List = %+v, %v", list, err)
		}
		for _, k := range list {
			d := k.Describe(t0)
			want := "architecture board"
			if k.ID == forged.ID {
				want = strconv.Quote(raw)
			} else if k.ID != plain.ID {
				t.Fatalf("listed token %s, issued none such", k.ID)
			}
			if name := strings.Split(d, "\t")[1]; name != want {
				t.Errorf("Describe of %s shows the name %q, want %q", k.ID, name, want)
			}
		}
	})
}

// Tokens are stored hashed; a valid one passes, and every way of being
// wrong is refused with the error that says which.
func TestTokens(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := memtest.Ctx(t)
		memtest.Tenant(t, db, "acme")
		memtest.Tenant(t, db, "globex")
		now := t0
		tk := sqlmemory.NewTokens(db, func() time.Time { return now })
		valid, rec, err := tk.Issue(ctx, "acme", "architecture board", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := contracts.GovernanceTokenID(valid); !ok || id != rec.ID || !rec.ExpiresAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("Issue = %q, %+v: want gov_<id>_<secret> expiring in an hour", valid, rec)
		}
		var stored int
		if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM memory_governance_tokens WHERE token_hash = $1`, governance.Hash(valid)).Scan(&stored); err != nil || stored != 1 {
			t.Fatalf("rows with the token's hash = %d, %v", stored, err)
		}
		var leaked int
		// The secret is base64url: it may hold '_' (a LIKE wildcard too), so
		// it is cut after the id, and looked for with instr/strpos.
		secret := strings.TrimPrefix(valid, contracts.GovernanceTokenPrefix+rec.ID+"_")
		find := `instr(token_hash, $1) > 0 OR instr(name, $1) > 0 OR instr(id, $1) > 0`
		if db.Dialect() == store.Postgres {
			find = strings.ReplaceAll(find, "instr(", "strpos(")
		}
		if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM memory_governance_tokens WHERE `+find, secret).Scan(&leaked); err != nil || leaked != 0 {
			t.Fatalf("rows holding the secret = %d, %v", leaked, err)
		}
		now = t0.Add(time.Second)
		short, _, _ := tk.Issue(ctx, "acme", "short", time.Minute)
		now = t0.Add(2 * time.Second)
		revoked, revRec, _ := tk.Issue(ctx, "acme", "revoked", time.Hour)
		foreign, _, _ := tk.Issue(ctx, "globex", "other tenant", time.Hour)
		if err := tk.Revoke(ctx, "acme", revRec.ID); err != nil {
			t.Fatal(err)
		}
		if err := tk.Revoke(ctx, "globex", revRec.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("revoking another tenant's token: %v, want not found", err)
		}
		forgedSecret := strings.TrimSuffix(valid, secret) + "forged"
		now = t0.Add(30 * time.Minute)
		for _, tc := range []struct {
			name, token string
			want        error
		}{
			{"valid", valid, nil},
			{"missing", "", governance.ErrTokenMissing},
			{"not a governance token", "prt_abc", governance.ErrTokenInvalid},
			{"forged id", "gov_aaaaaaaaaaaaaaaa_secret", governance.ErrTokenInvalid},
			{"real id, forged secret", forgedSecret, governance.ErrTokenInvalid},
			{"expired", short, governance.ErrTokenExpired},
			{"revoked", revoked, governance.ErrTokenInvalid},
			{"another tenant's", foreign, governance.ErrTokenInvalid},
		} {
			err := tk.CheckGovernanceToken(ctx, "acme", tc.token)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		if err := tk.CheckGovernanceToken(ctx, "acme", forgedSecret); strings.Contains(fmtErr(err), "revoked") || strings.Contains(fmtErr(err), "expired") {
			t.Errorf("a forged secret learns the token's state: %v", err)
		}
		list, err := tk.List(ctx, "acme")
		if err != nil || len(list) != 3 || list[0].Name != "architecture board" || list[2].RevokedAt == nil {
			t.Fatalf("List = %+v, %v", list, err)
		}
		if d := list[1].Describe(now); !strings.Contains(d, "expired") {
			t.Errorf("Describe(short) = %q", d)
		}
		for name, f := range map[string]func() error{
			"unknown tenant": func() error { _, _, err := tk.Issue(ctx, "nobody", "x", time.Hour); return err },
			"no name":        func() error { _, _, err := tk.Issue(ctx, "acme", "", time.Hour); return err },
			"no ttl":         func() error { _, _, err := tk.Issue(ctx, "acme", "x", 0); return err },
			"ttl too long":   func() error { _, _, err := tk.Issue(ctx, "acme", "x", 2*sqlmemory.MaxTokenTTL); return err },
		} {
			if err := f(); err == nil {
				t.Errorf("Issue with %s succeeded", name)
			}
		}
	})
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// An event's proof verifies only for its request, with a live token of its
// tenant.
func TestVerifyWrite(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := memtest.Ctx(t)
		memtest.Tenant(t, db, "acme")
		memtest.Tenant(t, db, "globex")
		now := t0
		tk := sqlmemory.NewTokens(db, func() time.Time { return now })
		tok, _, _ := tk.Issue(ctx, "acme", "board", time.Hour)
		foreign, _, _ := tk.Issue(ctx, "globex", "board", time.Hour)
		req := contracts.MemoryWriteRequested{TenantID: "acme", RequestID: "r1", ProjectID: contracts.GlobalProject,
			FromProjectID: "p1", Kind: contracts.MemoryDecision, Node: contracts.MemoryNode{Title: "All services log JSON"}}
		sign := func(m contracts.MemoryWriteRequested, token string) contracts.MemoryWriteRequested {
			if err := contracts.SignMemoryWrite(&m, token); err != nil {
				t.Fatal(err)
			}
			return m
		}
		good := sign(req, tok)
		if err := tk.VerifyWrite(ctx, good); err != nil {
			t.Fatalf("VerifyWrite(signed) = %v", err)
		}
		tampered := good
		tampered.Node.Title = "All services log XML"
		otherTenant := sign(req, foreign) // signed with globex's token, for acme
		forged := good
		forged.Governance = &contracts.MemoryGovernance{TokenID: good.Governance.TokenID, Proof: strings.Repeat("ab", 32)}
		for name, tc := range map[string]struct {
			m    contracts.MemoryWriteRequested
			want error
		}{
			"no governance":          {req, governance.ErrTokenMissing},
			"tampered content":       {tampered, governance.ErrTokenInvalid},
			"another tenant's token": {otherTenant, governance.ErrTokenInvalid},
			"forged proof":           {forged, governance.ErrTokenInvalid},
		} {
			if err := tk.VerifyWrite(ctx, tc.m); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", name, err, tc.want)
			}
		}
		now = t0.Add(2 * time.Hour)
		if err := tk.VerifyWrite(ctx, good); !errors.Is(err, governance.ErrTokenExpired) {
			t.Errorf("expired token: %v", err)
		}
	})
}

func pending(tenant, node string, next time.Time) write.Pending {
	return write.Pending{
		Request: write.Request{RequestID: "req-" + node, TenantID: tenant, ProjectID: "p1", Kind: graph.Decision, Title: "t " + node},
		NodeID:  node, CreatedAt: t0, Attempts: 1, NextAt: next, GovernanceOK: true, LastError: "graph down",
	}
}

func newQueue(t *testing.T, db store.DB, owner string, now *time.Time, onDone func(context.Context, store.Querier, write.Pending, write.Settlement) error) *sqlmemory.Queue {
	t.Helper()
	q, err := sqlmemory.NewQueue(sqlmemory.QueueConfig{DB: db, Owner: owner, Lease: time.Minute, OnDone: onDone,
		Now: func() time.Time { return *now }, Logger: memtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func nodeIDs(ps []write.Pending) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Request.TenantID+"/"+p.NodeID)
	}
	return strings.Join(out, ",")
}

// The queue keeps pending writes across processes: ordered by next attempt,
// replaced in place, held by one process at a time, taken over when a
// holder's lease ends or is released, and removed once with the settlement
// recorded in the same transaction.
func TestQueue(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := memtest.Ctx(t)
		now := t0
		var mu sync.Mutex
		var recorded []string
		onDone := func(ctx context.Context, tx store.Querier, p write.Pending, s write.Settlement) error {
			mu.Lock()
			defer mu.Unlock()
			recorded = append(recorded, p.NodeID+"="+string(s.Receipt.Status))
			return nil
		}
		a := newQueue(t, db, "proc-a", &now, onDone)
		for _, p := range []write.Pending{pending("acme", "n2", t0.Add(2*time.Second)), pending("acme", "n1", t0.Add(time.Second)),
			pending("globex", "n1", t0.Add(3*time.Second))} {
			if err := a.Put(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		got, err := a.List(ctx)
		if err != nil || nodeIDs(got) != "acme/n1,acme/n2,globex/n1" {
			t.Fatalf("List = %s, %v; want by next attempt, same node id in two tenants kept apart", nodeIDs(got), err)
		}
		if g := got[0]; !g.GovernanceOK || g.Attempts != 1 || g.LastError != "graph down" || !g.CreatedAt.Equal(t0) || g.Request.Title != "t n1" {
			t.Errorf("round trip = %+v", g)
		}
		// Replacing keeps one row.
		p := got[0]
		p.Attempts, p.NextAt = 2, t0.Add(10*time.Second)
		if err := a.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Attempts = 3
		if err := a.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.List(ctx); nodeIDs(got) != "acme/n2,globex/n1,acme/n1" || got[2].Attempts != 3 {
			t.Errorf("after replace: %s", nodeIDs(got))
		}
		// Another process sees nothing while a holds live leases...
		b := newQueue(t, db, "proc-b", &now, onDone)
		if got, _ := b.List(ctx); len(got) != 0 {
			t.Errorf("b listed %s while a's leases are live", nodeIDs(got))
		}
		// ...takes them over when a's lease ends (a died)...
		now = t0.Add(2 * time.Minute)
		if got, _ := b.List(ctx); len(got) != 3 {
			t.Fatalf("b after a's lease ended: %s", nodeIDs(got))
		}
		if got, _ := a.List(ctx); len(got) != 0 {
			t.Errorf("a still lists %s after b took over", nodeIDs(got))
		}
		// ...and releases them for a at once when it stops.
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.List(ctx); len(got) != 3 {
			t.Errorf("a after b released: %s", nodeIDs(got))
		}
		if n, _ := a.Count(ctx, "acme"); n != 2 {
			t.Errorf("Count(acme) = %d", n)
		}
		// Done removes the row and records once: a second Done of the same
		// write (another process that retried it too) records nothing.
		settled := write.Settlement{Receipt: write.Receipt{Status: write.Saved}}
		if err := a.Done(ctx, p, settled); err != nil {
			t.Fatal(err)
		}
		if err := b.Done(ctx, p, settled); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.List(ctx); nodeIDs(got) != "acme/n2,globex/n1" {
			t.Errorf("after Done: %s", nodeIDs(got))
		}
		if strings.Join(recorded, " ") != "n1=saved" {
			t.Errorf("recorded %v, want the one settlement", recorded)
		}
		// A retry that failed elsewhere meanwhile does not bring the settled
		// row back, nor take back a row another process holds.
		p.Attempts = 4
		if err := b.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
		n2 := got[0]
		for _, x := range got {
			if x.NodeID == "n2" {
				n2 = x
			}
		}
		n2.Attempts = 5
		if err := b.Put(ctx, n2); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.List(ctx); nodeIDs(got) != "acme/n2,globex/n1" || got[0].Attempts != 1 {
			t.Errorf("after stale retries from b: %s (attempts %d), want a's rows unchanged", nodeIDs(got), got[0].Attempts)
		}
		// A failing OnDone keeps the row: the settlement is not lost.
		failing := newQueue(t, db, "proc-a", &now, func(context.Context, store.Querier, write.Pending, write.Settlement) error {
			return errors.New("outbox full")
		})
		if err := failing.Done(ctx, pending("acme", "n2", t0), settled); err == nil {
			t.Error("Done with a failing OnDone succeeded")
		}
		if n, _ := a.Count(ctx, "acme"); n != 1 {
			t.Errorf("rows of acme after a failed Done = %d, want 1", n)
		}
	})
}

// Credentials never reach the table; rows it cannot read are skipped, not
// dropped.
func TestQueueRefusesAndSkips(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)
	ctx := memtest.Ctx(t)
	now := t0
	q := newQueue(t, db, "p", &now, nil)
	withToken := pending("acme", "n1", t0)
	withToken.Request.GovernanceToken = "gov_secret"
	if err := q.Put(ctx, withToken); err == nil {
		t.Error("Put kept a governance token")
	}
	if err := q.Put(ctx, pending("acme", "n2", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO memory_pending_writes (tenant_id, node_id, request_id, pending, attempts, next_at, created_at)
		VALUES ('acme', 'bad', 'r', '{not json', 1, $1, $1)`, t0); err != nil {
		t.Fatal(err)
	}
	got, err := q.List(ctx)
	if err != nil || nodeIDs(got) != "acme/n2" {
		t.Errorf("List = %s, %v; want the readable row only", nodeIDs(got), err)
	}
	if n, _ := q.Count(ctx, "acme"); n != 2 {
		t.Errorf("Count = %d, want the unreadable row kept", n)
	}
}

// A governance token's name is printed in memory token list: it is held
// to the rule of the store's tenant and token names.
func TestIssueRefusesControlCharactersInName(t *testing.T) {
	tokens := sqlmemory.NewTokens(nil, nil) // the name is checked before the store is asked
	for _, name := range []string{"Evil\x1b[2J\nacme  FAKE", "a\u202eb"} {
		_, _, err := tokens.Issue(context.Background(), "acme", name, time.Hour)
		if err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("Issue(name %q) = %v, want the name refused", name, err)
		}
	}
}
