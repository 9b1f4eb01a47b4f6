package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/memory/mcpserver"
)

// praetorMemory runs praetor memory with args and returns its stdout,
// stderr and exit status.
func praetorMemory(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"memory"}, args...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("praetor memory %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// must runs praetor memory and fails the test unless it exits 0 with want
// in its output.
func must(t *testing.T, want string, args ...string) string {
	t.Helper()
	out, errOut, code := praetorMemory(t, args...)
	if code != 0 || !strings.Contains(out+errOut, want) {
		t.Fatalf("praetor memory %s: exit %d, output lacks %q:\n%s%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// refused runs praetor memory and fails the test unless it exits non-zero
// with want in its output.
func refused(t *testing.T, want string, args ...string) {
	t.Helper()
	out, errOut, code := praetorMemory(t, args...)
	if code == 0 || !strings.Contains(out+errOut, want) {
		t.Fatalf("praetor memory %s: exit %d, want a failure saying %q:\n%s%s", strings.Join(args, " "), code, want, out, errOut)
	}
}

// The memory commands on the dev data directory: register a project, save
// with dedup, refuse bad input and unresolved scopes, govern global writes
// with tokens, read the bundle, run hygiene, route a task.
func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	d := "--data-dir=" + t.TempDir()
	must(t, "project shop of tenant local registered with focus areas checkout", "add-project", d, "--project", "shop", "--focus", "checkout")
	must(t, "saved (new)", "save-decision", d, "--project", "shop", "--title", "Use PostgreSQL for orders", "--rationale", "the team knows it")
	must(t, "saved (duplicate_skip)", "save-decision", d, "--project", "shop", "--title", "Use PostgreSQL for orders", "--rationale", "the team knows it")
	must(t, "in f/shop/checkout", "save-pattern", d, "--project", "shop", "--focus", "checkout", "--name", "Idempotency keys", "--description", "on every payment call")
	must(t, "saved (new)", "save-fact", d, "--project", "shop", "--entity", "Stripe", "--fact", "rate limited to 100 requests per second")
	refused(t, "blocked_scope", "save-decision", d, "--project", "ghost", "--title", "Decision for an unknown project")
	refused(t, "--title (PRAETOR_TITLE): is 300 characters; the limit is 256", "save-decision", d, "--project", "shop", "--title", strings.Repeat("long ", 60))
	refused(t, `"team" must be focus, project, global or empty`, "save-decision", d, "--project", "shop", "--title", "x", "--scope", "team")
	must(t, "saved (new)", "save-decision", d, "--project", "shop", "--title", `C++ && (Go || "Rust") ~2 [a TO b] \ / !`)
	// A save waits --write-timeout for the graph, then is kept to retry.
	must(t, "pending_retry", "save-decision", d, "--project", "shop", "--title", "Ship on Fridays", "--write-timeout", "1ns")
	refused(t, "invalid setting --write-timeout (PRAETOR_WRITE_TIMEOUT): 0s must be positive", "save-decision", d, "--project", "shop", "--title", "x", "--write-timeout", "0s")

	token := strings.TrimSpace(must(t, "not shown again", "token", "issue", d, "--name", "architecture board", "--ttl", "1h"))
	if !strings.HasPrefix(token, "gov_") || strings.Contains(token, "\n") {
		t.Fatalf("token issue printed %q, want the token alone on stdout", token)
	}
	refused(t, "governance token missing", "save-decision", d, "--project", "shop", "--scope", "global", "--title", "All services log JSON")
	refused(t, "governance token invalid", "save-decision", d, "--project", "shop", "--scope", "global", "--title", "All services log JSON",
		"--governance-token", "gov_aaaaaaaaaaaaaaaa_forged")
	must(t, "saved (new)", "save-decision", d, "--project", "shop", "--scope", "global", "--title", "All services log JSON",
		"--governance-token", token)
	id, _, _ := strings.Cut(strings.TrimPrefix(token, "gov_"), "_")
	must(t, id+"\tarchitecture board\tvalid until", "token", "list", d)
	must(t, "revoked", "token", "revoke", d, id)
	must(t, "\trevoked ", "token", "list", d)
	refused(t, "revoked", "save-decision", d, "--project", "shop", "--scope", "global", "--title", "Another global rule",
		"--governance-token", token)

	out := must(t, "succeeded (resolved_project)", "get", d, "--project", "shop")
	for _, want := range []string{"hygiene is due", "Use PostgreSQL for orders", "the team knows it", "Stripe: rate limited", "global", "All services log JSON"} {
		if !strings.Contains(out, want) {
			t.Errorf("get lacks %q:\n%s", want, out)
		}
	}
	var bundle mcpserver.ContextOutput
	if err := json.Unmarshal([]byte(must(t, "", "get", d, "--project", "shop", "--focus", "checkout", "--json")), &bundle); err != nil {
		t.Fatal(err)
	}
	if bundle.ScopeState != "resolved_focus" || len(bundle.Nodes) != 5 || bundle.Nodes[0].Title != "Idempotency keys" {
		t.Errorf("get --json = %+v, want the focus pattern first of 5 nodes", bundle)
	}
	must(t, "hygiene of p/shop", "hygiene", d, "--project", "shop")
	if out := must(t, "succeeded", "get", d, "--project", "shop"); strings.Contains(out, "hygiene is due") {
		t.Errorf("hygiene still due after a report:\n%s", out)
	}
	refused(t, "scope not found", "hygiene", d, "--project", "ghost")
	refused(t, "not both", "hygiene", d, "--project", "shop", "--global")
	must(t, "debate", "route", "Compare", "the", "trade-offs", "of", "Kafka", "and", "NATS")
	refused(t, "--project", "get", d)
}

func TestMemoryHelpEverywhere(t *testing.T) {
	t.Parallel()
	for _, sub := range [][]string{{}, {"get"}, {"save-decision"}, {"save-pattern"}, {"save-fact"}, {"hygiene"}, {"route"},
		{"add-project"}, {"token"}, {"token", "issue"}, {"token", "revoke"}, {"token", "list"}, {"mcp"}} {
		out, _, code := praetorMemory(t, append(sub, "--help")...)
		if code != 0 || !strings.Contains(out, "USAGE") {
			t.Errorf("praetor memory %s --help: exit %d, no usage:\n%s", strings.Join(sub, " "), code, out)
		}
	}
}

// praetor memory mcp serves the tools on stdio to an MCP client.
func TestMemoryMCPStdio(t *testing.T) {
	t.Parallel()
	d := "--data-dir=" + t.TempDir()
	must(t, "registered", "add-project", d, "--project", "shop")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(binary, "memory", "mcp", d)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("ListTools = %v, %v; want the six memory tools", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "save_decision", Arguments: map[string]any{"project_id": "shop",
		"title": "Saved over stdio"}})
	if err != nil || res.IsError {
		t.Fatalf("save_decision: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_context", Arguments: map[string]any{"project_id": "shop"}})
	if err != nil || res.IsError {
		t.Fatalf("get_context: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), "Saved over stdio") {
		t.Errorf("get_context = %s", b)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// The saved decision is in the dev data for the other commands.
	must(t, "Saved over stdio", "get", d, "--project", "shop")
}

// With --neo4j-uri and --database-url the commands use the production
// stores; an unmigrated database is refused with what to do.
func TestMemoryCommandsOnNeo4jAndPostgres(t *testing.T) {
	t.Parallel()
	uri, user, password := testenv.Neo4j(t)
	dbURL := testenv.Postgres(t)
	tenant := testenv.Neo4jTenant(t)
	// A loaded machine's first Bolt round trip can outlast the default
	// wait of 3 seconds, after which a save is left pending_retry.
	flags := []string{"--neo4j-uri", uri, "--neo4j-user", user, "--neo4j-password", password, "--database-url", dbURL, "--tenant", tenant,
		"--write-timeout", "1m"}
	refused(t, "praetor migrate", append([]string{"add-project", "--project", "shop"}, flags...)...)
	refused(t, "tenant "+tenant+" does not exist: add it with praetor tenant add --tenant "+tenant+" --database-url URL",
		append([]string{"add-project", "--project", "shop", "--migrate"}, flags...)...)
	if out, err := exec.Command(binary, "tenant", "add", "--tenant", tenant, "--database-url", dbURL).CombinedOutput(); err != nil {
		t.Fatalf("praetor tenant add: %v\n%s", err, out)
	}
	must(t, "registered", append([]string{"add-project", "--project", "shop", "--migrate"}, flags...)...)
	must(t, "saved (new)", append([]string{"save-decision", "--project", "shop", "--title", `Lucene: "quotes" && (parens) || [range]`}, flags...)...)
	must(t, `Lucene: "quotes"`, append([]string{"get", "--project", "shop"}, flags...)...)
	must(t, "not shown again", append([]string{"token", "issue", "--name", "x"}, flags...)...)
}

// What memory knows of a project reaches a conversation about it: the
// runner of praetor dev reads the project's graph and merges the lines into
// the session's background intelligence.
func TestMemoryIsBackgroundIntelligence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := "--data-dir=" + dir
	must(t, "registered", "add-project", d, "--project", "shop")
	must(t, "saved (new)", "save-decision", d, "--project", "shop", "--title", "Use PostgreSQL for orders", "--rationale", "the team knows it")

	httpAddr := testenv.FreeAddr(t)
	start(t, nil, "dev", d, "--http-addr", httpAddr, "--nats-listen", "")
	testenv.WaitHTTP(t, "http://"+httpAddr+"/readyz", 30*time.Second)
	ctx := context.Background()
	c := &apiClient{base: "http://" + httpAddr, http: &http.Client{Timeout: time.Minute}}
	type view struct {
		SessionID       string `json:"session_id"`
		BackgroundTasks struct {
			Intelligence []string `json:"intelligence"`
		} `json:"background_tasks"`
	}
	var s view
	if err := c.do(ctx, http.MethodPost, "/v1/sessions", map[string]string{"engine_id": "project-discovery", "project_id": "shop"}, &s); err != nil {
		t.Fatal(err)
	}
	var turn chatTurn
	if err := c.do(ctx, http.MethodPost, "/v1/sessions/"+s.SessionID+"/turns?wait=30s",
		map[string]string{"message": "We want customers to order online from our shop."}, &turn); err != nil || turn.Status != "answered" {
		t.Fatalf("turn: %v %+v", err, turn)
	}
	want := "[project decision] Use PostgreSQL for orders: the team knows it"
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+s.SessionID, nil, &s); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(s.BackgroundTasks.Intelligence, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session's background intelligence = %q, want %q", s.BackgroundTasks.Intelligence, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// memory get's date is the one the bundle is ordered by: the last
// confirmation, with the creation date beside a node confirmed since.
func TestMemoryGetRowShowsConfirmation(t *testing.T) {
	created := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	confirmed := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		node mcpserver.NodeOutput
		want string
	}{
		{mcpserver.NodeOutput{Scope: "project", Kind: "decision", ID: "a", Title: "Use Stripe", CreatedAt: created},
			"project\tdecision\ta\t2026-11-20\tUse Stripe"},
		{mcpserver.NodeOutput{Scope: "project", Kind: "decision", ID: "b", Title: "Use Stripe", CreatedAt: created, ConfirmedAt: &confirmed},
			"project\tdecision\tb\t2026-11-27\tUse Stripe (confirmed again; created 2026-11-20)"},
		{mcpserver.NodeOutput{Scope: "focus", Kind: "entity_fact", ID: "c", EntityName: "Stripe", Title: "charges 1.4%", CreatedAt: created},
			"focus\tentity_fact\tc\t2026-11-20\tStripe: charges 1.4%"},
	} {
		if got := nodeRow(tc.node); got != tc.want {
			t.Errorf("nodeRow(%s) = %q, want %q", tc.node.ID, got, tc.want)
		}
	}
}

// A malformed line costs the client that line only: praetor memory mcp
// answers it with a JSON-RPC parse error and keeps serving, even when it
// comes in the same burst as the initialize request.
func TestMemoryMCPSurvivesMalformedLine(t *testing.T) {
	t.Parallel()
	d := "--data-dir=" + t.TempDir()
	must(t, "registered", "add-project", d, "--project", "shop")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "memory", "mcp", d)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One burst; the replies are read before stdin closes.
	_, err = io.WriteString(stdin, strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"id":4}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
	}, "\n")+"\n")
	if err != nil {
		t.Fatal(err)
	}
	replies := map[string]map[string]any{}
	var nulls []map[string]any
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for len(replies)+len(nulls) < 5 && sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reply %q: %v", sc.Text(), err)
		}
		if r["id"] == nil {
			nulls = append(nulls, r)
			continue
		}
		b, _ := json.Marshal(r["id"])
		replies[string(b)] = r
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("praetor memory mcp: %v\n%s", err, stderr.String())
	}
	if len(nulls) != 1 || nulls[0]["error"].(map[string]any)["code"] != float64(-32700) {
		t.Errorf("replies with id null = %v, want one parse error -32700", nulls)
	}
	for _, id := range []string{"1", "3", "5"} {
		if replies[id]["result"] == nil {
			t.Errorf("reply %s = %v, want a result", id, replies[id])
		}
	}
	if e, _ := replies["4"]["error"].(map[string]any); e == nil || e["code"] != float64(-32600) {
		t.Errorf("reply 4 = %v, want an invalid request error -32600", replies["4"])
	}
}

