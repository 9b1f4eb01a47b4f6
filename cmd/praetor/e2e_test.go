package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm/offline"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/runner"
)

// cluster is a production-shaped deployment for end-to-end tests: a NATS
// server other processes join, a PostgreSQL schema, a tenant with a token,
// and praetor serve processes.
type cluster struct {
	t        *testing.T
	natsURL  string
	dbURL    string
	token    string
	bus      *events.Bus
	replicas []*replica
}

type replica struct {
	*testenv.Process
	http string
	args []string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	dbURL := testenv.Postgres(t)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c := &cluster{t: t, natsURL: srv.ClientURL(), dbURL: dbURL}
	nc := eventstest.Connect(t, srv)
	if c.bus, err = events.New(nc, events.Config{Subject: contracts.Subject}); err != nil {
		t.Fatal(err)
	}
	c.token = testenv.PrepareTenant(t, binary, dbURL, "acme")
	return c
}

// serve starts a praetor serve replica running services.
func (c *cluster) serve(services string, extra ...string) *replica {
	c.t.Helper()
	addr := testenv.FreeAddr(c.t)
	args := append([]string{"serve", "--services", services, "--http-addr", addr, "--log-level", "warn",
		"--ack-wait", "2s", "--drain-timeout", "5s"}, extra...)
	r := &replica{Process: start(c.t, []string{"NATS_URL=" + c.natsURL, "DATABASE_URL=" + c.dbURL}, args...), http: addr, args: args}
	testenv.WaitHTTP(c.t, "http://"+addr+"/readyz", 30*time.Second)
	c.replicas = append(c.replicas, r)
	return r
}

// api calls a replica's HTTP API with the tenant's token.
func (c *cluster) api(r *replica, method, path string, body, out any) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+r.http+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	if resp.StatusCode >= 300 {
		c.t.Logf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode
}

