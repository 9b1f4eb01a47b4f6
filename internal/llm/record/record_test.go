package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// memPublisher keeps published events; fail, when set, refuses them.
type memPublisher struct {
	mu     sync.Mutex
	events []event.Event
	fail   error
	ctxErr []error
}

func (p *memPublisher) Publish(ctx context.Context, ev event.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctxErr = append(p.ctxErr, ctx.Err())
	if p.fail != nil {
		return p.fail
	}
	// The recorder reuses the data's buffer once Publish has returned
	// (Publisher): keep a copy.
	ev.DataEncoded = bytes.Clone(ev.DataEncoded)
	p.events = append(p.events, ev)
	return nil
}

func (p *memPublisher) published() []event.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]event.Event(nil), p.events...)
}

// model is a fake model that never answers the same way twice, like a real
// one at a non-zero temperature, and fails when a message says "fail".
type model struct {
	mu    sync.Mutex
	calls int
	// during runs inside each call.
	during func()
}

func (m *model) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.mu.Unlock()
	if m.during != nil {
		m.during()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	last := req.Messages[len(req.Messages)-1].Content
	if strings.Contains(last, "fail") {
		return nil, &llm.APIError{Provider: "fake", Status: 429, Err: llm.ErrRateLimited, Retryable: true, Attempts: 4, Message: "slow down"}
	}
	return &llm.Response{
		Content:      fmt.Sprintf("answer %d to %q", n, last),
		Usage:        llm.Usage{PromptTokens: 10 + n, CompletionTokens: n, TotalTokens: 10 + 2*n},
		Latency:      time.Duration(n) * time.Millisecond,
		Model:        "fake-1",
		Provider:     "fake",
		FinishReason: "stop",
	}, nil
}

func (m *model) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

func ask(tenant, scope, msg string) llm.Request {
	return llm.Request{TenantID: tenant, Scope: scope, Purpose: "response",
		Messages: []llm.Message{{Role: llm.User, Content: msg}}}
}

// script is a run: two scopes interleaved, a request repeated within a
// scope, the same request in another scope, a failure, and an unowned call.
func script() []llm.Request {
	return []llm.Request{
		ask("acme", "s1", "hello"),
		ask("acme", "s2", "hello"),
		ask("acme", "s1", "what next?"),
		ask("acme", "s1", "hello"), // same hash as the first, same scope
		ask("acme", "s2", "please fail"),
		ask("", "", "who owns me?"),
		ask("acme", "s1", "hello"),
	}
}

type outcome struct {
	resp *llm.Response
	err  error
}

func run(t *testing.T, c llm.Client, reqs []llm.Request) []outcome {
	t.Helper()
	out := make([]outcome, len(reqs))
	for i, req := range reqs {
		resp, err := c.Complete(t.Context(), req)
		out[i] = outcome{resp, err}
	}
	return out
}

func newRecorder(t *testing.T, next llm.Client, pub Publisher, cfg Config) *Recorder {
	t.Helper()
	r, err := NewRecorder(next, pub, cfg)
	if err != nil {
		t.Fatalf("NewRecorder: %v", err)
	}
	return r
}