// A save blocked at the scope gate keeps its status line, blocked_scope,
// and says which registration it lacks with the command that makes it: it
// said "scope is uncertain; only resolved_project and resolved_focus scopes
// accept writes".
func TestMemoryBlockedScopeNamesTheFix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := "--data-dir=" + dir
	fix := "praetor memory add-project --project ghost --data-dir " + dir
	out, _, code := praetorMemory(t, "save-decision", d, "--project", "ghost", "--title", "x")
	status, detail, _ := strings.Cut(out, "\n")
	if code != 1 || status != "blocked_scope" || !strings.Contains(detail, "project ghost is not registered in the memory of tenant local") ||
		!strings.Contains(detail, "register it with "+fix+",") {
		t.Errorf("save-decision to an unknown project: exit %d, output:\n%s\nwant exit 1, blocked_scope, then the fix %q", code, out, fix)
	}
	out, _, _ = praetorMemory(t, "save-decision", d, "--project", "ghost", "--title", "x", "--json")
	var rc mcpserver.SaveOutput
	if err := json.Unmarshal([]byte(out), &rc); err != nil || rc.Status != "blocked_scope" || rc.ScopeState != "uncertain" ||
		!strings.Contains(rc.Detail, fix) {
		t.Errorf("save-decision --json = %s (%v), want status blocked_scope, scope_state uncertain and the fix", out, err)
	}
	must(t, "registered", strings.Fields(fix)[2:]...)
	refused(t, "focus area api of project ghost is not registered: register it with praetor memory add-project --project ghost --focus api --data-dir "+dir,
		"save-decision", d, "--project", "ghost", "--focus", "api", "--scope", "focus", "--title", "x")
	must(t, "saved (new)", "save-decision", d, "--project", "ghost", "--title", "x")
}