// count reads a stream and counts the events of a type for one turn id.
func (c *cluster) eventsOf(ceType string) map[string]int {
	c.t.Helper()
	counts := map[string]int{}
	err := c.bus.Replay(context.Background(), events.ReplayConfig{Stream: contracts.StreamTurns}, func(r events.Record) error {
		if r.Err == nil && r.Event.Type() == ceType {
			var p struct {
				TurnID string `json:"turn_id"`
			}
			_ = json.Unmarshal(r.Event.Data(), &p)
			counts[p.TurnID]++
		}
		return nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return counts
}

type e2eTurn struct {
	TurnID       string  `json:"turn_id"`
	Status       string  `json:"status"`
	TurnNumber   int     `json:"turn_number"`
	Reply        string  `json:"reply"`
	Phase        string  `json:"phase"`
	Completeness float64 `json:"completeness"`
}

type e2eExtraction struct {
	FieldPath    string          `json:"field_path"`
	Value        json.RawMessage `json:"extracted_value"`
	Type         string          `json:"extraction_type"`
	TurnNumber   int             `json:"turn_number"`
	SupersededBy string          `json:"superseded_by"`
}

func (e e2eExtraction) key() string {
	var v any
	_ = json.Unmarshal(e.Value, &v)
	canon, _ := json.Marshal(v)
	return fmt.Sprintf("%02d %s %s %s", e.TurnNumber, e.FieldPath, e.Type, canon)
}

func loadDiscoveryScript(t *testing.T) []runnerScriptTurn {
	t.Helper()
	b, err := os.ReadFile("../../services/runner/testdata/discovery.json")
	if err != nil {
		t.Fatal(err)
	}
	var script []runnerScriptTurn
	if err := json.Unmarshal(b, &script); err != nil {
		t.Fatal(err)
	}
	return script
}

type runnerScriptTurn struct {
	Message string `json:"message"`
	Phase   string `json:"phase"`
}

// expectedLog runs the script in process, through the same extraction
// pipeline and runner with the offline provider, and returns the extraction
// log a distributed run must also produce.
func expectedLog(t *testing.T, script []runnerScriptTurn) []string {
	t.Helper()
	reg, cat := enginetest.ShippedWithRegistry(t)
	def, _ := cat.Get("project-discovery")
	o, err := offline.New(offline.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for p, s := range offlineskill.Skills() {
		o.Handle(p, s)
	}
	pipe, _ := extraction.New(extraction.Config{LLM: o, Logger: slog.New(slog.DiscardHandler)})
	run, _ := runner.New(runner.Config{LLM: o, Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	mem := engine.NewWorkingMemory(def, "s", "p")
	var keys []string
	for i, step := range script {
		meta := extraction.Meta{SessionID: "s", ProjectID: "p", MessageID: fmt.Sprint(i), EngineID: def.EngineID, TurnNumber: i + 1}
		res, err := pipe.Extract(context.Background(), extraction.Request{Def: def, Current: mem.Extraction, Message: step.Message,
			History: mem.History, Focus: mem.Obligations.Focus, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Log {
			keys = append(keys, e2eExtraction{FieldPath: e.FieldPath, Value: e.ExtractedValue, Type: string(e.ExtractionType),
				TurnNumber: e.TurnNumber}.key())
		}
		te, _ := res.Contract("acme", "s", fmt.Sprint(i), i+1, step.Message)
		in, _ := runner.FromContract(te, "p")
		out, err := run.Process(context.Background(), def, mem, in)
		if err != nil {
			t.Fatal(err)
		}
		mem = out.State
	}
	sort.Strings(keys)
	return keys
}

// TestServeConversation runs the scripted project-discovery conversation
// through two praetor serve replicas of the extractor and the runner, over
// JetStream and PostgreSQL with the offline provider: every turn reaches
// its phase, the session ends in VALIDATION, the extraction log is the one
// the same script gives in process, every turn is answered once, and
// praetor replay rebuilds the same state.
func TestServeConversation(t *testing.T) {
	c := newCluster(t)
	front := c.serve("gateway,extractor,runner")
	c.serve("extractor,runner")
	script := loadDiscoveryScript(t)

	var sess struct {
		SessionID string `json:"session_id"`
	}
	if code := c.api(front, "POST", "/v1/sessions", map[string]string{"engine_id": "project-discovery", "project_id": "field-app"}, &sess); code != 201 {
		t.Fatalf("create session: %d", code)
	}
	for i, step := range script {
		var turn e2eTurn
		code := c.api(front, "POST", "/v1/sessions/"+sess.SessionID+"/turns?wait=30s", map[string]string{"message": step.Message}, &turn)
		if code != 200 || turn.Status != "answered" {
			t.Fatalf("turn %d: status %d %+v", i+1, code, turn)
		}
		if turn.TurnNumber != i+1 || turn.Phase != step.Phase {
			t.Fatalf("turn %d: number %d, phase %s; want %d, %s", i+1, turn.TurnNumber, turn.Phase, i+1, step.Phase)
		}
	}
	var state struct {
		Phase        string  `json:"phase"`
		Completeness float64 `json:"completeness"`
		TurnCount    int     `json:"turn_count"`
		StateHash    string  `json:"state_hash"`
	}
	c.api(front, "GET", "/v1/sessions/"+sess.SessionID, nil, &state)
	if state.Phase != "VALIDATION" || state.TurnCount != len(script) || state.Completeness < 0.9 {
		t.Fatalf("final state %+v, want VALIDATION after %d turns and completeness >= 0.9", state, len(script))
	}

	var log struct {
		Extractions []e2eExtraction `json:"extractions"`
	}
	c.api(front, "GET", "/v1/sessions/"+sess.SessionID+"/extractions", nil, &log)
	var got []string
	superseded := 0
	for _, e := range log.Extractions {
		got = append(got, e.key())
		if e.SupersededBy != "" {
			superseded++
		}
	}
	sort.Strings(got)
	want := expectedLog(t, script)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("extraction log differs from the in-process run:\n got %d rows\n%s\nwant %d rows\n%s",
			len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	if superseded == 0 {
		t.Error("no log row is linked to the row that superseded it")
	}

	responded := c.eventsOf(contracts.TurnRespondedSpec.Type)
	if len(responded) != len(script) {
		t.Errorf("%d turns have a turn.responded, want %d", len(responded), len(script))
	}
	for id, n := range responded {
		if n != 1 {
			t.Errorf("turn %s answered %d times", id, n)
		}
	}

	// Each turn's model calls are recorded once, named after the turn: a
	// turn redone is answered as recorded (internal/llm/record).
	calls := map[string]int{}
	if err := c.bus.Replay(t.Context(), events.ReplayConfig{Stream: contracts.StreamLLM}, func(r events.Record) error {
		if rec, err := contracts.DecodeAs[contracts.LLMCallRecorded](r.Event); err == nil {
			calls[rec.CallID]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id := range responded {
		for _, purpose := range []string{"extraction", "response"} {
			if n := calls["turn/"+id+"/"+purpose]; n != 1 {
				t.Errorf("turn %s has %d %s calls recorded under its name, want 1 (calls: %v)", id, n, purpose, calls)
			}
		}
	}

	// Under serve the streams are compressed by default (dev's are not),
	// and keep NATS's duplicate window (dev's is shorter).
	if info, err := c.bus.JetStream().Stream(t.Context(), contracts.StreamLLM); err != nil {
		t.Errorf("the LLM stream: %v", err)
	} else {
		if got := info.CachedInfo().Config.Compression; got != jetstream.S2Compression {
			t.Errorf("the LLM stream's compression is %v, want s2 (--stream-compression's default in serve)", got)
		}
		if got := info.CachedInfo().Config.Duplicates; got != 2*time.Minute {
			t.Errorf("the LLM stream's duplicate window is %v, want 2m (--duplicate-window's default in serve)", got)
		}
	}

	out, err := exec.Command(binary, "replay", "--session", sess.SessionID, "--nats-url", c.natsURL).CombinedOutput()
	if err != nil || !strings.Contains(string(out), state.StateHash) {
		t.Fatalf("replay: %v, want the live state hash %s in:\n%s", err, state.StateHash, out)
	}
}

// TestServeConcurrentPosts posts a turn to each of many sessions at once,
// over PostgreSQL, whose serializable transactions fail when they conflict:
// every post is accepted, each turn is in the stream once, and each is
// answered.
func TestServeConcurrentPosts(t *testing.T) {
	c := newCluster(t)
	front := c.serve("gateway,extractor,runner")
	const sessions = 250
	ids := make([]string, sessions)
	for i := range ids {
		var sess struct {
			SessionID string `json:"session_id"`
		}
		if code := c.api(front, "POST", "/v1/sessions", map[string]string{"engine_id": "project-discovery",
			"project_id": fmt.Sprintf("p%d", i)}, &sess); code != 201 {
			t.Fatalf("create session %d: %d", i, code)
		}
		ids[i] = sess.SessionID
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		turns = map[string]bool{}
	)
	for i, id := range ids {
		wg.Go(func() {
			var turn e2eTurn
			code := c.api(front, "POST", "/v1/sessions/"+id+"/turns", map[string]string{
				"message": fmt.Sprintf("We are building an ordering app for bakery number %d.", i)}, &turn)
			if code != http.StatusAccepted {
				t.Errorf("post to session %d: status %d, want 202", i, code)
				return
			}
			mu.Lock()
			turns[turn.TurnID] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		received, responded := c.eventsOf(contracts.TurnReceivedSpec.Type), c.eventsOf(contracts.TurnRespondedSpec.Type)
		done := len(responded) == sessions
		for id := range turns {
			// A turn whose publish timed out is in the outbox, and a relay
			// pass publishes it a moment later: 0 is "not yet".
			if received[id] > 1 || responded[id] > 1 {
				t.Fatalf("turn %s: %d turn.received and %d turn.responded in the stream, want at most 1 each",
					id, received[id], responded[id])
			}
			done = done && received[id] == 1 && responded[id] == 1
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d turns answered after a minute", len(responded), sessions)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestKillDuringTurn kills the only replica handling a turn with SIGKILL,
// once while it extracts and once while it generates the reply, starts
// another, and checks each turn is answered exactly once, with one set of
// extraction rows.
func TestKillDuringTurn(t *testing.T) {
	c := newCluster(t)
	slow := []string{"--llm-offline-latency", "1500ms"}
	front := c.serve("gateway", slow...)
	worker := c.serve("extractor,runner", slow...)

	var sess struct {
		SessionID string `json:"session_id"`
	}
	c.api(front, "POST", "/v1/sessions", map[string]string{"engine_id": "project-discovery"}, &sess)
	messages := []string{
		"Our field technicians keep losing track of their jobs. We want to build a mobile app.",
		"Last month we missed three urgent repairs and lost a big customer.",
	}
	for i, msg := range messages {
		var turn e2eTurn
		if code := c.api(front, "POST", "/v1/sessions/"+sess.SessionID+"/turns", map[string]string{"message": msg}, &turn); code != 202 {
			t.Fatalf("turn %d: %d", i+1, code)
		}
		if i == 1 {
			// Second turn: wait until the extractor committed, so the
			// process dies in the runner's model call.
			deadline := time.Now().Add(20 * time.Second)
			for {
				var log struct {
					Extractions []e2eExtraction `json:"extractions"`
				}
				c.api(front, "GET", "/v1/sessions/"+sess.SessionID+"/extractions", nil, &log)
				n := 0
				for _, e := range log.Extractions {
					if e.TurnNumber == 2 {
						n++
					}
				}
				if n > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("turn 2 was never extracted")
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		worker.Kill(t)
		worker = c.serve("extractor,runner", slow...)

		deadline := time.Now().Add(30 * time.Second)
		for {
			var turns struct {
				Turns []e2eTurn `json:"turns"`
			}
			c.api(front, "GET", "/v1/sessions/"+sess.SessionID+"/turns", nil, &turns)
			if len(turns.Turns) == i+1 && turns.Turns[i].Status == "answered" {
				if turns.Turns[i].TurnNumber != i+1 {
					t.Fatalf("turn %d answered as number %d", i+1, turns.Turns[i].TurnNumber)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("turn %d not answered after the restart: %+v", i+1, turns.Turns)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// A turn is saved answered before its turn.responded is published:
	// wait for both turns' events to reach the stream.
	var responded, extracted map[string]int
	deadline := time.Now().Add(30 * time.Second)
	for {
		responded, extracted = c.eventsOf(contracts.TurnRespondedSpec.Type), c.eventsOf(contracts.TurnExtractedSpec.Type)
		if len(responded) >= len(messages) && len(extracted) >= len(messages) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("turns with a turn.responded %v, with a turn.extracted %v; want %d of each", responded, extracted, len(messages))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for id, n := range responded {
		if n != 1 {
			t.Errorf("turn %s answered %d times", id, n)
		}
	}
	for id, n := range extracted {
		if n != 1 {
			t.Errorf("turn %s extracted %d times", id, n)
		}
	}
	if len(responded) != len(messages) || len(extracted) != len(messages) {
		t.Errorf("turns with a turn.responded %v, with a turn.extracted %v; want %d of each", responded, extracted, len(messages))
	}
	var state struct {
		TurnCount int `json:"turn_count"`
	}
	c.api(front, "GET", "/v1/sessions/"+sess.SessionID, nil, &state)
	if state.TurnCount != len(messages) {
		t.Fatalf("turn count %d, want %d", state.TurnCount, len(messages))
	}
}