func TestRecordThenReplay(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	m := &model{}
	rec := newRecorder(t, m, pub, Config{})
	live := run(t, rec, script())

	evs := pub.published()
	if len(evs) != len(script()) {
		t.Fatalf("published %d events, want one per call (%d)", len(evs), len(script()))
	}
	for i, ev := range evs {
		if err := contracts.Validate(ev); err != nil {
			t.Errorf("event %d breaks its contract: %v", i, err)
		}
	}

	rp, err := NewReplayerFromEvents(evs)
	if err != nil {
		t.Fatalf("NewReplayerFromEvents: %v", err)
	}
	callsBefore := m.count()
	replayed := run(t, rp, script())
	if m.count() != callsBefore {
		t.Error("the replay called the model")
	}
	for i := range live {
		l, r := live[i], replayed[i]
		if (l.err == nil) != (r.err == nil) {
			t.Fatalf("call %d: live err %v, replay err %v", i, l.err, r.err)
		}
		if l.err != nil {
			if llm.Outcome(l.err) != llm.Outcome(r.err) || !errors.Is(r.err, llm.ErrRateLimited) {
				t.Errorf("call %d: replayed failure %v, want the category of %v", i, r.err, l.err)
			}
			if !strings.Contains(r.err.Error(), "slow down") {
				t.Errorf("call %d: replayed failure %q lost the message", i, r.err)
			}
			continue
		}
		want := *l.resp
		if *r.resp != want {
			t.Errorf("call %d:\nreplay %+v\nlive   %+v", i, *r.resp, want)
		}
	}
	if n := rp.Remaining(); n != 0 {
		t.Errorf("%d records left unserved", n)
	}

	// One call more than the run made, and a call it never made.
	_, err = rp.Complete(t.Context(), ask("acme", "s1", "hello"))
	var nre *NotRecordedError
	if !errors.As(err, &nre) || !errors.Is(err, ErrNotRecorded) || nre.Served != 3 {
		t.Errorf("extra call: err = %v, want NotRecorded after 3 served", err)
	}
	_, err = rp.Complete(t.Context(), ask("acme", "s1", "never asked"))
	if !errors.As(err, &nre) || nre.Served != 0 {
		t.Errorf("unknown call: err = %v, want NotRecorded with none served", err)
	}
	// The same request in another tenant is another call.
	_, err = rp.Complete(t.Context(), ask("other", "s1", "hello"))
	if !errors.Is(err, ErrNotRecorded) {
		t.Errorf("other tenant: err = %v, want ErrNotRecorded", err)
	}
}

func TestRecordedEvent(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := newRecorder(t, &model{}, pub, Config{Now: func() time.Time { return at }})
	req := ask("acme", "session-9", "hello")
	resp, err := rec.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	ev := pub.published()[0]
	subject, err := contracts.Subject(ev)
	if err != nil || subject != "praetor.llm.call.acme.session-9" {
		t.Errorf("subject = %q, %v", subject, err)
	}
	if ev.Source() != DefaultSource || !ev.Time().Equal(at) || ev.Type() != contracts.LLMCallRecordedSpec.Type {
		t.Errorf("event attributes: source %q time %s type %q", ev.Source(), ev.Time(), ev.Type())
	}
	got, err := contracts.DecodeAs[contracts.LLMCallRecorded](ev)
	if err != nil {
		t.Fatal(err)
	}
	want := contracts.LLMCallRecorded{
		TenantID: "acme", Scope: "session-9", RequestHash: llm.Hash(req), Provider: "fake", Model: "fake-1",
		Purpose: "response", Content: resp.Content, Usage: contracts.LLMUsage(resp.Usage), Latency: resp.Latency,
		FinishReason: resp.FinishReason,
	}
	if string(got.Request) != string(llm.CanonicalJSON(req)) {
		t.Errorf("request = %s, want the canonical request", got.Request)
	}
	got.Request = nil
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("record:\n got %+v\nwant %+v", *got, want)
	}

	// Unowned calls go to the defaults.
	if _, err := rec.Complete(t.Context(), ask("", "", "hi")); err != nil {
		t.Fatal(err)
	}
	subject, _ = contracts.Subject(pub.published()[1])
	if subject != "praetor.llm.call."+DefaultTenant+"."+DefaultScope {
		t.Errorf("unowned call subject = %q", subject)
	}
}

func TestOmitRequest(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	rec := newRecorder(t, &model{}, pub, Config{OmitRequest: true})
	if _, err := rec.Complete(t.Context(), ask("acme", "s", "secret prompt")); err != nil {
		t.Fatal(err)
	}
	got, _ := contracts.DecodeAs[contracts.LLMCallRecorded](pub.published()[0])
	if len(got.Request) != 0 || got.RequestHash == "" {
		t.Errorf("record keeps request %s, hash %q; want only the hash", got.Request, got.RequestHash)
	}
}

func ids(evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID()
	}
	return out
}