// A client that writes its requests and closes stdin at once (printf ... |
// praetor memory mcp) gets every answer: the end of the input is the client
// done sending, not a cancel. The session used to end at EOF, answering
// initialize alone.
func TestMemoryMCPAnswersPipedInput(t *testing.T) {
	t.Parallel()
	d := "--data-dir=" + t.TempDir()
	must(t, "registered", "add-project", d, "--project", "shop")
	cmd := exec.Command(binary, "memory", "mcp", d)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"save_decision","arguments":{"project_id":"shop","title":"Piped in"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_context","arguments":{"project_id":"shop"}}}`,
	}, "\n") + "\n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("praetor memory mcp: %v\n%s", err, stderr.String())
	}
	replies := map[string]string{}
	for line := range strings.Lines(stdout.String()) {
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		replies[string(r.ID)] = line
	}
	// The calls run concurrently: get_context may answer before the save.
	for id, want := range map[string]string{"1": `"protocolVersion"`, "2": `"save_decision"`, "3": `"status":"saved"`,
		"4": `"scope_state":"resolved_project"`} {
		if !strings.Contains(replies[id], want) {
			t.Errorf("reply %s = %q, want it to hold %s\nstdout:\n%s", id, replies[id], want, stdout.String())
		}
	}
	must(t, "Piped in", "get", d, "--project", "shop")
}

