package neo4j

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/governance"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/hygiene"
	"github.com/praetorhq/praetor/services/memory/retrieval"
	"github.com/praetorhq/praetor/services/memory/write"
)

// The benchmark fixture: one tenant with a project of ten focus areas
// holding 100,000 memory nodes (50,000 in the project scope, 5,000 in each
// focus area) and 1,000 global nodes. It is loaded once per server (the
// tenant name is fixed, and a complete fixture is reused) with UNWIND
// batches, bypassing dedup.
const (
	benchTenant   = "bench-100k"
	benchProject  = "bench"
	benchFocusN   = 10
	benchPerFocus = 5000
	benchProjectN = 50000
	benchGlobalN  = 1000
	benchBatch    = 5000
)

var benchVocab = strings.Fields(`
	api gateway service cache redis postgres kafka queue topic event stream ledger billing invoice payment
	customer account tenant project team deploy release rollout canary feature flag config secret vault
	token auth oauth session login password hash encrypt backup restore replica primary index query
	search report metric trace log alert incident oncall latency throughput limit quota retry timeout
	backoff circuit breaker schema migration version contract grpc rest graphql webhook batch job cron
	worker pool thread memory cpu disk network dns tls certificate proxy load balancer cluster node pod
	namespace helm terraform module region zone storage bucket object file upload image video cdn edge
	browser mobile frontend backend admin console dashboard analytics warehouse pipeline etl model
	feature store embedding vector prompt review test coverage lint format build artifact registry
	image container docker kubernetes operator policy audit compliance gdpr pii retention archive
	export import sync replication failover consistency transaction lock idempotent outbox inbox
	saga workflow state machine scheduler notification email sms push template locale currency tax
	price discount plan subscription trial usage meter quota fraud risk score rule engine`)

type benchFixture struct {
	store *Store
	// live are the ids of live decisions of the project scope.
	live []string
}

var fixture struct {
	once sync.Once
	f    *benchFixture
	err  error
}

func benchStore(b *testing.B) *benchFixture {
	b.Helper()
	uri, user, password := testenv.Neo4j(b)
	fixture.once.Do(func() {
		ctx := context.Background()
		s, err := Open(ctx, Config{URI: uri, User: user, Password: password})
		if err != nil {
			fixture.err = err
			return
		}
		fixture.f, fixture.err = loadFixture(ctx, b, s)
	})
	if fixture.err != nil {
		b.Fatalf("benchmark fixture: %v", fixture.err)
	}
	return fixture.f
}

func benchWords(r *rand.Rand, z *rand.Zipf, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = benchVocab[z.Uint64()]
	}
	return strings.Join(w, " ")
}

func loadFixture(ctx context.Context, b *testing.B, s *Store) (*benchFixture, error) {
	want := int64(benchProjectN + benchFocusN*benchPerFocus + benchGlobalN)
	count := func() (int64, error) {
		res, err := neo4j.ExecuteQuery(ctx, s.driver, `MATCH (n:Memory) WHERE n.tenant_id = $t AND n.fixture RETURN count(n) AS c`,
			map[string]any{"t": benchTenant}, neo4j.EagerResultTransformer)
		if err != nil {
			return 0, err
		}
		c, _ := res.Records[0].Get("c")
		return c.(int64), nil
	}
	have, err := count()
	if err != nil {
		return nil, err
	}
	f := &benchFixture{store: s}
	if have != want {
		if err := testenv.DeleteNeo4jTenant(ctx, s.cfg.URI, s.cfg.User, s.cfg.Password, benchTenant); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := load(ctx, s); err != nil {
			return nil, err
		}
		b.Logf("loaded %d memory nodes in %s", want, time.Since(start).Round(time.Millisecond))
	}
	res, err := neo4j.ExecuteQuery(ctx, s.driver, `MATCH (n:Decision) WHERE n.scope_uid = $s AND n.created_at IS NOT NULL
		AND n.superseded_by IS NULL RETURN n.id AS id LIMIT 5000`,
		map[string]any{"s": scopeUID(benchTenant, graph.ProjectScope(benchProject))}, neo4j.EagerResultTransformer)
	if err != nil {
		return nil, err
	}
	for _, r := range res.Records {
		id, _ := r.Get("id")
		f.live = append(f.live, id.(string))
	}
	return f, nil
}