func TestEventIDs(t *testing.T) {
	t.Parallel()
	// Two fresh recorders (two processes) running the same work publish the
	// same ids, though the model answers differently.
	pubA, pubB := &memPublisher{}, &memPublisher{}
	run(t, newRecorder(t, &model{}, pubA, Config{}), script())
	m := &model{}
	m.calls = 100
	run(t, newRecorder(t, m, pubB, Config{}), script())
	a, b := ids(pubA.published()), ids(pubB.published())
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("ids differ between runs:\n%v\n%v", a, b)
	}
	unique := map[string]bool{}
	for _, id := range a {
		unique[id] = true
	}
	if len(unique) != len(a) {
		t.Errorf("ids within a run repeat: %v", a)
	}

	// With a CallID a repeated call keeps its id (the stream drops it);
	// without one it gets a new id.
	pub := &memPublisher{}
	rec := newRecorder(t, &model{}, pub, Config{})
	withID := ask("acme", "s1", "hello")
	withID.CallID = "turn-7/response"
	for range 2 {
		if _, err := rec.Complete(t.Context(), withID); err != nil {
			t.Fatal(err)
		}
	}
	got := ids(pub.published())
	if got[0] != got[1] {
		t.Errorf("a repeated CallID got ids %v, want one id", got)
	}
	otherScope := withID
	otherScope.Scope = "s2"
	rec.Complete(t.Context(), otherScope)
	if got := ids(pub.published()); got[2] == got[0] {
		t.Error("the same CallID in another scope shares an id")
	}
}

func TestMaxTrackedForgets(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	rec := newRecorder(t, &model{}, pub, Config{MaxTracked: 2})
	for _, msg := range []string{"a", "a", "b", "a"} {
		rec.Complete(t.Context(), ask("t", "s", msg))
	}
	got := ids(pub.published())
	// After a, a and b the table holds two keys and is full, so it is
	// cleared before the last a, which counts from 0 again.
	if got[3] != got[0] {
		t.Errorf("ids %v: want the counters forgotten once full", got)
	}
}

func TestInvalidOwner(t *testing.T) {
	t.Parallel()
	m := &model{}
	rec := newRecorder(t, m, &memPublisher{}, Config{})
	for _, req := range []llm.Request{ask("acme.corp", "s", "x"), ask("acme", "session 1", "x"), ask("acme", "a>b", "x")} {
		_, err := rec.Complete(t.Context(), req)
		if !errors.Is(err, ErrInvalidOwner) || !strings.Contains(err.Error(), "[A-Za-z0-9_-]") {
			t.Errorf("tenant %q scope %q: err = %v, want ErrInvalidOwner naming the rule", req.TenantID, req.Scope, err)
		}
	}
	if m.count() != 0 {
		t.Error("the model was called for a call that cannot be recorded")
	}
}

func TestPublishFailure(t *testing.T) {
	t.Parallel()
	broken := errors.New("nats: no responders")
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			rec := newRecorder(t, &model{}, &memPublisher{fail: broken}, Config{Strict: strict, Registerer: reg})
			resp, err := rec.Complete(t.Context(), ask("acme", "s", "hello"))
			if strict {
				if !errors.Is(err, ErrRecordFailed) || !errors.Is(err, broken) || resp != nil {
					t.Errorf("strict: resp %v err %v, want no answer and ErrRecordFailed", resp, err)
				}
			} else if err != nil || resp == nil || resp.Content == "" {
				t.Errorf("lenient: resp %v err %v, want the answer", resp, err)
			}
			if n, err := testutil.GatherAndCount(reg, MetricRecordFailures); err != nil || n != 1 {
				t.Fatalf("failure metric series = %d, %v", n, err)
			}
			mfs, _ := reg.Gather()
			if v := mfs[0].GetMetric()[0].GetCounter().GetValue(); v != 1 {
				t.Errorf("%s = %v, want 1", MetricRecordFailures, v)
			}
		})
	}
}

func TestStrictKeepsTheCallError(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, &model{}, &memPublisher{fail: errors.New("down")}, Config{Strict: true})
	_, err := rec.Complete(t.Context(), ask("acme", "s", "please fail"))
	if !errors.Is(err, ErrRecordFailed) || !errors.Is(err, llm.ErrRateLimited) {
		t.Errorf("err = %v, want both the record failure and the call's", err)
	}
}