// With Neo4j down a save is kept pending_retry, as memory --help promises,
// and tokens, kept in the database, still work; a read fails, naming the
// setting the command reads.
func TestMemoryNeo4jDown(t *testing.T) {
	t.Parallel()
	d := "--data-dir=" + t.TempDir()
	down := []string{d, "--neo4j-uri", "bolt://127.0.0.1:1"}
	must(t, "registered", "add-project", d, "--project", "shop")
	out := must(t, "pending_retry", append([]string{"save-decision", "--project", "shop", "--title", "Ship on Fridays"}, down...)...)
	if !strings.Contains(out, "kept in the database") {
		t.Errorf("save-decision with Neo4j down:\n%s", out)
	}
	must(t, "not shown again", append([]string{"token", "issue", "--name", "ci"}, down...)...)
	refused(t, "(check --neo4j-uri or PRAETOR_NEO4J_URI)", append([]string{"get", "--project", "shop"}, down...)...)
}

// Every memory command refuses a tenant that does not exist, saying how to
// add it: a mistyped --tenant must not start a memory of its own. The dev
// tenant needs no setup.
func TestMemoryRefusesUnknownTenant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := "--data-dir=" + dir
	want := "tenant ghost does not exist: add it with praetor tenant add --tenant ghost --data-dir " + dir + ` --database-url ""`
	for _, args := range [][]string{
		{"add-project", "--project", "gp"},
		{"save-decision", "--project", "gp", "--title", "x"},
		{"get", "--project", "gp"},
		{"hygiene", "--global"},
		{"token", "issue", "--name", "a"},
		{"token", "list"},
		{"mcp"},
	} {
		refused(t, want, append(args, d, "--tenant", "ghost")...)
	}
	must(t, "project gp of tenant local registered", "add-project", d, "--project", "gp")
	if out, err := exec.Command(binary, "tenant", "add", "--tenant", "ghost", "--data-dir", dir, "--database-url", "").CombinedOutput(); err != nil {
		t.Fatalf("praetor tenant add: %v\n%s", err, out)
	}
	must(t, "project gp of tenant ghost registered", "add-project", d, "--project", "gp", "--tenant", "ghost")
}

