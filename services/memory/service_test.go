package memory_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store/testdb"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/memory/graph"
	neo4jstore "github.com/praetorhq/praetor/services/memory/graph/neo4j"
	"github.com/praetorhq/praetor/services/memory/internal/memtest"
	"github.com/praetorhq/praetor/services/memory/sqlmemory"
	"github.com/praetorhq/praetor/services/memory/write"
)

func TestMain(m *testing.M) {
	// The Neo4j driver keeps a pool goroutine per store until it closes,
	// and closes it asynchronously.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/neo4j/neo4j-go-driver/v5/neo4j/internal/pool.(*Pool).Close"))
}

// rig is a node's worth of plumbing: a bus, a relay, and a collector of
// memory.written events.
type rig struct {
	srv   *events.Server
	bus   *events.Bus
	db    store.DB
	relay *delivery.Relay

	mu      sync.Mutex
	written map[string][]contracts.MemoryWritten // by request id, in arrival order
}

func newRig(t *testing.T, db store.DB) *rig {
	t.Helper()
	r := &rig{srv: memtest.NATS(t), db: db, written: map[string][]contracts.MemoryWritten{}}
	r.bus = memtest.Bus(t, r.srv)
	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: db, Publisher: r.bus, Logger: memtest.Logger(t), Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Stop(context.Background()) })
	r.relay = relay
	watcher := memtest.Bus(t, r.srv)
	_, err = watcher.Subscribe(memtest.Ctx(t), events.ConsumerConfig{Stream: contracts.StreamMemory, Name: "test-written", Keyed: true,
		Subjects: []string{contracts.MemoryWrittenSpec.FilterSubject()}}, func(_ context.Context, ev event.Event) error {
		w, err := contracts.DecodeAs[contracts.MemoryWritten](ev)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.written[w.RequestID] = append(r.written[w.RequestID], *w)
		r.mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// service starts a memory service on m.
func (r *rig) service(t *testing.T, m *memory.Memory, mux *http.ServeMux) *memory.Service {
	t.Helper()
	s, err := memory.NewService(memory.ServiceConfig{Memory: m, Bus: r.bus, DB: r.db, Relay: r.relay, Mux: mux,
		AckWait: 2 * time.Second, Logger: memtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(memtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func (r *rig) memory(t *testing.T, g graph.Store, mod func(*memory.Config)) *memory.Memory {
	t.Helper()
	return memtest.Memory(t, g, r.db, func(c *memory.Config) {
		c.Encoder, c.Relay = r.bus, r.relay
		// A write waits for the graph as long as a loaded machine may take
		// (the default, 3 s, is what a service answering users waits): a
		// test of what a write does is not one of its timeout, which those
		// that tune it test.
		c.Write.WriteTimeout = 30 * time.Second
		if mod != nil {
			mod(c)
		}
	})
}

func (r *rig) request(t *testing.T, m contracts.MemoryWriteRequested) {
	t.Helper()
	if err := r.bus.Publish(memtest.Ctx(t), contracts.MustEvent(contracts.Meta{}, m)); err != nil {
		t.Fatal(err)
	}
}

// answers waits until request id has n memory.written answers and returns them.
func (r *rig) answers(t *testing.T, id string, n int) []contracts.MemoryWritten {
	t.Helper()
	var got []contracts.MemoryWritten
	memtest.WaitFor(t, "memory.written for "+id, 30*time.Second, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		got = append([]contracts.MemoryWritten(nil), r.written[id]...)
		return len(got) >= n
	})
	return got
}

func (r *rig) answer(t *testing.T, id string) contracts.MemoryWritten { return r.answers(t, id, 1)[0] }

func write1(tenant, id, project, title string) contracts.MemoryWriteRequested {
	return contracts.MemoryWriteRequested{TenantID: tenant, RequestID: id, ProjectID: project, Kind: contracts.MemoryDecision,
		Node: contracts.MemoryNode{Title: title, Rationale: "because " + title}}
}

func global(t *testing.T, tenant, id, from, title, token string) contracts.MemoryWriteRequested {
	t.Helper()
	m := write1(tenant, id, contracts.GlobalProject, title)
	m.FromProjectID = from
	if token != "" {
		if err := contracts.SignMemoryWrite(&m, token); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// Every write request is answered with memory.written: the write status,
// the dedup outcome and the node; bad input is answered failed with the
// rule it breaks, and a broken contract is dead-lettered.
func TestServiceAnswersWrites(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := memtest.Ctx(t)
		r := newRig(t, db)
		g := memtest.Embedded(t)
		m := r.memory(t, g, nil)
		r.service(t, m, nil)
		memtest.Tenant(t, db, "acme")
		memtest.Project(t, g, "acme", "shop")
		token, _, err := m.Tokens.Issue(ctx, "acme", "board", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		past := sqlmemory.NewTokens(db, func() time.Time { return time.Now().Add(-3 * time.Hour) })
		expired, _, err := past.Issue(ctx, "acme", "expired", time.Hour)
		if err != nil {
			t.Fatal(err)
		}

		lucene := `C++ && (Go || "Rust") ~2 [a TO b] \ / ! ^ ? * : OR NOT`
		tampered := global(t, "acme", "g-tampered", "shop", "Tampered after signing", token)
		tampered.Node.Title = "Something else entirely"
		requests := []contracts.MemoryWriteRequested{
			write1("acme", "r-new", "shop", "Use PostgreSQL for orders"),
			write1("acme", "r-unknown", "ghost", "Decision for a project memory does not know"),
			write1("acme", "r-long", "shop", strings.Repeat("long ", 60)),
			write1("acme", "r-lucene", "shop", lucene),
			global(t, "acme", "g-ok", "shop", "All services log JSON", token),
			global(t, "acme", "g-unsigned", "shop", "Unsigned global decision", ""),
			global(t, "acme", "g-expired", "shop", "Global decision with an expired token", expired),
			global(t, "acme", "g-no-origin", "", "Global decision from nowhere", token),
			tampered,
		}
		for _, req := range requests {
			r.request(t, req)
		}
		first := r.answer(t, "r-new")
		r.request(t, write1("acme", "r-dup", "shop", "Use PostgreSQL for orders"))
		tests := []struct {
			id, status, outcome, scope, detail string
		}{
			{"r-new", "saved", "new", "p/shop", ""},
			{"r-dup", "saved", "duplicate_skip", "p/shop", "already saved as " + first.NodeID},
			{"r-unknown", "blocked_scope", "", "", "uncertain"},
			{"r-long", "failed", "", "", "title: is 300 characters; the limit is 256"},
			{"r-lucene", "saved", "new", "p/shop", ""},
			{"g-ok", "saved", "new", "g", ""},
			{"g-unsigned", "failed", "", "g", "governance token missing"},
			{"g-expired", "failed", "", "g", "governance token expired"},
			{"g-no-origin", "blocked_scope", "", "", "from_project_id"},
			{"g-tampered", "failed", "", "g", "the proof does not match"},
		}
		for _, tt := range tests {
			got := r.answer(t, tt.id)
			if got.Status != tt.status || got.Outcome != tt.outcome || got.Scope != tt.scope || !strings.Contains(got.Detail, tt.detail) ||
				(got.NodeID == "") != (tt.status != "saved") {
				t.Errorf("%s: %+v, want status %s outcome %q scope %q detail containing %q", tt.id, got, tt.status, tt.outcome, tt.scope, tt.detail)
			}
			wantProject := "shop"
			if strings.HasPrefix(tt.id, "g-") {
				wantProject = contracts.GlobalProject
			} else if tt.id == "r-unknown" {
				wantProject = "ghost"
			}
			if got.ProjectID != wantProject || got.TenantID != "acme" {
				t.Errorf("%s: answered on %s/%s, want acme/%s", tt.id, got.TenantID, got.ProjectID, wantProject)
			}
		}
		if dup := r.answer(t, "r-dup"); dup.NodeID != first.NodeID {
			t.Errorf("duplicate answered node %s, want %s", dup.NodeID, first.NodeID)
		}
		b, err := m.Retrieval.Retrieve(ctx, "acme", "shop", "")
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, n := range b.Nodes {
			titles = append(titles, string(n.Scope.Level)+":"+n.Title)
		}
		if got, want := strings.Join(titles, "|"), "project:"+lucene+"|project:Use PostgreSQL for orders|global:All services log JSON"; got != want {
			t.Errorf("memory holds %s, want %s", got, want)
		}

		// A contract violation goes to the dead-letter stream, unanswered.
		bad := contracts.MustEvent(contracts.Meta{}, write1("acme", "r-bad", "shop", "x"))
		bad.SetData(event.ApplicationJSON, map[string]any{"tenant_id": "acme", "request_id": "r-bad", "project_id": "shop",
			"kind": "decision", "node": map[string]any{"title": "x"}, "governance": map[string]any{"token_id": "abcdefghijklmnop", "proof": strings.Repeat("0", 64)}})
		if err := r.bus.Publish(ctx, bad); err != nil {
			t.Fatal(err)
		}
		memtest.WaitFor(t, "dead letter of the bad request", 30*time.Second, func() bool {
			for _, dl := range eventstest.DeadLetters(t, r.bus, contracts.StreamMemory, memory.Consumer) {
				if strings.Contains(dl.Reason, "governance is only for") {
					return true
				}
			}
			return false
		})
	})
}

// A revert through the service, on both graphs: decision A is superseded
// by B, then A is requested again. A is reinstated (answered supersede, with
// A's node and B as the match) and retrieval returns A, not B; requested a
// third time, A is a duplicate of itself.
func TestServiceRevert(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (graph.Store, string)
	}{
		{"embedded", func(t *testing.T) (graph.Store, string) { return memtest.Embedded(t), "acme" }},
		{"neo4j", func(t *testing.T) (graph.Store, string) {
			uri, user, password := testenv.Neo4j(t)
			g, err := neo4jstore.Open(memtest.Ctx(t), neo4jstore.Config{URI: uri, User: user, Password: password, Logger: memtest.Logger(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = g.Close(context.Background()) })
			return g, testenv.Neo4jTenant(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.SQLite(t)
			g, tenant := tc.open(t)
			r := newRig(t, db)
			m := r.memory(t, g, nil)
			svc := r.service(t, m, nil)
			memtest.Tenant(t, db, tenant)
			memtest.Project(t, g, tenant, "shop")
			// Each request waits for the answer before it: the order is the test.
			save := func(id, title string) contracts.MemoryWritten {
				t.Helper()
				r.request(t, write1(tenant, id, "shop", title))
				return r.answer(t, id)
			}
			const titleA, titleB = "Cache user sessions in Redis", "Cache user sessions in Redis with a TTL"
			a := save("r-a", titleA)
			if a.Status != "saved" || a.Outcome != "new" {
				t.Fatalf("A: %+v, want saved/new", a)
			}
			b := save("r-b", titleB)
			if b.Status != "saved" || b.Outcome != "supersede" || b.MatchID != a.NodeID {
				t.Fatalf("B: %+v, want saved/supersede of %s", b, a.NodeID)
			}
			back := save("r-a-again", titleA)
			if back.Status != "saved" || back.Outcome != "supersede" || back.NodeID != a.NodeID || back.MatchID != b.NodeID ||
				!strings.Contains(back.Detail, "reinstated") {
				t.Errorf("A again: %+v, want saved/supersede as %s (reinstated) of %s", back, a.NodeID, b.NodeID)
			}
			bundle, err := m.Retrieval.Retrieve(memtest.Ctx(t), tenant, "shop", "")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range bundle.Nodes {
				got = append(got, n.ID+" "+n.Title)
			}
			if want := []string{a.NodeID + " " + titleA}; !slices.Equal(got, want) {
				t.Errorf("retrieval after the revert = %q, want %q (B superseded)", got, want)
			}
			third := save("r-a-third", titleA)
			if third.Status != "saved" || third.Outcome != "duplicate_skip" || third.NodeID != a.NodeID {
				t.Errorf("A a third time: %+v, want saved/duplicate_skip of %s", third, a.NodeID)
			}

			// A request made again (its event redelivered after a crash,
			// once the graph had committed) is not a revert: it leaves the
			// write that superseded its node in place.
			c := save("r-c", "Deploy the API on Kubernetes")
			d := save("r-d", "Deploy the API on Kubernetes with autoscaling")
			if d.Outcome != "supersede" || d.MatchID != c.NodeID {
				t.Fatalf("D: %+v, want a supersede of %s", d, c.NodeID)
			}
			redelivered, err := m.Writes.Save(memtest.Ctx(t), svc.WriteRequest(write1(tenant, "r-c", "shop", "Deploy the API on Kubernetes")))
			if err != nil || redelivered.Outcome != "duplicate_skip" || redelivered.NodeID != c.NodeID {
				t.Errorf("C's request again: %+v, %v; want duplicate_skip of its own node %s, D left current", redelivered, err, c.NodeID)
			}
			// A request id used again for other content is another write.
			reused, err := m.Writes.Save(memtest.Ctx(t), svc.WriteRequest(write1(tenant, "r-c", "shop", "Keep audit logs for seven years")))
			if err != nil || reused.Status != "saved" || reused.Outcome != "new" || reused.NodeID == c.NodeID {
				t.Errorf("r-c used again for other content: %+v, %v; want a new node of its own", reused, err)
			}
		})
	}
}

// Neo4j unavailable: the write is answered pending_retry at once and kept in
// the relational queue; the service restarts while Neo4j is still down, and
// once Neo4j is back the new service saves it and answers saved. A second
// round kills the first service (no graceful stop): its lease runs out and
// the new one takes the writes over.
func TestServicePendingAcrossRestart(t *testing.T) {
	t.Parallel()
	uri, user, password := testenv.Neo4j(t)
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	testdb.ForEach(t, func(t *testing.T, db store.DB) {
		ctx := memtest.Ctx(t)
		tenant := testenv.Neo4jTenant(t)
		proxy := testenv.NewProxy(t, u.Host)
		openNeo4j := func() *neo4jstore.Store {
			s, err := neo4jstore.Open(ctx, neo4jstore.Config{URI: "bolt://" + proxy.Addr(), User: user, Password: password,
				MaxTransactionRetryTime: 200 * time.Millisecond, ConnectTimeout: 500 * time.Millisecond, Logger: memtest.Logger(t)})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		r := newRig(t, db)
		memtest.Tenant(t, db, tenant)
		tune := func(lease time.Duration) func(*memory.Config) {
			return func(c *memory.Config) {
				c.QueueLease = lease
				c.Write = write.Config{WriteTimeout: time.Second, RetryBackoff: 50 * time.Millisecond,
					RetryMaxBackoff: 200 * time.Millisecond, PollInterval: 200 * time.Millisecond}
			}
		}

		for round, crash := range []bool{false, true} {
			g1 := openNeo4j()
			m1 := r.memory(t, g1, tune(2*time.Second))
			s1 := r.service(t, m1, nil)
			project := "shop" + string(rune('a'+round))
			memtest.Project(t, g1, tenant, project)
			token, _, err := m1.Tokens.Issue(ctx, tenant, "board", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			proxy.SetDown(true)
			pid, gid := project+"-write", project+"-global"
			titles := [][2]string{{"Invoices are immutable once sent", "All services log JSON to stdout"},
				{"Search results are cached for a minute", "Every public API is versioned in its path"}}[round]
			r.request(t, write1(tenant, pid, project, titles[0]))
			r.request(t, global(t, tenant, gid, project, titles[1], token))
			p, gl := r.answer(t, pid), r.answer(t, gid)
			if p.Status != "pending_retry" || p.NodeID == "" || gl.Status != "pending_retry" || gl.NodeID == "" {
				t.Fatalf("round %d: answers while down: %+v %+v, want pending_retry with the future node ids", round, p, gl)
			}
			if n, _ := m1.Queue.Count(ctx, tenant); n != 2 {
				t.Fatalf("round %d: %d writes queued, want 2", round, n)
			}
			if crash {
				// Killed: the retry loop ends, nothing is released or closed.
				if err := m1.Writes.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			} else if err := s1.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if n, _ := m1.Queue.Count(ctx, tenant); n != 2 {
				t.Fatalf("round %d: %d writes queued after the service stopped, want 2", round, n)
			}
			_ = g1.Close(ctx)

			// The new service starts while Neo4j is still down: it must
			// open the graph, so let the proxy through for that, then cut
			// it again for a few retries.
			proxy.SetDown(false)
			g2 := openNeo4j()
			proxy.SetDown(true)
			m2 := r.memory(t, g2, tune(2*time.Second))
			s2 := r.service(t, m2, nil)
			memtest.WaitFor(t, "retries while down", 30*time.Second, func() bool {
				ps, _ := m2.Writes.PendingWrites(ctx)
				for _, x := range ps {
					if x.Attempts >= 2 {
						return true
					}
				}
				return false
			})
			proxy.SetDown(false)
			for _, a := range []contracts.MemoryWritten{p, gl} {
				final := r.answers(t, a.RequestID, 2)[1]
				if final.Status != "saved" || final.NodeID != a.NodeID || final.ProjectID != a.ProjectID {
					t.Errorf("round %d: settlement of %s = %+v, want saved as %s", round, a.RequestID, final, a.NodeID)
				}
			}
			if n, _ := m2.Queue.Count(ctx, tenant); n != 0 {
				t.Errorf("round %d: %d writes still queued", round, n)
			}
			b, err := m2.Retrieval.Retrieve(ctx, tenant, project, "")
			if err != nil {
				t.Fatal(err)
			}
			found := map[string]bool{}
			for _, n := range b.Nodes {
				found[n.ID] = true
			}
			if !found[p.NodeID] || !found[gl.NodeID] {
				t.Errorf("round %d: graph holds %+v, want %s and %s", round, b.Nodes, p.NodeID, gl.NodeID)
			}
			// Leave the next round to its own services.
			for _, s := range []*memory.Service{s1, s2} {
				if err := s.Stop(ctx); err != nil {
					t.Error(err)
				}
			}
		}
	})
}

// The node factory: the embedded graph under the data directory in dev,
// the MCP endpoint on the node's mux (open to loopback as the dev tenant),
// and a clear error naming NEO4J_URI in serve without it.
func TestServiceFactory(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)
	r := newRig(t, db)
	memtest.Tenant(t, db, "local")
	dir := t.TempDir()
	mux := http.NewServeMux()
	d := node.Deps{Bus: r.bus, DB: db, Relay: r.relay, Logger: memtest.Logger(t), Registerer: prometheus.NewRegistry(),
		Mux: mux, Dev: true, DataDir: dir, DevTenant: "local", AckWait: 2 * time.Second}
	noEnv := func(string) (string, bool) { return "", false }
	svc, err := memory.ServiceFactory(noEnv)(memtest.Ctx(t), d)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(memtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	m := svc.(*memory.Service).Memory()
	memtest.Project(t, m.Graph, "local", "shop")

	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(memtest.Ctx(t),
		&mcp.StreamableClientTransport{Endpoint: ts.URL + memory.MCPPath, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(memtest.Ctx(t), &mcp.CallToolParams{Name: "save_decision",
		Arguments: map[string]any{"project_id": "shop", "title": "Saved over MCP"}})
	if err != nil || res.IsError {
		t.Fatalf("save over MCP: %v %+v", err, res)
	}
	r.request(t, write1("local", "ev-1", "shop", "Saved by event"))
	if got := r.answer(t, "ev-1"); got.Status != "saved" {
		t.Fatalf("event write = %+v", got)
	}
	lines, err := m.Background().Background(memtest.Ctx(t), "local", "shop")
	if err != nil || len(lines) != 3 || !strings.Contains(lines[0], "Saved by event") || !strings.Contains(lines[1], "Saved over MCP") ||
		!strings.Contains(lines[2], "hygiene is due") {
		t.Errorf("background lines = %q, %v", lines, err)
	}
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// Serve without NEO4J_URI.
	serve := d
	serve.Dev, serve.Mux = false, http.NewServeMux()
	_, err = memory.ServiceFactory(noEnv)(memtest.Ctx(t), serve)
	var se *memory.SettingError
	if !errors.As(err, &se) || se.Variable != "NEO4J_URI" || !strings.Contains(err.Error(), "NEO4J_URI") {
		t.Errorf("serve without NEO4J_URI: %v, want a setting error naming it", err)
	}
}