func TestCanceledCallsAreNotRecorded(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	ctx, cancel := context.WithCancel(t.Context())
	m := &model{during: cancel}
	rec := newRecorder(t, m, pub, Config{})
	if _, err := rec.Complete(ctx, ask("acme", "s", "hello")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(pub.published()); n != 0 {
		t.Errorf("published %d records of a canceled call", n)
	}
}

func TestPublishOutlivesTheCaller(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	ctx, cancel := context.WithCancel(t.Context())
	// The model answers, and the caller's context ends as it does.
	m := &answerThenCancel{cancel: cancel}
	rec := newRecorder(t, m, pub, Config{})
	if _, err := rec.Complete(ctx, ask("acme", "s", "hello")); err != nil {
		t.Fatal(err)
	}
	if len(pub.published()) != 1 || pub.ctxErr[0] != nil {
		t.Errorf("publish saw context error %v, want a live context", pub.ctxErr)
	}
}

type answerThenCancel struct{ cancel func() }

func (a *answerThenCancel) Complete(context.Context, llm.Request) (*llm.Response, error) {
	a.cancel()
	return &llm.Response{Content: "ok", Provider: "fake", Model: "m"}, nil
}

func TestReplayerFromEventsSkipsAndDedups(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	rec := newRecorder(t, &model{}, pub, Config{})
	req := ask("acme", "s", "hello")
	req.CallID = "c1"
	rec.Complete(t.Context(), req)
	rec.Complete(t.Context(), req) // a redelivered call: same id
	other := contracts.MustEvent(contracts.Meta{}, contracts.TurnReceived{TenantID: "acme", SessionID: "s", TurnID: "t", Message: "m"})
	evs := append(pub.published(), other)
	rp, err := NewReplayerFromEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Remaining() != 1 {
		t.Errorf("Remaining = %d, want 1 (duplicate id and other types skipped)", rp.Remaining())
	}
	// Of the two copies of the id (the call redone past the duplicate
	// window, which stored the second), the last is served: the answer the
	// work that committed used.
	if resp, err := rp.Complete(t.Context(), req); err != nil || resp.Content != `answer 2 to "hello"` {
		t.Errorf("served %+v, %v; want the second copy's answer 2", resp, err)
	}

	bad := pub.published()[0].Clone()
	bad.SetID("broken")
	bad.SetData(event.ApplicationJSON, map[string]any{"tenant_id": "acme"})
	if _, err := NewReplayerFromEvents([]event.Event{bad}); !errors.Is(err, contracts.ErrContract) {
		t.Errorf("broken record: err = %v, want a contract violation", err)
	}
}

func TestReplayerConcurrent(t *testing.T) {
	t.Parallel()
	var records []contracts.LLMCallRecorded
	req := ask("acme", "s", "hello")
	for i := range 50 {
		records = append(records, contracts.LLMCallRecorded{TenantID: "acme", Scope: "s", RequestHash: llm.Hash(req),
			Provider: "fake", Content: fmt.Sprint(i)})
	}
	rp := NewReplayer(records)
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for range 50 {
		wg.Go(func() {
			resp, err := rp.Complete(t.Context(), req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[resp.Content] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != 50 || rp.Remaining() != 0 {
		t.Errorf("served %d distinct records, %d left; want each of 50 once", len(seen), rp.Remaining())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := rp.Complete(ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled replay: err = %v", err)
	}
}

func TestOwnerFromContext(t *testing.T) {
	pub := &memPublisher{}
	rec, err := NewRecorder(&model{}, pub, Config{Provider: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := llm.WithOwner(context.Background(), "acme", "session-7")
	req := llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "summarize"}}, Purpose: "summarize"}
	if _, err := rec.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, err := contracts.DecodeAs[contracts.LLMCallRecorded](pub.published()[0])
	if err != nil || got.TenantID != "acme" || got.Scope != "session-7" {
		t.Fatalf("record = %+v, %v; want the context's owner", got, err)
	}
	rp := NewReplayer([]contracts.LLMCallRecorded{*got})
	if _, err := rp.Complete(context.Background(), req); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("replay without the owner: err = %v, want ErrNotRecorded", err)
	}
	if _, err := rp.Complete(ctx, req); err != nil {
		t.Fatalf("replay under the owner: %v", err)
	}
}

// Each record keeps its own request, byte for byte, after later calls: the
// canonical form is encoded into a reused buffer, which a record must never
// share.
func TestRecordsKeepTheirRequests(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	rec := newRecorder(t, &model{}, pub, Config{})
	var reqs []llm.Request
	for i := range 20 {
		req := ask("acme", "s1", fmt.Sprintf("message %d %s", i, strings.Repeat("x", 100*(20-i))))
		reqs = append(reqs, req)
		if _, err := rec.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	evs := pub.published()
	if len(evs) != len(reqs) {
		t.Fatalf("published %d records, want %d", len(evs), len(reqs))
	}
	for i, ev := range evs {
		var got struct {
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(ev.Data(), &got); err != nil {
			t.Fatal(err)
		}
		if want := llm.CanonicalJSON(reqs[i]); !bytes.Equal(got.Request, want) {
			t.Fatalf("record %d holds request %.80s..., want %.80s...", i, got.Request, want)
		}
	}
}

// A call the replayer cannot serve is named as the replay made it, beside
// the request the live run recorded under the same call id, and Missed
// reports the first such call once.
func TestReplayerNamesTheCallItMissed(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	rec := newRecorder(t, &model{}, pub, Config{})
	ctx := llm.WithWork(t.Context(), "turn/t1")
	if _, err := rec.Complete(ctx, ask("acme", "s1", "hello")); err != nil {
		t.Fatal(err)
	}
	rp, err := NewReplayerFromEvents(pub.published())
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.Missed(); err != nil {
		t.Errorf("Missed before any call = %v, want nil", err)
	}
	_, err = rp.Complete(ctx, ask("acme", "s1", "hello, edited"))
	var nre *NotRecordedError
	live := llm.Hash(ask("acme", "s1", "hello"))
	if !errors.As(err, &nre) || nre.CallID != "turn/t1/response" || nre.LiveHash != live || nre.Purpose != "response" ||
		!strings.Contains(err.Error(), "which asked request "+live) {
		t.Fatalf("edited call: %v (%+v), want the live request %s named", err, nre, live)
	}
	_, _ = rp.Complete(llm.WithWork(t.Context(), "turn/t2"), ask("acme", "s1", "never asked"))
	if got := rp.Missed(); !errors.Is(got, ErrNotRecorded) || !strings.Contains(got.Error(), "turn/t1/response") {
		t.Errorf("Missed = %v, want the first call missed (turn/t1)", got)
	}
	if got := rp.Missed(); got != nil {
		t.Errorf("Missed again = %v, want nil: it was reported", got)
	}
}

// A replayer holds the answers, not the prompts: a long session's requests
// are hundreds of megabytes, and replay finds each answer by its hash.
func TestReplayerKeepsNoRequests(t *testing.T) {
	req := llm.Request{Purpose: "response", Messages: []llm.Message{{Role: llm.User, Content: strings.Repeat("a long prompt ", 1000)}}}
	rec := contracts.LLMCallRecorded{TenantID: "acme", Scope: "sess-1", RequestHash: llm.Hash(req), Purpose: "response",
		Request: json.RawMessage(`{"purpose":"response"}`), Content: "Hello.", Provider: "fake", Model: "m"}
	r := NewReplayer([]contracts.LLMCallRecorded{rec})
	for k, q := range r.queues {
		for _, got := range q {
			if got.Request != nil {
				t.Errorf("queue %s holds the request (%d bytes)", k, len(got.Request))
			}
		}
	}
	resp, err := r.Complete(llm.WithOwner(t.Context(), "acme", "sess-1"), req)
	if err != nil || resp.Content != "Hello." {
		t.Fatalf("Complete = %+v, %v; want the recorded answer", resp, err)
	}
}

type refusingModel struct{}

func (refusingModel) Complete(context.Context, llm.Request) (*llm.Response, error) {
	return nil, &llm.APIError{Provider: "openai", Model: "gpt-4o-mini", Status: 401, Err: llm.ErrUnauthorized,
		Message: "Incorrect API key provided: sk-xxxxx."}
}

// A failed call's record names the model the provider asked, not the
// request's empty one (the provider's default).
func TestFailedCallRecordsTheProvidersModel(t *testing.T) {
	t.Parallel()
	pub := &memPublisher{}
	r := newRecorder(t, refusingModel{}, pub, Config{})
	if _, err := r.Complete(t.Context(), ask("t1", "s1", "hello")); err == nil {
		t.Fatal("no error")
	}
	evs := pub.published()
	if len(evs) != 1 {
		t.Fatalf("%d records, want 1", len(evs))
	}
	rec, err := contracts.DecodeAs[contracts.LLMCallRecorded](evs[0])
	if err != nil || rec.Model != "gpt-4o-mini" || rec.Provider != "openai" {
		t.Errorf("record %+v, %v; want model gpt-4o-mini of openai", rec, err)
	}
}