// A refused command names the flag to fix, not a field of the write
// request behind it.
func TestMemoryErrorsNameFlags(t *testing.T) {
	t.Parallel()
	d := "--data-dir=" + t.TempDir()
	must(t, "registered", "add-project", d, "--project", "shop")
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"invalid setting --project (PRAETOR_PROJECT): give --project ID or --global: ", []string{"hygiene"}},
		{"invalid setting --project (PRAETOR_PROJECT): give --project ID or --global, not both", []string{"hygiene", "--project", "shop", "--global"}},
		{"invalid setting --fact (PRAETOR_FACT): is required", []string{"save-fact", "--project", "shop", "--entity", "Stripe", "--fact", " "}},
		{"invalid setting --entity (PRAETOR_ENTITY): is required", []string{"save-fact", "--project", "shop", "--entity", "", "--fact", "x"}},
		{"invalid setting --entity (PRAETOR_ENTITY): must contain a letter or digit", []string{"save-fact", "--project", "shop", "--entity", "!!", "--fact", "x"}},
		{"invalid setting --source (PRAETOR_SOURCE): must not contain control characters", []string{"save-fact", "--project", "shop", "--entity", "S", "--fact", "x", "--source", "a\x01b"}},
		{"invalid setting --name (PRAETOR_NAME): is required", []string{"save-pattern", "--project", "shop", "--name", ""}},
		{"invalid setting --description (PRAETOR_DESCRIPTION): must not contain", []string{"save-pattern", "--project", "shop", "--name", "x", "--description", "a\x01b"}},
		{"invalid setting --title (PRAETOR_TITLE): is required", []string{"save-decision", "--project", "shop"}},
		{"invalid setting --project (PRAETOR_PROJECT): required: the project the write goes to", []string{"save-decision", "--title", "x"}},
		{"invalid setting --project (PRAETOR_PROJECT): \"sh op\" must be", []string{"save-decision", "--project", "sh op", "--title", "x"}},
		{"invalid setting --focus (PRAETOR_FOCUS): ", []string{"save-decision", "--project", "shop", "--focus", " ", "--title", "x"}},
		{"invalid setting --request-id (PRAETOR_REQUEST_ID): is 300 bytes", []string{"save-decision", "--project", "shop", "--title", "x", "--request-id", strings.Repeat("r", 300)}},
	} {
		out, errOut, code := praetorMemory(t, append(tc.args, d)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("praetor memory %q: exit %d, want a failure saying %q:\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
}
