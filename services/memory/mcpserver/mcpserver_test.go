package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store/testdb"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/internal/memtest"
	"github.com/praetorhq/praetor/services/memory/mcpserver"
	"github.com/praetorhq/praetor/services/memory/retrieval"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	g   graph.Store
	db  store.DB
	mem *memory.Memory
	srv *mcpserver.Server
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{g: memtest.Embedded(t), db: testdb.SQLite(t)}
	e.mem = memtest.Memory(t, e.g, e.db, nil)
	srv, err := e.mem.MCP()
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	memtest.Tenant(t, e.db, "acme")
	memtest.Tenant(t, e.db, "globex")
	memtest.Project(t, e.g, "acme", "shop", "checkout")
	return e
}

// connect opens a client session on the in-memory transport, acting for tenant.
func (e *env) connect(t *testing.T, tenant string) *mcp.ClientSession {
	t.Helper()
	ctx := memtest.Ctx(t)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.MCP(tenant).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

// call calls a tool and decodes its structured result into out; it returns
// the tool error text when the call failed as a tool error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(memtest.Ctx(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	if res.IsError {
		var msg []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg = append(msg, tc.Text)
			}
		}
		return strings.Join(msg, " ")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode %s: %v", tool, b, err)
	}
	return ""
}

func save(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) mcpserver.SaveOutput {
	t.Helper()
	var out mcpserver.SaveOutput
	if msg := call(t, cs, tool, args, &out); msg != "" {
		t.Fatalf("%s(%v): tool error %s", tool, args, msg)
	}
	return out
}

func TestListTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.connect(t, "acme")
	res, err := cs.ListTools(memtest.Ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s lacks a description or schemas", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"get_context", "route_analysis", "run_hygiene", "save_decision", "save_entity_fact", "save_pattern"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

// save_decision of a decision that was superseded reinstates it: the answer
// names the reinstated node and the decision it replaces, and get_context
// shows it again.
func TestSaveDecisionReinstates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.connect(t, "acme")
	a := map[string]any{"project_id": "shop", "title": "Cache user sessions in Redis", "rationale": "fast"}
	first := save(t, cs, "save_decision", a)
	b := save(t, cs, "save_decision", map[string]any{"project_id": "shop", "title": "Cache user sessions in Redis with a TTL",
		"rationale": "fast, bounded"})
	if b.Outcome != "supersede" || b.Match == nil || b.Match.ID != first.NodeID {
		t.Fatalf("setup: %+v, want supersede of %s", b, first.NodeID)
	}
	back := save(t, cs, "save_decision", a)
	if back.Status != "saved" || back.Outcome != "supersede" || back.NodeID != first.NodeID || back.Match == nil ||
		back.Match.ID != b.NodeID || !strings.Contains(back.Detail, "reinstated") {
		t.Errorf("the first decision again = %+v, want supersede as the reinstated %s of %s", back, first.NodeID, b.NodeID)
	}
	var ctxOut mcpserver.ContextOutput
	if msg := call(t, cs, "get_context", map[string]any{"project_id": "shop"}, &ctxOut); msg != "" {
		t.Fatal(msg)
	}
	var got []string
	for _, n := range ctxOut.Nodes {
		got = append(got, n.Title)
	}
	if want := []string{"Cache user sessions in Redis"}; !slices.Equal(got, want) {
		t.Errorf("get_context = %q, want %q", got, want)
	}
}

