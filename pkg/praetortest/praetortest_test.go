package praetortest_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/pkg/praetortest"
)

// get sends a GET to the node, with token when it is set, and decodes
// the JSON answer into out.
func get(t *testing.T, n *praetortest.Node, path, token string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, n.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Close = true // no idle connection outlives the node
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: status %d, not JSON: %v", path, res.StatusCode, err)
		}
	}
	return res.StatusCode
}

// Two nodes of one test run side by side: each has its own ports, NATS
// server and store, so a session of one is unknown to the other.
func TestTwoNodesSideBySide(t *testing.T) {
	t.Parallel()
	a, b := praetortest.Start(t), praetortest.Start(t)
	if a.URL() == b.URL() || a.NATSURL() == b.NATSURL() {
		t.Fatalf("the nodes share an address: %s %s and %s %s", a.URL(), a.NATSURL(), b.URL(), b.NATSURL())
	}
	for _, n := range []*praetortest.Node{a, b} {
		for _, u := range []string{n.URL(), n.NATSURL()} {
			if p, err := url.Parse(u); err != nil || p.Hostname() != "127.0.0.1" || p.Port() == "" || p.Port() == "4222" || p.Port() == "8080" {
				t.Errorf("address %s, want 127.0.0.1 on a free port", u)
			}
		}
		if code := get(t, n, "/readyz", "", nil); code != http.StatusOK {
			t.Errorf("%s/readyz: %d, want 200", n.URL(), code)
		}
		nc, err := nats.Connect(n.NATSURL())
		if err != nil {
			t.Fatalf("connect to %s: %v", n.NATSURL(), err)
		}
		nc.Close()
	}
	id := a.NewSession("exploration", "p")
	if code := get(t, a, "/v1/sessions/"+id, a.Token(), nil); code != http.StatusOK {
		t.Errorf("the session on its own node: %d, want 200", code)
	}
	if code := get(t, b, "/v1/sessions/"+id, b.Token(), nil); code != http.StatusNotFound {
		t.Errorf("the session on the other node: %d, want 404", code)
	}
}

// Token acts as the tenant made for the test; a request from the test
// without one acts as the open tenant, as under praetor dev.
func TestTokenAndOpenTenant(t *testing.T) {
	t.Parallel()
	n := praetortest.Start(t)
	for _, tc := range []struct {
		name, token, want string
	}{
		{"token", n.Token(), praetortest.Tenant},
		{"no token", "", praetortest.OpenTenant},
	} {
		var info struct {
			TenantID string `json:"tenant_id"`
			Offline  bool   `json:"offline"`
		}
		if code := get(t, n, "/v1/info", tc.token, &info); code != http.StatusOK {
			t.Fatalf("%s: /v1/info %d, want 200", tc.name, code)
		}
		if info.TenantID != tc.want || !info.Offline {
			t.Errorf("%s: tenant %q, offline %v; want %q, offline", tc.name, info.TenantID, info.Offline, tc.want)
		}
	}
	if code := get(t, n, "/v1/info", "tok_not-a-token", nil); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", code)
	}
}

// The scripted project-discovery conversation of the runner's tests
// reaches its second phase through Turn, each reply in the script's phase.
func TestDiscoveryReachesItsSecondPhase(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../services/runner/testdata/discovery.json")
	if err != nil {
		t.Fatal(err)
	}
	var script []struct {
		Message string `json:"message"`
		Phase   string `json:"phase"`
	}
	if err := json.Unmarshal(b, &script); err != nil {
		t.Fatal(err)
	}
	n := praetortest.Start(t)
	id := n.NewSession("project-discovery", "field-app")
	var phases []string
	for i, step := range script {
		r := n.Turn(id, step.Message)
		if r.SessionID != id || r.TurnNumber != i+1 || r.Reply == "" || r.Degraded {
			t.Fatalf("turn %d: %+v, want an answer of turn %d of %s, not degraded", i+1, r, i+1, id)
		}
		if r.Phase != step.Phase {
			t.Fatalf("turn %d: phase %s, want %s", i+1, r.Phase, step.Phase)
		}
		if !slices.Contains(phases, r.Phase) {
			phases = append(phases, r.Phase)
		}
		if len(phases) == 2 {
			break
		}
	}
	if want := []string{"CORE_CAPTURE", "USERS_AND_GOALS"}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
}

// post sends body as JSON to the node with its token, and decodes the
// JSON answer into out.
func post(t *testing.T, n *praetortest.Node, path string, body, out any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, n.URL()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+n.Token())
	req.Close = true // no idle connection outlives the node
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("POST %s: status %d, not JSON: %v", path, res.StatusCode, err)
	}
	return res.StatusCode
}

