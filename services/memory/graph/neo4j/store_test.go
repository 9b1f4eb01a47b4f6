package neo4j_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/memory/governance"
	"github.com/praetorhq/praetor/services/memory/graph"
	neo4jstore "github.com/praetorhq/praetor/services/memory/graph/neo4j"
	"github.com/praetorhq/praetor/services/memory/write"
)

func TestSchemaIsIdempotent(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for range 2 {
		if err := s.EnsureSchema(ctx); err != nil {
			t.Fatalf("EnsureSchema again: %v", err)
		}
	}
	res, err := neo4j.ExecuteQuery(ctx, s.Driver(), `SHOW INDEXES YIELD name, type, state RETURN name, type, state`, nil, neo4j.EagerResultTransformer)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Records {
		name, _ := r.Values[0].(string)
		typ, _ := r.Values[1].(string)
		state, _ := r.Values[2].(string)
		got[name] = typ + "/" + state
	}
	for name, want := range map[string]string{
		"decision_fulltext": "FULLTEXT/ONLINE", "pattern_fulltext": "FULLTEXT/ONLINE",
		"memory_id": "RANGE/ONLINE", "memory_content_key": "RANGE/ONLINE", "scope_uid": "RANGE/ONLINE",
		"memory_scope_created": "RANGE/ONLINE", "memory_area_kind": "RANGE/ONLINE", "memory_tenant": "RANGE/ONLINE",
	} {
		if got[name] != want {
			t.Errorf("index %s = %q, want %s", name, got[name], want)
		}
	}
	res, err = neo4j.ExecuteQuery(ctx, s.Driver(), `SHOW CONSTRAINTS YIELD name, type RETURN name, type`, nil, neo4j.EagerResultTransformer)
	if err != nil {
		t.Fatal(err)
	}
	var constraints []string
	for _, r := range res.Records {
		name, _ := r.Values[0].(string)
		typ, _ := r.Values[1].(string)
		constraints = append(constraints, name+"/"+typ)
	}
	for _, want := range []string{"memory_id/UNIQUENESS", "memory_content_key/UNIQUENESS", "scope_uid/UNIQUENESS"} {
		if !slices.Contains(constraints, want) {
			t.Errorf("constraints %v lack %s", constraints, want)
		}
	}
}

// TestReadTransactionsCannotWrite shows why hygiene and retrieval run in
// ExecuteRead: the server itself refuses a write in a read transaction.
func TestReadTransactionsCannotWrite(t *testing.T) {
	s := openStore(t)
	tenant := testenv.Neo4jTenant(t)
	ctx := context.Background()
	sess := s.Driver().NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeRead})
	defer sess.Close(ctx)
	_, err := sess.ExecuteRead(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		res, err := tx.Run(ctx, `CREATE (:Memory {tenant_id: $t, id: $t})`, map[string]any{"t": tenant})
		if err != nil {
			return nil, err
		}
		return res.Consume(ctx)
	})
	var dbErr *neo4j.Neo4jError
	if !errors.As(err, &dbErr) || dbErr.Code != "Neo.ClientError.Statement.AccessMode" {
		t.Fatalf("CREATE in a read transaction: err = %v, want Neo.ClientError.Statement.AccessMode", err)
	}
	if st := s.Stats(); st.ReadUpdates != 0 {
		t.Errorf("read transactions reported %d updates", st.ReadUpdates)
	}
}

func TestOpenUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = neo4jstore.Open(ctx, neo4jstore.Config{URI: "bolt://" + addr, MaxTransactionRetryTime: time.Second})
	if !errors.Is(err, graph.ErrUnavailable) {
		t.Errorf("Open on a dead port: err = %v, want ErrUnavailable", err)
	}
	if _, err := neo4jstore.Open(ctx, neo4jstore.Config{}); err == nil || !strings.Contains(err.Error(), "URI is required") {
		t.Errorf("Open without URI: err = %v", err)
	}
}

// TestWritePendingWhileNeo4jIsDown cuts the connection to a real Neo4j: a
// write returns pending_retry at once, and is saved once Neo4j is back.
// Every wait is bounded by the test's context: a store or engine broken so
// that the write never settles fails the test at its deadline, with a
// message, rather than holding it until the package's timeout.
func TestWritePendingWhileNeo4jIsDown(t *testing.T) {
	uri, user, password := testenv.Neo4j(t)
	tenant := testenv.Neo4jTenant(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	// Cleanups run after ctx may have expired: they get their own bound.
	stopCtx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		return c
	}
	p := testenv.NewProxy(t, strings.TrimPrefix(strings.TrimPrefix(uri, "bolt://"), "neo4j://"))
	s, err := neo4jstore.Open(ctx, neo4jstore.Config{URI: "bolt://" + p.Addr(), User: user, Password: password,
		MaxTransactionRetryTime: 500 * time.Millisecond, ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(stopCtx()); err != nil {
			t.Errorf("close the store: %v", err)
		}
	})
	if err := s.EnsureProject(ctx, tenant, "p1"); err != nil {
		t.Fatal(err)
	}
	// The send never blocks the retry loop: an engine broken so that it
	// settles the write again would otherwise hold its Stop forever.
	settled := make(chan write.Settlement, 1)
	var again atomic.Int32
	e, err := write.New(write.Config{Store: s, Tokens: governance.NewTokens(nil),
		// Longer than the driver's retries (MaxTransactionRetryTime): the
		// store's own answer, not this deadline, makes the write pending.
		WriteTimeout: 10 * time.Second, RetryBackoff: 50 * time.Millisecond, RetryMaxBackoff: 200 * time.Millisecond,
		OnSettled: func(st write.Settlement) {
			select {
			case settled <- st:
			default:
				again.Add(1)
			}
		},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(stopCtx()); err != nil {
			t.Errorf("stop the write engine: %v", err)
		}
	})

	p.SetDown(true)
	req := write.Request{TenantID: tenant, ProjectID: "p1", Kind: graph.Decision,
		Title: "Decided while Neo4j was away", Rationale: `escapes: "q" && (p) \ ~`}
	rc, err := e.Save(ctx, req)
	if err != nil || rc.Status != write.PendingRetry || !strings.Contains(rc.Detail, graph.ErrUnavailable.Error()) {
		t.Fatalf("Save while Neo4j is down: %+v, %v; want pending_retry, the graph unavailable", rc, err)
	}
	if p, _ := e.PendingWrites(ctx); len(p) != 1 {
		t.Fatalf("pending writes = %d, want 1", len(p))
	}
	p.SetDown(false)
	var st write.Settlement
	select {
	case st = <-settled:
	case <-ctx.Done():
		pending, _ := e.PendingWrites(context.Background())
		t.Fatalf("the pending write did not settle once Neo4j came back, before the test's deadline (%v); pending: %+v", ctx.Err(), pending)
	}
	if st.Receipt.Status != write.Saved || st.Receipt.NodeID != rc.NodeID || st.Attempts < 2 {
		t.Fatalf("settlement = %+v after %d attempts, want saved as %s", st.Receipt, st.Attempts, rc.NodeID)
	}
	var n graph.Node
	err = s.Read(ctx, tenant, func(ctx context.Context, tx graph.ReadTx) error {
		var err error
		n, err = tx.Node(ctx, rc.NodeID)
		return err
	})
	if err != nil || n.Title != req.Title {
		t.Errorf("saved node = %+v, %v", n, err)
	}
	if n := again.Load(); n > 0 {
		t.Errorf("the write settled %d more times", n)
	}
}