// Saves answer with their write status as a field; reads see what was
// saved, by priority; hygiene and routing answer; every malformed call is a
// tool error naming what to fix.
func TestTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.connect(t, "acme")

	d := save(t, cs, "save_decision", map[string]any{"project_id": "shop", "title": "Use PostgreSQL for orders",
		"rationale": "the team knows it", "request_id": "r-1"})
	if d.Status != "saved" || d.Outcome != "new" || d.NodeID == "" || d.Scope != "p/shop" || d.RequestID != "r-1" || d.ScopeState != "resolved_project" {
		t.Fatalf("save_decision = %+v", d)
	}
	if dup := save(t, cs, "save_decision", map[string]any{"project_id": "shop", "title": "Use PostgreSQL for orders",
		"rationale": "the team knows it"}); dup.Status != "saved" || dup.Outcome != "duplicate_skip" || dup.NodeID != d.NodeID {
		t.Errorf("same decision again = %+v, want duplicate_skip of %s", dup, d.NodeID)
	}
	sup := save(t, cs, "save_decision", map[string]any{"project_id": "shop", "title": "Use PostgreSQL 16 for orders",
		"rationale": "the team knows it; 16 has logical replication"})
	if sup.Status != "saved" || sup.Outcome != "supersede" || sup.Match == nil || sup.Match.ID != d.NodeID {
		t.Errorf("near-identical decision = %+v, want supersede of %s", sup, d.NodeID)
	}
	focus := save(t, cs, "save_pattern", map[string]any{"project_id": "shop", "focus": "checkout", "name": "Idempotency keys",
		"description": "every payment call carries one"})
	if focus.Status != "saved" || focus.Scope != "f/shop/checkout" {
		t.Errorf("save_pattern in a focus area = %+v", focus)
	}
	fact := save(t, cs, "save_entity_fact", map[string]any{"project_id": "shop", "scope": "project", "focus": "checkout",
		"entity_name": "Stripe", "fact": "rate limited to 100 requests per second", "source": "their docs"})
	if fact.Status != "saved" || fact.Scope != "p/shop" {
		t.Errorf("save_entity_fact at project scope = %+v", fact)
	}

	var ctxOut mcpserver.ContextOutput
	if msg := call(t, cs, "get_context", map[string]any{"project_id": "shop", "focus": "checkout"}, &ctxOut); msg != "" {
		t.Fatal(msg)
	}
	var got []string
	for _, n := range ctxOut.Nodes {
		got = append(got, n.Scope+":"+n.Title)
	}
	want := []string{"focus:Idempotency keys", "project:rate limited to 100 requests per second", "project:Use PostgreSQL 16 for orders"}
	if ctxOut.Status != "succeeded" || ctxOut.ScopeState != "resolved_focus" || !ctxOut.HygieneDue || !slices.Equal(got, want) {
		t.Errorf("get_context = %+v (%v), want %v with hygiene due; the superseded decision absent", ctxOut, got, want)
	}

	// Scopes that do not resolve block the write; nothing is written. One
	// for want of a registration names the command that makes it (no tool
	// does): the detail was the gate's "scope is uncertain; only
	// resolved_project and resolved_focus scopes accept writes".
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		detail     string
	}{
		{"unresolved (no project)", "save_decision", map[string]any{"project_id": "", "title": "Orphan decision"}, "scope is unresolved"},
		{"uncertain (unknown project)", "save_decision", map[string]any{"project_id": "ghost", "title": "Ghost decision"},
			"project ghost is not registered in the memory of tenant acme: register it with " +
				"praetor memory add-project --project ghost --tenant acme, or correct project_id"},
		{"uncertain, a pattern", "save_pattern", map[string]any{"project_id": "ghost", "name": "Ghost pattern"},
			"praetor memory add-project --project ghost --tenant acme"},
		{"uncertain, a fact", "save_entity_fact", map[string]any{"project_id": "ghost", "entity_name": "Stripe", "fact": "x"},
			"praetor memory add-project --project ghost --tenant acme"},
		{"focus scope without the focus area", "save_decision", map[string]any{"project_id": "shop", "focus": "returns", "scope": "focus", "title": "Returns decision"},
			"focus area returns of project shop is not registered: register it with " +
				"praetor memory add-project --project shop --focus returns --tenant acme, or save without scope \"focus\""},
	} {
		if out := save(t, cs, tc.tool, tc.args); out.Status != "blocked_scope" || !strings.Contains(out.Detail, tc.detail) {
			t.Errorf("%s: %+v, want blocked_scope with a detail saying %q", tc.name, out, tc.detail)
		}
	}
	var empty mcpserver.ContextOutput
	if msg := call(t, cs, "get_context", map[string]any{"project_id": ""}, &empty); msg != "" || empty.Status != "empty" || empty.ScopeState != "unresolved" {
		t.Errorf("get_context unresolved = %+v %s", empty, msg)
	}

	var route struct {
		Mode           string   `json:"mode"`
		Rationale      string   `json:"rationale"`
		SuggestedSteps []string `json:"suggested_steps"`
	}
	if msg := call(t, cs, "route_analysis", map[string]any{"task": "Compare the trade-offs of Kafka and NATS"}, &route); msg != "" ||
		route.Mode != "debate" || route.Rationale == "" || len(route.SuggestedSteps) == 0 {
		t.Errorf("route_analysis = %+v %s", route, msg)
	}
	var rep mcpserver.HygieneOutput
	if msg := call(t, cs, "run_hygiene", map[string]any{"project_id": "shop"}, &rep); msg != "" || !rep.Recorded || rep.Area != "p/shop" || rep.Scanned != 2 {
		t.Errorf("run_hygiene = %+v %s", rep, msg)
	}
	if msg := call(t, cs, "get_context", map[string]any{"project_id": "shop"}, &ctxOut); msg != "" || ctxOut.HygieneDue {
		t.Errorf("hygiene still due after a report: %+v", ctxOut)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"save_decision", map[string]any{"project_id": "shop", "title": strings.Repeat("long ", 60)}, "title: is 300 characters; the limit is 256"},
		{"save_decision", map[string]any{"project_id": "shop", "title": "two\nlines"}, "title: must not contain line breaks"},
		{"save_decision", map[string]any{"project_id": "shop"}, "title"},
		{"save_decision", map[string]any{"project_id": "shop", "title": "x", "scope": "team"}, `scope "team" must be focus, project, global or empty`},
		{"save_decision", map[string]any{"project_id": "sh op", "title": "x"}, "project_id"},
		{"save_entity_fact", map[string]any{"project_id": "shop", "fact": "x", "entity_name": "!!"}, "entity_name: must contain a letter or digit"},
		{"get_context", map[string]any{"project_id": "shop", "focus": strings.Repeat("f", 201)}, "focus is 201 characters"},
		{"route_analysis", map[string]any{"task": "  "}, "task is required"},
		{"run_hygiene", map[string]any{"project_id": "shop", "global": true}, "not both"},
		{"run_hygiene", map[string]any{}, "give project_id, or global true: "},
		{"save_entity_fact", map[string]any{"project_id": "shop", "entity_name": "Stripe", "fact": " "}, "memory write: fact: is required"},
		{"save_entity_fact", map[string]any{"project_id": "shop", "entity_name": "Stripe", "fact": "x", "source": "a\x00b"}, "memory write: source: must not"},
		{"save_pattern", map[string]any{"project_id": "shop", "name": ""}, "memory write: name: is required"},
		{"save_pattern", map[string]any{"project_id": "shop", "name": "x", "description": "a\x00b"}, "memory write: description: must not"},
		{"save_decision", map[string]any{"project_id": "shop", "title": ""}, "memory write: title: is required"},
		{"run_hygiene", map[string]any{"project_id": "ghost"}, "scope not found"},
	} {
		var out map[string]any
		if msg := call(t, cs, tc.tool, tc.args, &out); !strings.Contains(msg, tc.want) {
			t.Errorf("%s(%v): tool error %q, want one containing %q (result %v)", tc.tool, tc.args, msg, tc.want, out)
		}
	}
}