// load writes the fixture: nodes by UNWIND batches per kind, then
// supersession chains, conflicts and hygiene marks.
func load(ctx context.Context, s *Store) error {
	if err := s.EnsureProject(ctx, benchTenant, benchProject); err != nil {
		return err
	}
	scopes := []graph.Scope{graph.ProjectScope(benchProject)}
	counts := []int{benchProjectN}
	for i := range benchFocusN {
		f := fmt.Sprintf("focus-%d", i)
		if err := s.EnsureFocusArea(ctx, benchTenant, benchProject, f); err != nil {
			return err
		}
		scopes = append(scopes, graph.FocusScope(benchProject, f))
		counts = append(counts, benchPerFocus)
	}
	scopes = append(scopes, graph.GlobalScope())
	counts = append(counts, benchGlobalN)
	// The global scope node comes with its first write.
	if err := s.Write(ctx, benchTenant, graph.GlobalScope(), func(context.Context, graph.WriteTx) error { return nil }); err != nil {
		return err
	}

	r := rand.New(rand.NewSource(42))
	z := rand.NewZipf(r, 1.1, 4, uint64(len(benchVocab)-1))
	now := time.Now().UTC()
	batches := map[graph.Kind][]map[string]any{}
	flush := func(kind graph.Kind) error {
		rows := batches[kind]
		if len(rows) == 0 {
			return nil
		}
		batches[kind] = nil
		_, err := neo4j.ExecuteQuery(ctx, s.driver, `UNWIND $rows AS r CREATE (n:`+kindLabels[kind]+`) SET n = r`,
			map[string]any{"rows": rows}, neo4j.EagerResultTransformer)
		return err
	}
	var decisions [][]string // per scope, for supersession and conflicts
	for si, sc := range scopes {
		uid := scopeUID(benchTenant, sc)
		var ids []string
		for i := range counts[si] {
			kind := graph.Decision
			switch x := r.Intn(10); {
			case x >= 9:
				kind = graph.EntityFact
			case x >= 7:
				kind = graph.Pattern
			}
			title := benchWords(r, z, 4+r.Intn(6)) + fmt.Sprintf(" %d", i)
			rationale := benchWords(r, z, 10+r.Intn(16))
			entity := ""
			if kind == graph.EntityFact {
				entity = benchVocab[r.Intn(len(benchVocab))] + " " + benchVocab[r.Intn(len(benchVocab))]
			}
			id := uuid.NewString()
			hash := dedup.ContentHash(kind, entity, title, rationale)
			created := now.Add(-time.Duration(r.Int63n(int64(2 * 365 * 24 * time.Hour))))
			row := map[string]any{
				"id": id, "tenant_id": benchTenant, "kind": string(kind), "level": string(sc.Level),
				"project_id": sc.ProjectID, "focus": sc.Focus, "scope_uid": uid, "area_uid": areaUID(benchTenant, sc.Area()),
				"title": title, "rationale": rationale, "content_hash": hash, "content_key": contentKey(uid, kind, hash),
				"status": "saved", "created_at": created, "fixture": true,
			}
			if r.Intn(200) == 0 {
				row["status"] = string(graph.StatusPendingRetry)
			}
			switch kind {
			case graph.Decision:
				row["ft_scope"] = ftScope(uid)
				ids = append(ids, id)
			case graph.Pattern:
				row["ft_scope"] = ftScope(uid)
				row["last_validated_at"] = created.Add(time.Duration(r.Int63n(int64(now.Sub(created)) + 1)))
			case graph.EntityFact:
				row["entity_name"] = entity
				row["entity_key"] = graph.NormalizeEntity(entity)
			}
			batches[kind] = append(batches[kind], row)
			if len(batches[kind]) == benchBatch {
				if err := flush(kind); err != nil {
					return err
				}
			}
		}
		decisions = append(decisions, ids)
	}
	for _, k := range graph.Kinds {
		if err := flush(k); err != nil {
			return err
		}
	}
	// About 5% of each scope's decisions superseded by another, 0.2% in
	// conflict.
	var sup, conf []map[string]any
	for _, ids := range decisions {
		for i := 0; i+1 < len(ids); i += 2 {
			switch x := r.Intn(1000); {
			case x < 100:
				sup = append(sup, map[string]any{"new": ids[i+1], "old": ids[i]})
			case x < 104:
				conf = append(conf, map[string]any{"a": ids[i], "b": ids[i+1]})
			}
		}
	}
	for len(sup) > 0 {
		n := min(len(sup), benchBatch)
		if _, err := neo4j.ExecuteQuery(ctx, s.driver, `UNWIND $rows AS r
			MATCH (new:Memory {id: r.new}) MATCH (old:Memory {id: r.old})
			SET old.superseded_by = new.id REMOVE old.ft_scope
			CREATE (new)-[:SUPERSEDES {tenant_id: $t, created_at: datetime()}]->(old)`,
			map[string]any{"rows": sup[:n], "t": benchTenant}, neo4j.EagerResultTransformer); err != nil {
			return err
		}
		sup = sup[n:]
	}
	_, err := neo4j.ExecuteQuery(ctx, s.driver, `UNWIND $rows AS r
		MATCH (a:Memory {id: r.a}) MATCH (b:Memory {id: r.b})
		CREATE (a)-[:CONFLICTS_WITH {tenant_id: $t, created_at: datetime()}]->(b)`,
		map[string]any{"rows": conf, "t": benchTenant}, neo4j.EagerResultTransformer)
	if err != nil {
		return err
	}
	_, err = neo4j.ExecuteQuery(ctx, s.driver, `CALL db.awaitIndexes(600)`, nil, neo4j.EagerResultTransformer)
	return err
}

