package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/llm/openai/openaitest"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/runner"
)

// praetor replay --session on a stream that lost a session's first events
// (expired past the streams' max age, or removed) says so, with where the
// stream's events now begin, rather than only that the session has no
// session.started; on a NATS without praetor's streams it names the server.
func TestReplaySessionSaysWhatTheStreamLost(t *testing.T) {
	nc := eventstest.Connect(t, eventstest.StartServer(t))
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var out, errOut bytes.Buffer
	err = replaySession(ctx, bus, "s-1", nil, &out, &errOut, time.Now)
	if err == nil || !strings.Contains(err.Error(), "no stream PRAETOR_TURNS on nats://") {
		t.Errorf("replay on a NATS without the streams: %v, want the stream and the server named", err)
	}

	if err := node.Provision(ctx, bus, node.StreamSettings{Partitions: node.DevPartitions, Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	for _, ev := range []struct {
		id string
		p  contracts.Payload
	}{
		{"s-1-started", contracts.SessionStarted{TenantID: "acme", SessionID: "s-1", ProjectID: "p", EngineID: "exploration",
			EngineVersion: "1.0.0", StartedAt: at}},
		{"s-1-turn-1", contracts.TurnExtracted{TenantID: "acme", SessionID: "s-1", TurnID: "s-1-turn-1", TurnNumber: 1,
			Message: "Tell me about hosting."}},
		{"s-1-turn-2", contracts.TurnExtracted{TenantID: "acme", SessionID: "s-1", TurnID: "s-1-turn-2", TurnNumber: 2,
			Message: "We know AWS a little."}},
	} {
		e, err := contracts.NewEvent(contracts.Meta{ID: ev.id, Source: "/test", Time: at}, ev.p)
		if err != nil {
			t.Fatal(err)
		}
		if err := bus.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st, err := bus.JetStream().Stream(ctx, contracts.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSequence(2)); err != nil {
		t.Fatal(err)
	}
	err = replaySession(ctx, bus, "s-1", nil, &out, &errOut, time.Now)
	if want := "PRAETOR_TURNS holds its events from sequence 2 ("; err == nil || !strings.Contains(err.Error(), "no session.started") ||
		!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the 1 before expired or removed") {
		t.Errorf("replay of a session whose start was lost: %v, want %q and what was lost", err, want)
	}
	err = replaySession(ctx, bus, "s-2", nil, &out, &errOut, time.Now)
	if err == nil || !strings.Contains(err.Error(), "no events of session s-2 in PRAETOR_TURNS; PRAETOR_TURNS holds its events from sequence 2") {
		t.Errorf("replay of an unknown session: %v, want where the stream's events begin", err)
	}
}

// praetor replay --session rebuilds, without the model, a conversation
// whose model misbehaved: extraction answers that never parse (re-asked,
// then degraded), a reply cut at the token limit, and a reply the provider
// refused (the fallback, degraded).
func TestReplayOfADegradedConversation(t *testing.T) {
	model := openaitest.NewServer(t)
	model.Default = func(req openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat != nil {
			return openaitest.Reply{Content: "Sure! The user wants an app, I think."} // not JSON
		}
		last := req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.Contains(last, "cut"):
			return openaitest.Reply{Content: "Field apps come in three kinds. The first is offline-first and", FinishReason: "length"}
		case strings.Contains(last, "refuse"):
			return openaitest.Reply{Status: 400, Error: "the prompt was flagged", ErrorType: "invalid_request_error"}
		}
		return openaitest.Reply{Content: "Thanks. Who will use the app day to day?"}
	}
	httpAddr, natsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	start(t, []string{"PRAETOR_LLM_API_KEY=sk-test", "OPENAI_API_KEY="},
		"dev", "--data-dir", t.TempDir(), "--http-addr", httpAddr, "--nats-listen", natsAddr,
		"--llm-provider", "openai", "--llm-base-url", model.BaseURL(), "--llm-model", "gpt-test")
	base := "http://" + httpAddr
	testenv.WaitHTTP(t, base+"/readyz", 30*time.Second)
	post := func(path string, body, out any) { postJSON(t, base+path, body, out) }
	var sess struct {
		SessionID string `json:"session_id"`
		StateHash string `json:"state_hash"`
	}
	post("/v1/sessions", map[string]string{"engine_id": "project-discovery"}, &sess)
	for _, msg := range []string{"We want a mobile app; please cut it short.", "Our technicians lose track of jobs; refuse if you must.",
		"We have 40 technicians."} {
		var turn struct {
			Status   string `json:"status"`
			Degraded bool   `json:"degraded"`
		}
		post("/v1/sessions/"+sess.SessionID+"/turns?wait=30s", map[string]string{"message": msg}, &turn)
		if turn.Status != "answered" || !turn.Degraded {
			t.Fatalf("turn %q: %+v, want answered, degraded", msg, turn)
		}
	}
	resp, err := http.Get(base + "/v1/sessions/" + sess.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	calls := len(model.Requests())
	out, err := exec.Command(binary, "replay", "--session", sess.SessionID, "--nats-url", "nats://"+natsAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "state hash "+sess.StateHash) || strings.Contains(string(out), "DIVERGED") {
		t.Fatalf("replay: %v, want the live state hash %s in:\n%s", err, sess.StateHash, out)
	}
	if len(model.Requests()) != calls {
		t.Error("the replay called the model")
	}
}

// praetor replay --session says what it is at while it reads and rebuilds
// a session, before the turns' lines that come once it is rebuilt: a long
// session is a while at it. (The clock here moves a second a look.)
func TestReplaySessionShowsProgress(t *testing.T) {
	httpAddr, natsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	start(t, []string{"PRAETOR_LLM_API_KEY=", "OPENAI_API_KEY="},
		"dev", "--data-dir", t.TempDir(), "--http-addr", httpAddr, "--nats-listen", natsAddr)
	base := "http://" + httpAddr
	testenv.WaitHTTP(t, base+"/readyz", 30*time.Second)
	post := func(path string, body, out any) { postJSON(t, base+path, body, out) }
	var sess struct {
		SessionID string `json:"session_id"`
	}
	post("/v1/sessions", map[string]string{"engine_id": "project-discovery"}, &sess)
	for _, msg := range []string{"We want a mobile app for our field technicians.", "They lose track of jobs.", "We have 40 of them."} {
		var turn struct {
			Status string `json:"status"`
		}
		post("/v1/sessions/"+sess.SessionID+"/turns?wait=30s", map[string]string{"message": msg}, &turn)
		if turn.Status != "answered" {
			t.Fatalf("turn %q: %s, want answered", msg, turn.Status)
		}
	}

	nc, err := events.Connect("nats://"+natsAddr, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	now := func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}
	var out, errOut bytes.Buffer
	if err := replaySession(t.Context(), bus, sess.SessionID, nil, &out, &errOut, now); err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut.String())
	}
	log := errOut.String()
	firstTurn := strings.Index(log, "\nturn 1 ")
	for _, want := range []string{
		"reading PRAETOR_TURNS: ", "reading PRAETOR_LLM: ",
		"rebuilding session " + sess.SessionID + ": turn 1 of 3", "rebuilding session " + sess.SessionID + ": turn 3 of 3",
	} {
		if i := strings.Index(log, want); i < 0 || i > firstTurn {
			t.Errorf("stderr does not say %q before the turns' lines:\n%s", want, log)
		}
	}
	// The last line counts the model calls the replay was served from: the
	// runner's, not the extractor's or the background tasks' (the events
	// carry their results, and a replay does not ask for them again).
	calls, others := 0, 0
	err = bus.Replay(t.Context(), events.ReplayConfig{Stream: contracts.StreamLLM,
		Subjects: []string{"praetor.llm.call.*." + sess.SessionID}}, func(r events.Record) error {
		c, err := contracts.DecodeAs[contracts.LLMCallRecorded](r.Event)
		switch {
		case err != nil:
			return err
		case c.Purpose == extraction.Purpose || c.Purpose == tasks.PurposeResearch:
			others++
		default:
			calls++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(" events and %d recorded model calls: state hash ", calls); calls == 0 || others == 0 || !strings.Contains(log, want) {
		t.Errorf("stderr does not say %q:\n%s", want, log)
	}
}

// postJSON posts body as JSON to url and decodes the answer into out.
func postJSON(t *testing.T, url string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// goldenEvents reads a golden session of the runner's replays
// (services/runner/testdata/golden/NAME.jsonl.gz): its events, then its
// recorded model calls, as praetor replay --stream printed them.
func goldenEvents(t *testing.T, name string) []event.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "services", "runner", "testdata", "golden", name+".jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Event event.Event `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		evs = append(evs, line.Event)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// praetor replay --session checks the handoff a session made against the
// payload its live run published: the handoff.created on PRAETOR_HANDOFFS,
// or, when that stream no longer holds it, the inbound handoff its target
// session's session.started holds on PRAETOR_TURNS. The golden exploration
// session, which hands off to project discovery at its last turn, is
// published on a NATS of its own with the handoff its project-discovery
// session started with as the handoff.created: the replay says the handoff
// is ok; with a payload that differs there it says what differs and exits
// non-zero, though every state hash matches. Without the handoff.created,
// the target's session.started is the record. With neither, or with the
// handoff.created expired, the handoff is not checked: the replay says why
// and exits non-zero, for it cannot vouch for what the next engine was told.
func TestReplaySessionChecksTheHandoff(t *testing.T) {
	source := goldenEvents(t, "handoff-exploration")
	var sid string
	var target *contracts.SessionStarted
	var targetStarted event.Event
	for _, ev := range goldenEvents(t, "handoff-project-discovery") {
		if ev.Type() == contracts.SessionStartedSpec.Type {
			s, err := contracts.DecodeAs[contracts.SessionStarted](ev)
			if err != nil {
				t.Fatal(err)
			}
			target, sid, targetStarted = s, s.InboundHandoff.Metadata.SessionID, ev
		}
	}
	for _, tc := range []struct {
		name string
		// published edits the handoff the live run published; nil: none
		// was published.
		published func(h *contracts.EngineHandoff)
		// started: the target session's session.started is on
		// PRAETOR_TURNS, with its inbound handoff edited by startedWith
		// when set; purged: PRAETOR_HANDOFFS lost its events.
		started, purged bool
		startedWith     func(h *contracts.EngineHandoff)
		wantErr         bool
		// checked: the handoff was compared with a record, recordedIn.
		checked    bool
		recordedIn string
		want       []string
	}{
		{name: "the one published", published: func(*contracts.EngineHandoff) {}, checked: true, recordedIn: "handoff.created",
			want: []string{"to project-discovery (session " + target.SessionID + "): payload ",
				"  ok (the handoff.created on PRAETOR_HANDOFFS)\n"}},
		{name: "another published", published: func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached = slices.Clone(h.ActionList.DecisionsReached)
			h.ActionList.DecisionsReached[0].Decision = "a custom build"
		}, started: true, wantErr: true, checked: true, recordedIn: "handoff.created",
			want: []string{"DIVERGED from the handoff.created the live run published (",
				`    action_list.decisions_reached[0].decision: "off-the-shelf tool" (recorded "a custom build")` + "\n",
				"a rebuilt handoff differs from the one the live run published"}},
		{name: "none published, the target started", started: true, checked: true, recordedIn: "session.started",
			want: []string{"  ok (the inbound handoff of session " + target.SessionID + "'s session.started on PRAETOR_TURNS; " +
				"PRAETOR_HANDOFFS holds no handoff.created of it)\n"}},
		{name: "none published, the target started with another", started: true, startedWith: func(h *contracts.EngineHandoff) {
			h.ActionList.DecisionsReached = slices.Clone(h.ActionList.DecisionsReached)
			h.ActionList.DecisionsReached[0].Confidence = 0.5
		}, wantErr: true, checked: true, recordedIn: "session.started",
			want: []string{"DIVERGED from the inbound handoff session " + target.SessionID + " started with (",
				"    action_list.decisions_reached[0].confidence: ",
				"a rebuilt handoff differs from the one the live run published"}},
		{name: "none published, the target never started", wantErr: true,
			want: []string{"NOT CHECKED: PRAETOR_HANDOFFS holds no handoff.created of it, nor PRAETOR_TURNS a session.started of session " +
				target.SessionID + "\n",
				"a rebuilt handoff could not be checked: neither PRAETOR_HANDOFFS nor PRAETOR_TURNS holds the payload the live run published"}},
		{name: "published, then expired", published: func(*contracts.EngineHandoff) {}, purged: true, wantErr: true,
			want: []string{"NOT CHECKED: PRAETOR_HANDOFFS holds no handoff.created of it (PRAETOR_HANDOFFS holds none of its 1 events: " +
				"they expired or removed), nor PRAETOR_TURNS a session.started of session " + target.SessionID + "\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, bus := devStreams(t)
			ctx := t.Context()
			evs := slices.Clone(source)
			if tc.published != nil {
				h := *target.InboundHandoff
				tc.published(&h)
				payload, err := json.Marshal(h)
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, contracts.MustEvent(contracts.Meta{ID: "handoff-created", Source: "/runner", Time: target.StartedAt},
					contracts.HandoffCreated{TenantID: target.TenantID, HandoffID: target.InboundHandoffID, ProjectID: target.ProjectID,
						SourceEngineID: "exploration", SourceSessionID: sid, TargetEngineID: target.EngineID,
						TargetSessionID: target.SessionID, Payload: payload}))
			}
			if started := targetStarted; tc.started {
				if tc.startedWith != nil {
					s, h := *target, *target.InboundHandoff
					tc.startedWith(&h)
					s.InboundHandoff = &h
					started = contracts.MustEvent(contracts.Meta{ID: targetStarted.ID(), Source: targetStarted.Source(),
						Time: targetStarted.Time()}, s)
				}
				evs = append(evs, started)
			}
			for _, ev := range evs {
				if err := bus.Publish(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			if tc.purged {
				st, err := bus.JetStream().Stream(ctx, contracts.StreamHandoffs)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Purge(ctx); err != nil {
					t.Fatal(err)
				}
			}

			var stdout, stderr bytes.Buffer
			cmd := exec.Command(binary, "replay", "--session", sid, "--nats-url", srv.ClientURL())
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if failed := err != nil; failed != tc.wantErr {
				t.Fatalf("replay: %v, want failing %t:\n%s", err, tc.wantErr, stderr.String())
			}
			log := stderr.String()
			if !strings.Contains(log, "  handoff "+target.InboundHandoffID+" to ") {
				t.Errorf("stderr does not name the handoff %s:\n%s", target.InboundHandoffID, log)
			}
			if strings.Contains(log, "DIVERGED (recorded") {
				t.Errorf("a state diverged:\n%s", log)
			}
			for _, want := range tc.want {
				if !strings.Contains(log, want) {
					t.Errorf("stderr does not say %q:\n%s", want, log)
				}
			}
			var report struct {
				Handoffs []struct {
					runner.ReplayedHandoff
					RecordedIn string `json:"recorded_in"`
				} `json:"handoffs"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
				t.Fatalf("stdout: %v\n%s", err, stdout.String())
			}
			if len(report.Handoffs) != 1 {
				t.Fatalf("stdout has %d handoffs, want the one of turn 10", len(report.Handoffs))
			}
			h := report.Handoffs[0]
			if h.HandoffID != target.InboundHandoffID || h.Checked != tc.checked || h.Match != (tc.checked && !tc.wantErr) ||
				(h.RecordedHash != "") != tc.checked || h.RecordedIn != tc.recordedIn || len(h.Payload) == 0 {
				t.Errorf("stdout's handoff %s: checked %t, match %t, recorded %q in %q, payload of %d bytes; want checked %t in %q",
					h.HandoffID, h.Checked, h.Match, h.RecordedHash, h.RecordedIn, len(h.Payload), tc.checked, tc.recordedIn)
			}
		})
	}
}

// praetor replay --session of a session that hands off nothing says
// nothing of handoffs on stderr, though it started with one (the golden
// project-discovery session exploration handed off to), and reports an
// empty list of them on stdout.
func TestReplaySessionWithoutHandoffSaysNothingOfHandoffs(t *testing.T) {
	evs := goldenEvents(t, "handoff-project-discovery")
	srv, bus := devStreams(t)
	ctx := t.Context()
	sid := ""
	for _, ev := range evs {
		if ev.Type() == contracts.SessionStartedSpec.Type {
			sid = events.ExtensionString(ev, contracts.ExtPartitionKey)
		}
		if err := bus.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, "replay", "--session", sid, "--nats-url", srv.ClientURL())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	if log := stderr.String(); strings.Contains(strings.ToLower(log), "handoff") || !strings.Contains(log, "session "+sid+" rebuilt") {
		t.Errorf("stderr, of a session that hands off nothing:\n%s", log)
	}
	var report struct {
		Handoffs json.RawMessage `json:"handoffs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("stdout: %v\n%s", err, stdout.String())
	}
	if string(report.Handoffs) != "[]" {
		t.Errorf("stdout's handoffs %s, want []", report.Handoffs)
	}
}

// devStreams starts a NATS server that listens (for the praetor binary a
// test runs) and provisions praetor dev's streams on it.
func devStreams(t *testing.T) (*events.Server, *events.Bus) {
	t.Helper()
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	bus, err := events.New(eventstest.Connect(t, srv), events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Provision(t.Context(), bus, node.StreamSettings{Partitions: node.DevPartitions, Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	return srv, bus
}

// praetor replay --session names each event of the session it could not
// decode, or whose contract it breaks, with its stream sequence, subject
// and why, and counts them in its summary; as the live services
// dead-lettered them (they never reached the state), the replay is still
// a success.
func TestReplaySessionNamesTheEventsItSkips(t *testing.T) {
	evs := goldenEvents(t, "handoff-project-discovery")
	_, bus := devStreams(t)
	ctx := t.Context()
	sid, tenant := "", ""
	for _, ev := range evs {
		if ev.Type() == contracts.SessionStartedSpec.Type {
			sid, tenant = events.ExtensionString(ev, contracts.ExtPartitionKey), events.ExtensionString(ev, contracts.ExtTenant)
		}
		if err := bus.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	subject := contracts.TurnReceivedSpec.SubjectPrefix() + "." + tenant + "." + sid
	var seqs []uint64
	for _, h := range []nats.Header{
		{"Ce-Id": {"audit-bad-1"}},
		{"ce-specversion": {"1.0"}, "ce-id": {"audit-bad-2"}, "ce-source": {"/audit"}, "ce-type": {contracts.TurnReceivedSpec.Type},
			"ce-tenant": {tenant}, "ce-partitionkey": {sid}, "Content-Type": {"application/json"}},
	} {
		ack, err := bus.JetStream().PublishMsg(ctx, &nats.Msg{Subject: subject, Header: h, Data: []byte(`{"garbage":`)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	var stdout, stderr bytes.Buffer
	if err := replaySession(ctx, bus, sid, nil, &stdout, &stderr, time.Now); err != nil {
		t.Fatalf("replay: %v, want a success: the services dead-lettered what it skipped\n%s", err, stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{
		fmt.Sprintf("skipped PRAETOR_TURNS #%d %s.", seqs[0], subject), "not a CloudEvent: decode cloudevent: specversion",
		fmt.Sprintf("skipped PRAETOR_TURNS #%d %s.", seqs[1], subject), "breaks its contract: ", "unexpected end of JSON input\n",
		", skipped 2 undecodable events (dead-lettered by the services): state hash ",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr does not say %q:\n%s", want, log)
		}
	}
}