// Lucene's special characters are text, never query syntax: saving and
// deduplicating titles made of them works, and so does reading them back.
func TestLuceneCharacters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.connect(t, "acme")
	title := `C++ && (Go || "Rust") ~2 [a TO b] {x} \ / ! ^ ? * : - + OR AND NOT`
	first := save(t, cs, "save_decision", map[string]any{"project_id": "shop", "title": title, "rationale": `field:value "unbalanced`})
	if first.Status != "saved" || first.Outcome != "new" {
		t.Fatalf("save with Lucene syntax = %+v", first)
	}
	again := save(t, cs, "save_decision", map[string]any{"project_id": "shop", "title": title + " !", "rationale": "other"})
	if again.Status != "saved" || again.Outcome != "supersede" || again.Match == nil || again.Match.ID != first.NodeID {
		t.Errorf("near-duplicate with Lucene syntax = %+v, want supersede of %s", again, first.NodeID)
	}
	var out mcpserver.ContextOutput
	if msg := call(t, cs, "get_context", map[string]any{"project_id": "shop"}, &out); msg != "" || len(out.Nodes) != 1 || out.Nodes[0].Title != title+" !" {
		t.Errorf("get_context = %+v %s", out, msg)
	}
}

// A global save needs a valid governance token of the caller's tenant.
func TestGovernance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.connect(t, "acme")
	ctx := memtest.Ctx(t)
	valid, _, err := e.mem.Tokens.Issue(ctx, "acme", "board", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _, _ := e.mem.Tokens.Issue(ctx, "globex", "board", time.Hour)
	revoked, rec, _ := e.mem.Tokens.Issue(ctx, "acme", "old", time.Hour)
	if err := e.mem.Tokens.Revoke(ctx, "acme", rec.ID); err != nil {
		t.Fatal(err)
	}
	args := func(token string) map[string]any {
		return map[string]any{"project_id": "shop", "scope": "global", "title": "All services log JSON", "governance_token": token}
	}
	for name, tc := range map[string]struct{ token, want string }{
		"missing":          {"", "governance token missing"},
		"forged":           {"gov_aaaaaaaaaaaaaaaa_forged", "governance token invalid"},
		"another tenant's": {foreign, "governance token invalid"},
		"revoked":          {revoked, "revoked"},
	} {
		if out := save(t, cs, "save_decision", args(tc.token)); out.Status != "failed" || !strings.Contains(out.Detail, tc.want) {
			t.Errorf("%s token: %+v, want failed saying %q", name, out, tc.want)
		}
	}
	if out := save(t, cs, "save_decision", args(valid)); out.Status != "saved" || out.Scope != "g" {
		t.Fatalf("valid token: %+v", out)
	}
	var got mcpserver.ContextOutput
	if msg := call(t, cs, "get_context", map[string]any{"project_id": "shop"}, &got); msg != "" || len(got.Nodes) != 1 || got.Nodes[0].Scope != "global" {
		t.Errorf("get_context after the global save = %+v %s", got, msg)
	}
}