// percentiles reports p50, p95 and p99 of the samples, in milliseconds.
func percentiles(b *testing.B, samples []time.Duration) {
	b.Helper()
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(p float64) float64 {
		i := int(p*float64(len(samples))+0.5) - 1
		return float64(samples[max(0, min(i, len(samples)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the percentiles say more than the mean
}

var quiet = slog.New(slog.DiscardHandler)

// BenchmarkRetrieval builds the context bundle of a focus area: up to 10
// focus, 10 project and 5 global nodes out of 101,000, with the
// supersession filter, the conflict check and the hygiene flag.
func BenchmarkRetrieval(b *testing.B) {
	f := benchStore(b)
	e, err := retrieval.New(retrieval.Config{Store: f.store, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		bundle, err := e.Retrieve(ctx, benchTenant, benchProject, fmt.Sprintf("focus-%d", i%benchFocusN))
		samples = append(samples, time.Since(t0))
		if err != nil || len(bundle.Nodes) != 25 {
			b.Fatalf("retrieve: %s, %d nodes, %v (%s)", bundle.Status, len(bundle.Nodes), err, bundle.Detail)
		}
	}
	b.StopTimer()
	percentiles(b, samples)
}

// BenchmarkWriteDedup saves new decisions into the project scope of 50,000
// nodes: scope check, scope lock, hash lookup, full-text top 5, Jaccard,
// create. The nodes it writes are removed afterwards.
func BenchmarkWriteDedup(b *testing.B) {
	f := benchStore(b)
	ctx := context.Background()
	b.Cleanup(func() { cleanWrites(b, f.store) })
	e, err := write.New(write.Config{Store: f.store, Tokens: governance.NewTokens(nil), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewSource(int64(b.N)))
	z := rand.NewZipf(r, 1.1, 4, uint64(len(benchVocab)-1))
	samples := make([]time.Duration, 0, b.N)
	outcomes := map[dedup.Outcome]int{}
	b.ResetTimer()
	for range b.N {
		req := write.Request{TenantID: benchTenant, ProjectID: benchProject, Kind: graph.Decision,
			Title: benchWords(r, z, 4+r.Intn(6)), Rationale: benchWords(r, z, 10+r.Intn(16))}
		t0 := time.Now()
		rc, err := e.Save(ctx, req)
		samples = append(samples, time.Since(t0))
		if err != nil || rc.Status == write.PendingRetry || rc.Status == write.BlockedScope {
			b.Fatalf("save: %+v, %v", rc, err)
		}
		outcomes[rc.Outcome]++
	}
	b.StopTimer()
	percentiles(b, samples)
	b.Logf("outcomes: %v", outcomes)
}

// cleanWrites deletes what BenchmarkWriteDedup wrote and revives the
// fixture nodes it superseded, so the fixture stays the same.
func cleanWrites(b *testing.B, s *Store) {
	ctx := context.Background()
	_, err := neo4j.ExecuteQuery(ctx, s.driver, `MATCH (n:Memory)-[:SUPERSEDES]->(old:Memory)
		WHERE n.tenant_id = $t AND n.fixture IS NULL AND old.fixture
		SET old.ft_scope = $ft REMOVE old.superseded_by`,
		map[string]any{"t": benchTenant, "ft": ftScope(scopeUID(benchTenant, graph.ProjectScope(benchProject)))}, neo4j.EagerResultTransformer)
	if err == nil {
		_, err = neo4j.ExecuteQuery(ctx, s.driver, `MATCH (n:Memory) WHERE n.tenant_id = $t AND n.fixture IS NULL DETACH DELETE n`,
			map[string]any{"t": benchTenant}, neo4j.EagerResultTransformer)
	}
	if err != nil {
		b.Errorf("remove benchmark writes: %v", err)
	}
}

// BenchmarkHygiene runs the five checks over the project area (100,000
// nodes) and proves from the result summaries that its read transaction
// wrote nothing. The one write of a run, last_hygiene_at, comes after.
func BenchmarkHygiene(b *testing.B) {
	f := benchStore(b)
	ctx := context.Background()
	e, err := hygiene.New(hygiene.Config{Store: f.store, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		before := f.store.Stats()
		t0 := time.Now()
		rep, err := e.Run(ctx, benchTenant, graph.Area{ProjectID: benchProject})
		samples = append(samples, time.Since(t0))
		after := f.store.Stats()
		if err != nil {
			b.Fatal(err)
		}
		if d := after.ReadUpdates - before.ReadUpdates; d != 0 {
			b.Fatalf("hygiene's read transaction reported %d updates, want 0", d)
		}
		if q := after.ReadQueries - before.ReadQueries; q == 0 {
			b.Fatal("no read query counted")
		}
		if w := after.WriteQueries - before.WriteQueries; w != 1 {
			b.Fatalf("hygiene ran %d write queries, want 1 (last_hygiene_at)", w)
		}
		if rep.Scanned < 60000 {
			b.Fatalf("scanned %d titles, want the live decisions and patterns of 100,000 nodes", rep.Scanned)
		}
		b.ReportMetric(float64(rep.Scanned), "titles")
		b.ReportMetric(float64(len(rep.Outdated)), "outdated")
		b.ReportMetric(float64(len(rep.Duplicates)), "dup-pairs")
	}
	b.StopTimer()
	percentiles(b, samples)
}