// A Reply carries the handoff of the turn that made it and, on a turn
// queued behind that one, answered without being processed, says so:
// degraded, with DegradedReason handed_off (the message goes again to the
// target session).
func TestReplyOfAHandoff(t *testing.T) {
	t.Parallel()
	script := enginetest.ExplorationScript
	n := praetortest.Start(t)
	// The queued turn must reach the gateway before the runner commits the
	// handoff; should the runner be quicker (the turn is then refused,
	// 409), the conversation is held again.
	var behind praetortest.Reply
	for attempt := 1; behind.TurnID == ""; attempt++ {
		if attempt > 3 {
			t.Fatal("the runner committed the handoff before the queued turn reached the gateway, three times")
		}
		id := n.NewSession("exploration", "studio")
		for _, msg := range script[:len(script)-1] {
			n.Turn(id, msg)
		}
		var decision struct {
			TurnID string `json:"turn_id"`
		}
		if code := post(t, n, "/v1/sessions/"+id+"/turns", map[string]string{"message": script[len(script)-1]}, &decision); code != http.StatusAccepted {
			t.Fatalf("the decision: status %d, want 202", code)
		}
		var r praetortest.Reply
		switch code := post(t, n, "/v1/sessions/"+id+"/turns?wait=60s", map[string]string{"message": "Members book from phones."}, &r); code {
		case http.StatusOK:
			behind = r
		case http.StatusConflict:
		default:
			t.Fatalf("the turn queued behind the decision: status %d", code)
		}
	}
	if !behind.Degraded || behind.DegradedReason != "handed_off" || behind.Handoff == nil ||
		behind.Handoff.TargetEngineID != "project-discovery" || behind.Handoff.TargetSessionID == "" {
		t.Fatalf("the turn queued behind the decision = %+v, handoff %+v; want it degraded (handed_off) with the handoff to project-discovery",
			behind, behind.Handoff)
	}
}

// WithEnginesDir loads an engine of the test's own beside the shipped
// ones, and its sessions are answered.
func TestEnginesDir(t *testing.T) {
	t.Parallel()
	n := praetortest.Start(t, praetortest.WithEnginesDir("testdata/engines"))
	var list struct {
		Engines []struct {
			EngineID string `json:"engine_id"`
		} `json:"engines"`
	}
	if code := get(t, n, "/v1/engines", n.Token(), &list); code != http.StatusOK {
		t.Fatalf("/v1/engines: %d", code)
	}
	var ids []string
	for _, e := range list.Engines {
		ids = append(ids, e.EngineID)
	}
	if !slices.Contains(ids, "support-desk") || !slices.Contains(ids, "project-discovery") {
		t.Fatalf("engines %v, want support-desk beside the shipped ones", ids)
	}
	// The goal given satisfies half of the engine's basics, which its
	// START phase asks to move on to END.
	r := n.Turn(n.NewSession("support-desk", "p"), "Our goal is to answer every ticket within a day.")
	if r.Phase != "END" || r.Reply == "" {
		t.Errorf("the support-desk turn: phase %q, reply %q; want END and a reply", r.Phase, r.Reply)
	}
}

// A bad option or engines directory fails the start, saying why, and
// leaves nothing running.
func TestStartRefuses(t *testing.T) {
	t.Parallel()
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "bad.yaml"), []byte("engine_id: bad\n\tversion: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []praetortest.Option
		want string
	}{
		{"empty engines dir", []praetortest.Option{praetortest.WithEnginesDir(" ")}, "WithEnginesDir: empty directory"},
		{"nil logger", []praetortest.Option{praetortest.WithLogger(nil)}, "WithLogger: nil logger"},
		{"no such engines dir", []praetortest.Option{praetortest.WithEnginesDir(filepath.Join(bad, "nope"))}, "no such directory"},
		{"invalid engine", []praetortest.Option{praetortest.WithEnginesDir(bad)}, "bad.yaml:2: found a tab character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := &recordingT{}
			started := false
			rt.run(func(tb testing.TB) {
				praetortest.Start(tb, tc.opts...)
				started = true
			})
			errs := rt.Errors()
			if started || len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Errorf("Start: started %v, errors %q; want one error with %q", started, errs, tc.want)
			}
		})
	}
}

// WithLogger receives the node's log as it is written.
func TestWithLogger(t *testing.T) {
	t.Parallel()
	logs := &syncWriter{w: &strings.Builder{}}
	rt := &recordingT{}
	rt.run(func(tb testing.TB) {
		praetortest.Start(tb, praetortest.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	})
	if errs := rt.Errors(); len(errs) > 0 {
		t.Fatalf("Start: %q", errs)
	}
	for _, want := range []string{"praetor is ready", "praetor stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log has no %q:\n%s", want, logs.String())
		}
	}
}

// A node's stop ends every goroutine it started: a test suite that runs
// goleak, as this one does, passes with praetortest in it.
func TestStopLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("node", func(t *testing.T) {
		n := praetortest.Start(t)
		n.Turn(n.NewSession("exploration", "p"), "We want to open a bakery.")
	})
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left once the node stopped: %v", err)
	}
}

// syncWriter serialises the writes of the node's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}