// Over HTTP each request acts for its bearer token's tenant; loopback may
// go without a token when an open tenant is set; a session is bound to the
// tenant that opened it.
func TestHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := memtest.Ctx(t)
	acmeToken, _, err := store.CreateToken(ctx, e.db, "acme", "agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	globexToken, _, _ := store.CreateToken(ctx, e.db, "globex", "agent", nil)
	memtest.Tenant(t, e.db, "local")
	memtest.Project(t, e.g, "local", "shop")
	h, err := e.srv.Handler(mcpserver.HTTPConfig{Authenticate: mcpserver.StoreAuthenticator(e.db, nil), OpenTenant: "local", Logger: memtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { h.Close(); ts.Close() })

	connect := func(token string) (*mcp.ClientSession, error) {
		hc := &http.Client{Transport: bearer{token: token}}
		return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	}
	acme, err := connect(acmeToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = acme.Close() })
	if out := save(t, acme, "save_decision", map[string]any{"project_id": "shop", "title": "Acme's secret decision"}); out.Status != "saved" {
		t.Fatalf("acme save over HTTP = %+v", out)
	}
	globex, err := connect(globexToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = globex.Close() })
	var got mcpserver.ContextOutput
	if msg := call(t, globex, "get_context", map[string]any{"project_id": "shop"}, &got); msg != "" || len(got.Nodes) != 0 || got.ScopeState != "uncertain" {
		t.Errorf("globex reads acme's project: %+v %s", got, msg)
	}
	open, err := connect("")
	if err != nil {
		t.Fatalf("loopback without a token: %v", err)
	}
	t.Cleanup(func() { _ = open.Close() })
	if out := save(t, open, "save_decision", map[string]any{"project_id": "shop", "title": "Local decision"}); out.Status != "saved" {
		t.Errorf("open save = %+v", out)
	}
	if msg := call(t, open, "get_context", map[string]any{"project_id": "shop"}, &got); msg != "" || len(got.Nodes) != 1 || got.Nodes[0].Title != "Local decision" {
		t.Errorf("local tenant context = %+v %s", got, msg)
	}
	if _, err := connect("prt_forged"); err == nil {
		t.Error("a forged token connected")
	}

	// Raw requests: no token from elsewhere, a bad token, and another
	// tenant's token on acme's session.
	init := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for name, tc := range map[string]struct {
		remote, auth, session string
		want                  int
		forwardedFor          string
	}{
		"no token, not loopback":      {"10.1.2.3:4000", "", "", http.StatusUnauthorized, ""},
		"no token, through a proxy":   {"127.0.0.1:4000", "", "", http.StatusUnauthorized, "10.1.2.3"},
		"forged token":                {"127.0.0.1:4000", "Bearer prt_forged", "", http.StatusUnauthorized, ""},
		"another tenant on a session": {"127.0.0.1:4000", "Bearer " + globexToken, acme.ID(), http.StatusForbidden, ""},
		"no token on a token session": {"127.0.0.1:4000", "", acme.ID(), http.StatusForbidden, ""},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(init))
		r.RemoteAddr, r.Host = tc.remote, "127.0.0.1:8080"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		if tc.session != "" {
			r.Header.Set("Mcp-Session-Id", tc.session)
		}
		if tc.forwardedFor != "" {
			r.Header.Set("X-Forwarded-For", tc.forwardedFor)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: HTTP %d %q, want %d", name, w.Code, strings.TrimSpace(w.Body.String()), tc.want)
		}
	}

	// Without a token, as the gateway: not another site's page in the
	// developer's browser (its Origin), nor one that reaches the port under
	// a name of its own (DNS rebinding: its Host).
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
	for _, tc := range []struct {
		name, host, origin string
		want               int
		mentions           string
	}{
		{"its own page", "127.0.0.1:8080", "http://127.0.0.1:8080", http.StatusOK, ""},
		{"another site's page", "127.0.0.1:8080", "https://evil.example.com", http.StatusUnauthorized, `Origin "https://evil.example.com"`},
		{"another site's name", "evil.example.com:8080", "", http.StatusUnauthorized, `Host "evil.example.com:8080"`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initialize))
		r.RemoteAddr, r.Host = "127.0.0.1:4000", tc.host
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		body := strings.TrimSpace(w.Body.String())
		if w.Code != tc.want || !strings.Contains(body, tc.mentions) {
			t.Errorf("initialize without a token from %s: HTTP %d %q, want %d mentioning %q", tc.name, w.Code, body, tc.want, tc.mentions)
		}
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A node confirmed by a later write (reinstated) shows when: the bundle is
// ordered by that date, and a reader shown only the creation date sees an
// old node ahead of newer ones.
func TestBundleOutputShowsConfirmation(t *testing.T) {
	created := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	confirmed := created.Add(7 * 24 * time.Hour)
	b := retrieval.Bundle{Nodes: []graph.Node{
		{ID: "a", Kind: graph.Decision, Title: "Use Stripe", CreatedAt: created, LastValidatedAt: confirmed},
		{ID: "b", Kind: graph.Decision, Title: "Ship in May", CreatedAt: created, LastValidatedAt: created},
		{ID: "c", Kind: graph.Decision, Title: "Hire two", CreatedAt: created},
	}}
	out := mcpserver.BundleOutput(b)
	if got := out.Nodes[0]; got.ConfirmedAt == nil || !got.ConfirmedAt.Equal(confirmed) || !got.Confirmed().Equal(confirmed) {
		t.Errorf("reinstated node = %+v, want confirmed_at %v", got, confirmed)
	}
	for _, n := range out.Nodes[1:] {
		if n.ConfirmedAt != nil || !n.Confirmed().Equal(created) {
			t.Errorf("node %s never confirmed again: confirmed_at = %v, Confirmed() = %v, want none and %v",
				n.ID, n.ConfirmedAt, n.Confirmed(), created)
		}
	}
	data, err := json.Marshal(out.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"confirmed_at"`); n != 1 {
		t.Errorf("JSON has confirmed_at %d times, want once (the reinstated node): %s", n, data)
	}
}

// A session's GET stream ends once the token that opened it no longer
// authenticates: revoked, or expired.
func TestHTTPStreamEndsWithItsToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		revoke bool
	}{{"revoked", 0, true}, {"expired", 3 * time.Second, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := memtest.Ctx(t)
			var expires *time.Time
			if tc.ttl > 0 {
				x := time.Now().Add(tc.ttl)
				expires = &x
			}
			token, tok, err := store.CreateToken(ctx, e.db, "acme", "agent", expires)
			if err != nil {
				t.Fatal(err)
			}
			h, err := e.srv.Handler(mcpserver.HTTPConfig{Authenticate: mcpserver.StoreAuthenticator(e.db, nil),
				Logger: memtest.Logger(t), StreamAuthInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(h)
			t.Cleanup(func() { h.Close(); ts.Close() })
			send := func(method, body, session string) *http.Response {
				t.Helper()
				r, err := http.NewRequestWithContext(ctx, method, ts.URL, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				r.Header.Set("Authorization", "Bearer "+token)
				r.Header.Set("Accept", "application/json, text/event-stream")
				r.Header.Set("Content-Type", "application/json")
				if session != "" {
					r.Header.Set("Mcp-Session-Id", session)
					r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				}
				res, err := ts.Client().Do(r)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			res := send(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
				`"capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`, "")
			_ = res.Body.Close()
			sid := res.Header.Get("Mcp-Session-Id")
			if res.StatusCode != http.StatusOK || sid == "" {
				t.Fatalf("initialize: %d, session %q", res.StatusCode, sid)
			}
			res = send(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
			_ = res.Body.Close()
			stream := send(http.MethodGet, "", sid)
			defer stream.Body.Close()
			if stream.StatusCode != http.StatusOK {
				t.Fatalf("GET stream: %d", stream.StatusCode)
			}
			if tc.revoke {
				if err := store.RevokeToken(ctx, e.db, "acme", tok.ID, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			ended := make(chan error, 1)
			go func() { _, err := io.Copy(io.Discard, stream.Body); ended <- err }()
			select {
			case err := <-ended:
				if err != nil {
					t.Errorf("the stream broke off (%v), want it ended", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the GET stream is still open 30s after its token stopped authenticating")
			}
			res = send(http.MethodGet, "", sid)
			_ = res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET again with the token: %d, want 401", res.StatusCode)
			}
		})
	}
}

// The detail of a save blocked for want of a registration names the
// stores of the server's memory: praetor memory add-project without them
// registers the project in the SQLite store of ./.praetor, not the one the
// server saves to. A password of the store's URL is masked.
func TestBlockedSaveNamesTheStore(t *testing.T) {
	g, db := memtest.Embedded(t), testdb.SQLite(t)
	flags := memory.StoreFlags(memory.GraphSettings{Neo4jURI: "bolt://neo4j:7687"}, "postgres://praetor:s3cret@db:5432/praetor", "")
	mem := memtest.Memory(t, g, db, func(c *memory.Config) { c.StoreFlags = flags })
	srv, err := mem.MCP()
	if err != nil {
		t.Fatal(err)
	}
	memtest.Tenant(t, db, "acme")
	e := &env{g: g, db: db, mem: mem, srv: srv}
	out := save(t, e.connect(t, "acme"), "save_decision", map[string]any{"project_id": "ghost", "title": "Ghost decision"})
	want := "praetor memory add-project --project ghost --tenant acme --neo4j-uri bolt://neo4j:7687 " +
		"--database-url postgres://praetor:xxxxx@db:5432/praetor, or correct project_id"
	if out.Status != "blocked_scope" || !strings.Contains(out.Detail, want) || strings.Contains(out.Detail, "s3cret") {
		t.Errorf("blocked save = %+v, want a detail saying %q without the password", out, want)
	}
}
