package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/internal/wiring"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/gateway/gatewaytest"
)

// wantError checks an error answer: its status, a JSON body {"error",
// "code"} with the code wanted, and an error text that mentions each of
// mentions (what the client must fix).
func wantError(t *testing.T, res gatewaytest.Response, status int, code string, mentions ...string) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status %d, want %d: %s", res.Status, status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var body struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	res.Decode(t, &body)
	if body.Code != code {
		t.Errorf("code %q, want %q (body %s)", body.Code, code, res.Body)
	}
	if body.Error == "" {
		t.Errorf("no error text in %s", res.Body)
	}
	for _, m := range mentions {
		if !strings.Contains(body.Error, m) {
			t.Errorf("error %q does not mention %q", body.Error, m)
		}
	}
}

// session is the part of a session's state the tests read.
type session struct {
	SessionID    string  `json:"session_id"`
	EngineID     string  `json:"engine_id"`
	ProjectID    string  `json:"project_id"`
	Status       string  `json:"status"`
	Phase        string  `json:"phase"`
	Completeness float64 `json:"completeness"`
	TurnCount    int     `json:"turn_count"`
	Sidebar      sidebar `json:"sidebar"`
	Extraction   map[string]struct {
		Value              json.RawMessage `json:"value"`
		Confidence         float64         `json:"confidence"`
		ExtractedFromTurns []int           `json:"extracted_from_turns"`
		LastUpdatedAtTurn  int             `json:"last_updated_at_turn"`
		LastMessageID      string          `json:"last_message_id"`
		SupersededPrevious *struct {
			Value          json.RawMessage `json:"value"`
			AtTurn         int             `json:"at_turn"`
			ReplacedAtTurn int             `json:"replaced_at_turn"`
		} `json:"superseded_previous"`
	} `json:"extraction"`
	Obligations []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"obligations"`
}

type sidebar struct {
	Sections []struct {
		ID    string `json:"id"`
		Items []struct {
			ObligationID string  `json:"obligation_id"`
			Status       string  `json:"status"`
			Confidence   float64 `json:"confidence"`
		} `json:"items"`
	} `json:"sections"`
	PhaseIndicator *struct {
		CurrentPhase string `json:"current_phase"`
		Label        string `json:"label"`
		Order        int    `json:"order"`
		Total        int    `json:"total"`
	} `json:"phase_indicator"`
	ProgressBar *struct {
		Percentage float64 `json:"percentage"`
	} `json:"progress_bar"`
}

type logEntry struct {
	ID           string          `json:"id"`
	MessageID    string          `json:"message_id"`
	FieldPath    string          `json:"field_path"`
	Value        json.RawMessage `json:"extracted_value"`
	Type         string          `json:"extraction_type"`
	SupersededBy string          `json:"superseded_by"`
	TurnNumber   int             `json:"turn_number"`
}

func extractions(t *testing.T, n *gatewaytest.Node, token, sessionID string) []logEntry {
	t.Helper()
	res := n.Get(t, "/v1/sessions/"+sessionID+"/extractions", token)
	if res.Status != http.StatusOK {
		t.Fatalf("extractions: status %d: %s", res.Status, res.Body)
	}
	var body struct {
		Extractions []logEntry `json:"extractions"`
	}
	res.Decode(t, &body)
	return body.Extractions
}

type turnRow struct {
	TurnID     string `json:"turn_id"`
	Status     string `json:"status"`
	Message    string `json:"message"`
	TurnNumber int    `json:"turn_number"`
	Reply      string `json:"reply"`
}

func turns(t *testing.T, n *gatewaytest.Node, token, sessionID string) []turnRow {
	t.Helper()
	res := n.Get(t, "/v1/sessions/"+sessionID+"/turns", token)
	if res.Status != http.StatusOK {
		t.Fatalf("turns: status %d: %s", res.Status, res.Body)
	}
	var body struct {
		Turns []turnRow `json:"turns"`
	}
	res.Decode(t, &body)
	return body.Turns
}

func engineIDs(t *testing.T, n *gatewaytest.Node) []string {
	t.Helper()
	var body struct {
		Engines []struct {
			EngineID string `json:"engine_id"`
			Phases   []struct {
				ID string `json:"id"`
			} `json:"phases"`
			Obligations int `json:"obligations"`
		} `json:"engines"`
	}
	res := n.Get(t, "/v1/engines", "")
	if res.Status != http.StatusOK {
		t.Fatalf("engines: status %d: %s", res.Status, res.Body)
	}
	res.Decode(t, &body)
	var ids []string
	for _, e := range body.Engines {
		if len(e.Phases) == 0 || e.Obligations == 0 {
			t.Errorf("engine %s is listed without phases or obligations: %s", e.EngineID, res.Body)
		}
		ids = append(ids, e.EngineID)
	}
	return ids
}

func TestCreateSession(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	engines := engineIDs(t, n)
	if !slices.Contains(engines, "project-discovery") {
		t.Fatalf("GET /v1/engines lists %v, want project-discovery among them", engines)
	}

	t.Run("created", func(t *testing.T) {
		res := n.Post(t, "/v1/sessions", "", map[string]string{"engine_id": "project-discovery", "project_id": "acme-1"})
		if res.Status != http.StatusCreated {
			t.Fatalf("status %d, want 201: %s", res.Status, res.Body)
		}
		var s session
		res.Decode(t, &s)
		if where := res.Header.Get("Location"); where != "/v1/sessions/"+s.SessionID {
			t.Errorf("Location %q, want the session's", where)
		}
		if s.SessionID == "" || s.EngineID != "project-discovery" || s.ProjectID != "acme-1" || s.Status != "active" {
			t.Errorf("created %s", res.Body)
		}
		if s.Phase == "" || s.Completeness != 0 || s.TurnCount != 0 {
			t.Errorf("a new session has phase %q, completeness %v, %d turns", s.Phase, s.Completeness, s.TurnCount)
		}
		if s.Sidebar.PhaseIndicator == nil || s.Sidebar.PhaseIndicator.CurrentPhase != s.Phase || len(s.Sidebar.Sections) == 0 {
			t.Errorf("a new session's sidebar does not show its phase and obligations: %s", res.Body)
		}
		got := n.Get(t, "/v1/sessions/"+s.SessionID, "")
		if got.Status != http.StatusOK {
			t.Fatalf("GET the new session: %d %s", got.Status, got.Body)
		}
		// Its extraction is there, empty, before anything is extracted.
		if ex, ok := got.Map(t)["extraction"].(map[string]any); !ok || len(ex) != 0 {
			t.Errorf("a new session's extraction is %v, want {}", got.Map(t)["extraction"])
		}
	})
	t.Run("retried with its Idempotency-Key", func(t *testing.T) {
		create := func(engine string) gatewaytest.Response {
			return n.Do(t, gatewaytest.Call{Method: http.MethodPost, Path: "/v1/sessions",
				Header: http.Header{"Idempotency-Key": {"create-1"}}, Body: map[string]string{"engine_id": engine, "project_id": "p-key"}})
		}
		var first, again session
		if res := create("project-discovery"); res.Status != http.StatusCreated {
			t.Fatalf("first: %d %s", res.Status, res.Body)
		} else {
			res.Decode(t, &first)
		}
		if res := create("project-discovery"); res.Status != http.StatusOK {
			t.Fatalf("retry: %d %s, want 200 with the session created", res.Status, res.Body)
		} else {
			res.Decode(t, &again)
		}
		if again.SessionID != first.SessionID || again.EngineID != "project-discovery" {
			t.Errorf("the retry answered session %s, want %s", again.SessionID, first.SessionID)
		}
		wantError(t, create("exploration"), http.StatusUnprocessableEntity, "idempotency_key_reused", first.SessionID)
		var list struct {
			Sessions []session `json:"sessions"`
		}
		n.Get(t, "/v1/sessions", "").Decode(t, &list)
		count := 0
		for _, s := range list.Sessions {
			if s.ProjectID == "p-key" {
				count++
			}
		}
		if count != 1 {
			t.Errorf("%d sessions of the key's project, want 1", count)
		}
	})
	t.Run("default project", func(t *testing.T) {
		res := n.Post(t, "/v1/sessions", "", map[string]string{"engine_id": "project-discovery"})
		if res.Status != http.StatusCreated {
			t.Fatalf("status %d, want 201: %s", res.Status, res.Body)
		}
		var s session
		res.Decode(t, &s)
		if s.ProjectID != "default" {
			t.Errorf("project_id %q, want default", s.ProjectID)
		}
	})

	listed := func() int {
		var body struct {
			Sessions []session `json:"sessions"`
		}
		n.Get(t, "/v1/sessions", "").Decode(t, &body)
		return len(body.Sessions)
	}
	before := listed()
	bad := []struct {
		name     string
		body     string
		status   int
		code     string
		mentions []string
	}{
		{"unknown engine", `{"engine_id": "nope"}`, 404, "unknown_engine", append([]string{`"nope"`}, engines...)},
		{"no engine", `{"project_id": "p"}`, 400, "missing_engine_id", append([]string{"engine_id"}, engines...)},
		{"project id with a space", `{"engine_id": "project-discovery", "project_id": "my project"}`, 400, "bad_project_id", []string{"project_id", "A-Za-z0-9_-"}},
		{"project id with a dot", `{"engine_id": "project-discovery", "project_id": "../x"}`, 400, "bad_project_id", []string{"project_id"}},
		{"project id too long", `{"engine_id": "project-discovery", "project_id": "` + strings.Repeat("p", 129) + `"}`, 400, "bad_project_id", []string{"1-128"}},
		{"malformed", `{"engine_id": `, 400, "bad_json", []string{"engine_id"}},
		{"unknown field", `{"engine_id": "project-discovery", "colour": "red"}`, 400, "bad_json", []string{"colour"}},
		{"wrong type", `{"engine_id": 7}`, 400, "bad_json", []string{"engine_id", "string"}},
		{"array", `[{"engine_id": "project-discovery"}]`, 400, "bad_json", []string{"object"}},
		{"empty", ``, 400, "bad_json", []string{"empty"}},
		{"two objects", `{"engine_id": "project-discovery"} {"engine_id": "project-discovery"}`, 400, "bad_json", []string{"after the JSON object"}},
		{"too large", `{"engine_id": "project-discovery", "project_id": "` + strings.Repeat("p", 5000) + `"}`, 413, "too_large", nil},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			res := n.Post(t, "/v1/sessions", "", tc.body)
			wantError(t, res, tc.status, tc.code, tc.mentions...)
		})
	}
	if got := listed(); got != before {
		t.Errorf("refused requests created sessions: %d listed, want %d", got, before)
	}
}

func TestPostTurn(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	id := n.CreateSession(t, "", "project-discovery")

	// Without wait: 202 and a turn id at once; the reply follows.
	res := n.Post(t, "/v1/sessions/"+id+"/turns", "", map[string]string{
		"message": "We want to build a scheduling app for dental clinics so patients can book appointments online."})
	if res.Status != http.StatusAccepted {
		t.Fatalf("post without wait: status %d, want 202: %s", res.Status, res.Body)
	}
	var accepted gatewaytest.Turn
	res.Decode(t, &accepted)
	if accepted.TurnID == "" || accepted.SessionID != id || accepted.Status != "pending" {
		t.Fatalf("post without wait answered %s", res.Body)
	}
	// The answer says where to read the turn: pending, then answered.
	where := res.Header.Get("Location")
	if where != "/v1/sessions/"+id+"/turns/"+accepted.TurnID {
		t.Fatalf("Location %q, want the turn's", where)
	}
	var first gatewaytest.Turn
	gatewaytest.WaitFor(t, 30*time.Second, "the first turn's reply", func() bool {
		res := n.Get(t, where, "")
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", where, res.Status, res.Body)
		}
		res.Decode(t, &first)
		return first.Status == "answered"
	})
	if first.TurnID != accepted.TurnID || first.TurnNumber != 1 || first.Reply == "" || first.Message == "" ||
		first.ReceivedAt == nil || first.RespondedAt == nil {
		t.Errorf("first turn %+v, want %s numbered 1 with its message, reply and times", first, accepted.TurnID)
	}
	if got := turns(t, n, "", id); len(got) != 1 || got[0].TurnID != first.TurnID || got[0].Reply != first.Reply {
		t.Errorf("turns listed %+v, want the one read", got)
	}
	// A turn is read under its own session only.
	other := n.CreateSession(t, "", "project-discovery")
	for _, path := range []string{"/v1/sessions/" + other + "/turns/" + accepted.TurnID, "/v1/sessions/" + id + "/turns/no-such-turn",
		"/v1/sessions/" + id + "/turns/%ff"} {
		wantError(t, n.Get(t, path, ""), http.StatusNotFound, "unknown_turn")
	}

	// With wait: 200 and the reply with what came with it.
	messages := []string{
		"It is a web app. Our receptionists currently use a paper book and phone calls.",
		"About 40 receptionists and a few thousand patients will use it.",
	}
	for i, msg := range messages {
		turn := n.Say(t, "", id, msg)
		if turn.TurnNumber != i+2 {
			t.Errorf("turn %q is numbered %d, want %d", msg, turn.TurnNumber, i+2)
		}
		if turn.Message != msg || turn.SessionID != id || turn.TurnID == "" {
			t.Errorf("turn %q answered as %+v", msg, turn)
		}
		if turn.Phase == "" || turn.Completeness == nil {
			t.Errorf("turn %q has no phase or completeness", msg)
		}
		var sb sidebar
		if err := json.Unmarshal(turn.Sidebar, &sb); err != nil || sb.PhaseIndicator == nil || sb.ProgressBar == nil {
			t.Errorf("turn %q: sidebar without phase indicator or progress bar (%v): %s", msg, err, turn.Sidebar)
		} else if sb.PhaseIndicator.CurrentPhase != turn.Phase {
			t.Errorf("turn %q: the sidebar shows phase %s, the turn %s", msg, sb.PhaseIndicator.CurrentPhase, turn.Phase)
		}
	}
	if *n.Say(t, "", id, "Patients keep calling to move appointments and the front desk cannot keep up.").Completeness <= 0 {
		t.Error("completeness is still 0 after four informative turns")
	}
	var s session
	n.Get(t, "/v1/sessions/"+id, "").Decode(t, &s)
	if s.TurnCount != 4 {
		t.Errorf("session turn_count %d, want 4", s.TurnCount)
	}
	if got := turns(t, n, "", id); len(got) != 4 {
		t.Errorf("%d turns listed, want 4", len(got))
	}
	// The API's requests are counted by route pattern and status.
	metrics := string(n.Get(t, "/metrics", "").Body)
	for _, want := range []string{
		`praetor_http_requests_total{code="202",route="POST /v1/sessions/{id}/turns"} 1`,
		`praetor_http_requests_total{code="200",route="POST /v1/sessions/{id}/turns"} 3`,
		`praetor_http_requests_total{code="404",route="GET /v1/sessions/{id}/turns/{turn}"} 3`,
		`praetor_http_request_duration_seconds_count{route="POST /v1/sessions/{id}/turns"} 4`,
		`praetor_http_streams_open 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestPostedTurnIsInTheStream: the gateway publishes a turn it has
// committed before it answers, so a 202 means turn.received is in the
// stream (not waiting in the outbox for a relay pass), and a client that
// posts its next turn after the answer has its turns in the stream in order.
//
// The relay marks published events sent a while later, in batches: a turn
// whose predecessor awaits its mark does not go through a catch-up (which
// would publish and mark them all). Here the marks wait for an hour: every
// turn is published directly, and all three still await their marks.
func TestPostedTurnIsInTheStream(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}, Gateway: slowMarks(t)})
	id := n.CreateSession(t, "", "project-discovery")
	// Hold the outbox relay's lock: no relay pass can publish the turns.
	holdRelay(t, n)
	stream, err := n.Bus.JetStream().Stream(t.Context(), contracts.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res := n.Post(t, "/v1/sessions/"+id+"/turns", "", map[string]string{"message": fmt.Sprintf("message %d", i)})
		if res.Status != http.StatusAccepted {
			t.Fatalf("post: status %d, want 202: %s", res.Status, res.Body)
		}
		var accepted gatewaytest.Turn
		res.Decode(t, &accepted)
		last, err := stream.GetLastMsgForSubject(t.Context(), "praetor.turn.received.>")
		if err != nil {
			t.Fatalf("turn %d answered 202, and the stream has no turn.received: %v", i, err)
		}
		if got := last.Header.Get("Nats-Msg-Id"); got != accepted.TurnID {
			t.Errorf("turn %d answered 202; the stream's last turn.received is %s, want %s", i, got, accepted.TurnID)
		}
	}
	// All three still await their marks: each was published while the one
	// before it was unsent.
	if k := awaitingMarks(t, n); k != 3 {
		t.Errorf("%d turn.received await their sent marks, want 3", k)
	}
}

// awaitingMarks counts the turn.received events in the outbox unsent.
func awaitingMarks(t *testing.T, n *gatewaytest.Node) int {
	t.Helper()
	rows, err := store.Unsent(t.Context(), n.DB, 100)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, m := range rows {
		if strings.HasPrefix(m.Subject, "praetor.turn.received.") {
			k++
		}
	}
	return k
}

// TestPostedTurnBehindManyUnsentCatchesUp: with 16 or more unsent events of
// its session, published or not, the gateway does not look them all up in
// its relay: it publishes the outbox in order (a catch-up, which marks them
// sent).
func TestPostedTurnBehindManyUnsentCatchesUp(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}, Gateway: slowMarks(t)})
	id := n.CreateSession(t, "", "project-discovery")
	holdRelay(t, n)
	for i := range 17 {
		res := n.Post(t, "/v1/sessions/"+id+"/turns", "", map[string]string{"message": fmt.Sprintf("message %d", i)})
		if res.Status != http.StatusAccepted {
			t.Fatalf("post %d: status %d, want 202: %s", i, res.Status, res.Body)
		}
		if i == 15 {
			if k := awaitingMarks(t, n); k != 16 {
				t.Fatalf("after 16 posts %d turns await their marks, want 16", k)
			}
		}
	}
	if k := awaitingMarks(t, n); k != 0 {
		t.Errorf("after the 17th post %d turns await their marks, want 0 (a catch-up published and marked them)", k)
	}
}

// slowMarks gives the gateway a relay of its own that marks published
// events sent only at its stop.
func slowMarks(t *testing.T) func(*gateway.Config) {
	return func(c *gateway.Config) {
		pub, ok := c.Bus.(delivery.Publisher)
		if !ok {
			t.Fatalf("the gateway's bus %T cannot publish for a relay", c.Bus)
		}
		rl, err := delivery.NewRelay(delivery.RelayConfig{DB: c.DB, Publisher: pub, Interval: time.Hour, MarkDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := rl.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rl.Stop(context.Background()) })
		c.Relay = rl
	}
}

// TestPostedTurnWaitsForAnEarlierUnpublishedOne: a turn committed whose
// publish failed is still in the outbox; the session's next turn must not
// overtake it in the stream (the extractor numbers turns in stream order),
// so the gateway publishes both, in order, instead of the new one alone.
func TestPostedTurnWaitsForAnEarlierUnpublishedOne(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}})
	id := n.CreateSession(t, "", "project-discovery")
	holdRelay(t, n)

	// The first turn: committed with its turn.received, never published.
	first := "01a00000-0000-7000-8000-000000000001"
	commitUnpublishedTurn(t, n, id, first, "first")

	res := n.Post(t, "/v1/sessions/"+id+"/turns", "", map[string]string{"message": "second"})
	if res.Status != http.StatusAccepted {
		t.Fatalf("post: status %d, want 202: %s", res.Status, res.Body)
	}
	var second gatewaytest.Turn
	res.Decode(t, &second)

	stream, err := n.Bus.JetStream().Stream(t.Context(), contracts.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := stream.GetMsg(t.Context(), seq)
		if err != nil {
			continue // a sequence the stream does not hold
		}
		if strings.HasPrefix(m.Subject, "praetor.turn.received.") {
			got = append(got, m.Header.Get("Nats-Msg-Id"))
		}
	}
	if want := []string{first, second.TurnID}; !slices.Equal(got, want) {
		t.Errorf("turn.received in the stream: %v, want %v (the unpublished turn first)", got, want)
	}
}

// TestRetriedPostPublishesItsTurn: the first attempt of a post committed
// its turn and ended before publishing it (a publish that failed, a
// replica that died); the retry with the same Idempotency-Key answers 202
// and publishes it.
func TestRetriedPostPublishesItsTurn(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}})
	id := n.CreateSession(t, "", "project-discovery")
	holdRelay(t, n)

	turnID := events.DeriveID(id, "turn/k1")
	commitUnpublishedTurn(t, n, id, turnID, "hello")

	res := n.Do(t, gatewaytest.Call{Method: http.MethodPost, Path: "/v1/sessions/" + id + "/turns",
		Header: http.Header{"Idempotency-Key": {"k1"}}, Body: map[string]string{"message": "hello"}})
	if res.Status != http.StatusAccepted {
		t.Fatalf("retry: status %d, want 202: %s", res.Status, res.Body)
	}
	stream, err := n.Bus.JetStream().Stream(t.Context(), contracts.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	last, err := stream.GetLastMsgForSubject(t.Context(), "praetor.turn.received.>")
	if err != nil {
		t.Fatalf("the retry answered 202, and the stream has no turn.received: %v", err)
	}
	if got := last.Header.Get("Nats-Msg-Id"); got != turnID {
		t.Errorf("the stream's turn.received is %s, want the first attempt's %s", got, turnID)
	}
}

// TestPostWhileNATSIsDown: a gateway whose connection to NATS is down
// saves a posted turn and accepts it without waiting on a publish that
// cannot succeed; the turn stays in the outbox for the relay.
func TestPostWhileNATSIsDown(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}})
	token := n.Tenant(t, "acme")
	id := n.CreateSession(t, token, "project-discovery")
	holdRelay(t, n)

	// A second gateway on the node's database, whose NATS server is gone.
	srv := eventstest.StartServer(t)
	bus, err := events.New(eventstest.Connect(t, srv), events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	relay, err := delivery.NewRelay(delivery.RelayConfig{DB: n.DB, Publisher: bus, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cat, reg, err := wiring.LoadEngines(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	g, err := gateway.New(gateway.Config{DB: n.DB, Bus: bus, Relay: relay, Engines: cat, Registry: reg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	g.Routes(mux)

	req := httptest.NewRequest(http.MethodPost, "/v1/sessions/"+id+"/turns", strings.NewReader(`{"message":"hello"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("post: status %d, want 202: %s", rec.Code, rec.Body)
	}
	var accepted gatewaytest.Turn
	if err := json.Unmarshal(rec.Body.Bytes(), &accepted); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "NATS is not connected") {
		t.Errorf("the gateway tried to publish without a connection; its log:\n%s", logs.String())
	}
	rows, err := store.Unsent(t.Context(), n.DB, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rows, func(m store.OutboxMessage) bool { return m.EventID == accepted.TurnID }) {
		t.Errorf("turn %s is not waiting in the outbox", accepted.TurnID)
	}
}

// holdRelay takes the node's outbox relay lock until the test ends: no
// relay pass publishes anything meanwhile.
func holdRelay(t *testing.T, n *gatewaytest.Node) {
	t.Helper()
	unlock, ok, err := n.DB.TryLock(t.Context(), "outbox-relay")
	if err != nil || !ok {
		t.Fatalf("take the relay's lock: %v, %v", ok, err)
	}
	t.Cleanup(unlock)
}

// commitUnpublishedTurn records a turn of the dev tenant and its
// turn.received in the outbox, as a post whose publish then failed leaves
// them.
func commitUnpublishedTurn(t *testing.T, n *gatewaytest.Node, sessionID, turnID, message string) {
	t.Helper()
	now := time.Now().UTC()
	ev, err := contracts.NewEvent(contracts.Meta{ID: turnID, Source: "/test", Time: now},
		contracts.TurnReceived{TenantID: n.DevTenant, SessionID: sessionID, TurnID: turnID, Message: message, ReceivedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	err = n.DB.Tx(t.Context(), func(tx store.Querier) error {
		turn := conversation.Turn{ID: turnID, TenantID: n.DevTenant, SessionID: sessionID, Message: message, ReceivedAt: now}
		if err := conversation.CreateTurn(t.Context(), tx, turn); err != nil {
			return err
		}
		_, err := delivery.Emit(t.Context(), tx, n.Bus, ev)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPostTurnBadInput(t *testing.T) {
	t.Parallel()
	const limit = 256
	n := gatewaytest.Start(t, gatewaytest.Options{Gateway: func(c *gateway.Config) {
		c.MaxMessageBytes, c.BodyTimeout = limit, time.Second
	}})
	id := n.CreateSession(t, "", "project-discovery")
	var info struct {
		MaxMessageBytes int `json:"max_message_bytes"`
	}
	n.Get(t, "/v1/info", "").Decode(t, &info)
	if info.MaxMessageBytes != limit {
		t.Errorf("/v1/info says max_message_bytes %d, want the configured %d", info.MaxMessageBytes, limit)
	}

	body := func(msg string) string {
		b, _ := json.Marshal(map[string]string{"message": msg})
		return string(b)
	}
	cases := []struct {
		name     string
		path     string // default: the session's turns
		body     string
		status   int
		code     string
		mentions []string
	}{
		{name: "empty", body: body(""), status: 400, code: "empty_message", mentions: []string{"empty"}},
		{name: "blank", body: body(" \n\t "), status: 400, code: "empty_message"},
		{name: "no message field", body: `{}`, status: 400, code: "empty_message"},
		{name: "over the limit", body: body(strings.Repeat("a", limit+1)), status: 413, code: "message_too_large",
			mentions: []string{fmt.Sprint(limit + 1), fmt.Sprint(limit)}},
		{name: "over the limit in bytes, not characters", body: body(strings.Repeat("é", limit/2+1)), status: 413,
			code: "message_too_large", mentions: []string{fmt.Sprint(limit + 2)}},
		{name: "body far over any limit", body: body(strings.Repeat("a", 1<<20)), status: 413, code: "too_large",
			mentions: []string{fmt.Sprint(limit), "--max-message-bytes"}},
		// encoding/json would store U+FFFD in place of what is not text.
		{name: "not UTF-8", body: "{\"message\": \"caf\xe9 \xff\"}", status: 400, code: "bad_text", mentions: []string{"UTF-8"}},
		{name: "a lone high surrogate", body: `{"message": "a \ud800 b"}`, status: 400, code: "bad_text",
			mentions: []string{`\ud800`, "surrogate"}},
		{name: "a lone low surrogate", body: `{"message": "\uDC00"}`, status: 400, code: "bad_text", mentions: []string{`\udc00`}},
		{name: "a high surrogate before another escape", body: `{"message": "\ud83d\u0041"}`, status: 400, code: "bad_text"},
		{name: "a NUL", body: `{"message": "nul \u0000 byte"}`, status: 400, code: "bad_message", mentions: []string{"NUL"}},
		{name: "malformed", body: `{"message": "hi`, status: 400, code: "bad_json", mentions: []string{`{"message": "..."}`}},
		{name: "unknown field", body: `{"message": "hi", "role": "user"}`, status: 400, code: "bad_json", mentions: []string{"role"}},
		{name: "wrong type", body: `{"message": 42}`, status: 400, code: "bad_json", mentions: []string{"message", "string"}},
		{name: "a string, not an object", body: `"hi"`, status: 400, code: "bad_json", mentions: []string{"object"}},
		{name: "trailing data", body: `{"message": "hi"} x`, status: 400, code: "bad_json"},
		{name: "bad wait", path: "/v1/sessions/" + id + "/turns?wait=soon", body: body("hi"), status: 400, code: "bad_wait",
			mentions: []string{"soon", "30s"}},
		{name: "negative wait", path: "/v1/sessions/" + id + "/turns?wait=-1s", body: body("hi"), status: 400, code: "bad_wait",
			mentions: []string{"negative"}},
		{name: "unknown session", path: "/v1/sessions/no-such-session/turns", body: body("hi"), status: 404,
			code: "unknown_session", mentions: []string{"no-such-session"}},
		{name: "a session id no session can have", path: "/v1/sessions/%ff%00/turns", body: body("hi"), status: 404,
			code: "unknown_session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/v1/sessions/" + id + "/turns"
			}
			wantError(t, n.Post(t, path, "", tc.body), tc.status, tc.code, tc.mentions...)
		})
	}
	for name, keys := range map[string][]string{"two keys": {"a", "b"}, "a key too long": {strings.Repeat("k", 256)}, "a blank key": {" "}} {
		res := n.Do(t, gatewaytest.Call{Method: http.MethodPost, Path: "/v1/sessions/" + id + "/turns",
			Header: http.Header{"Idempotency-Key": keys}, Body: map[string]string{"message": "hi"}})
		t.Run(name, func(t *testing.T) { wantError(t, res, http.StatusBadRequest, "bad_idempotency_key") })
	}
	// A body that stops coming does not hold the connection: 408.
	t.Run("a body that stops", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(n.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "POST /v1/sessions/%s/turns HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100\r\n\r\n{\"message\"", id, strings.TrimPrefix(n.URL, "http://"))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a body that stopped: %v", err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		wantError(t, gatewaytest.Response{Status: res.StatusCode, Header: res.Header, Body: b}, http.StatusRequestTimeout,
			"body_timeout", "1s")
	})
	if got := turns(t, n, "", id); len(got) != 0 {
		t.Fatalf("refused messages were recorded as turns: %+v", got)
	}

	// At the limit is accepted, however much JSON escaping makes the body
	// grow: Go clients escape < and > as \u003c and \u003e.
	for _, msg := range []string{strings.Repeat("a", limit), strings.Repeat("<>", limit/2)} {
		turn := n.Say(t, "", id, msg)
		if turn.Message != msg {
			t.Errorf("the message came back as %q, want %q", turn.Message, msg)
		}
	}
	// Text that is text, however it is written: a surrogate pair, and a
	// replacement character the user typed.
	for raw, want := range map[string]string{
		`{"message": "\ud83d\ude00 hi"}`:          "\U0001F600 hi",
		`{"message": "a \ufffd or ` + "\uFFFD\"}": "a \uFFFD or \uFFFD",
	} {
		res := n.Post(t, "/v1/sessions/"+id+"/turns?wait=30s", "", raw)
		var turn gatewaytest.Turn
		res.Decode(t, &turn)
		if res.Status != http.StatusOK || turn.Message != want {
			t.Errorf("POST %s: %d, message %q, want 200 and %q", raw, res.Status, turn.Message, want)
		}
	}
	if got := turns(t, n, "", id); len(got) != 4 {
		t.Errorf("%d turns recorded, want the 4 accepted", len(got))
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	id := n.CreateSession(t, "", "project-discovery")
	stream, _ := n.OpenStream(t, id, "")
	if ev := stream.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first stream event %q, want state", ev.Name)
	}
	post := func(key, msg, query string) gatewaytest.Response {
		return n.Do(t, gatewaytest.Call{Method: http.MethodPost, Path: "/v1/sessions/" + id + "/turns" + query,
			Header: http.Header{"Idempotency-Key": {key}}, Body: map[string]string{"message": msg}})
	}
	const msg = "We want to build a web app for dental clinics. Receptionists currently use a paper book."

	res := post("key-1", msg, "")
	if res.Status != http.StatusAccepted {
		t.Fatalf("first post: status %d, want 202: %s", res.Status, res.Body)
	}
	var first gatewaytest.Turn
	res.Decode(t, &first)

	// The client did not see that answer and retries, this time waiting.
	res = post("key-1", msg, "?wait=30s")
	if res.Status != http.StatusOK {
		t.Fatalf("retry: status %d, want 200: %s", res.Status, res.Body)
	}
	var retried gatewaytest.Turn
	res.Decode(t, &retried)
	if retried.TurnID != first.TurnID || retried.TurnNumber != 1 || retried.Reply == "" {
		t.Fatalf("the retry answered %s, want turn %s numbered 1", res.Body, first.TurnID)
	}
	// Once answered, a retry without wait answers the reply at once.
	res = post("key-1", msg, "")
	var again gatewaytest.Turn
	res.Decode(t, &again)
	if res.Status != http.StatusOK || again.TurnID != first.TurnID || again.Reply != retried.Reply {
		t.Errorf("a retry after the reply answered %d %s, want 200 with the same reply", res.Status, res.Body)
	}
	// The same key with another message is a client bug, not a retry.
	wantError(t, post("key-1", "Something else entirely.", ""), http.StatusUnprocessableEntity, "idempotency_key_reused",
		"key-1", "new key")

	next := n.Do(t, gatewaytest.Call{Method: http.MethodPost, Path: "/v1/sessions/" + id + "/turns?wait=30s",
		Header: http.Header{"Idempotency-Key": {"key-2"}}, Body: map[string]string{"message": "About 40 receptionists will use it."}})
	var second gatewaytest.Turn
	next.Decode(t, &second)
	if next.Status != http.StatusOK || second.TurnNumber != 2 {
		t.Fatalf("the next turn answered %d %s, want 200 numbered 2", next.Status, next.Body)
	}

	// One turn, one reply, one extraction set.
	ts := turns(t, n, "", id)
	if len(ts) != 2 || ts[0].TurnID != first.TurnID || ts[1].TurnID != second.TurnID {
		t.Fatalf("turns %+v, want exactly %s and %s", ts, first.TurnID, second.TurnID)
	}
	var s session
	n.Get(t, "/v1/sessions/"+id, "").Decode(t, &s)
	if s.TurnCount != 2 {
		t.Errorf("session turn_count %d, want 2", s.TurnCount)
	}
	fields := map[string]int{}
	for _, e := range extractions(t, n, "", id) {
		if e.MessageID == first.TurnID {
			fields[e.FieldPath]++
			if e.TurnNumber != 1 {
				t.Errorf("extraction of %s from turn %s is numbered %d, want 1", e.FieldPath, first.TurnID, e.TurnNumber)
			}
		}
	}
	if len(fields) == 0 {
		t.Errorf("no extraction logged for %q", msg)
	}
	for f, count := range fields {
		if count != 1 {
			t.Errorf("field %s logged %d times for one turn, want once", f, count)
		}
	}
	// Turns are answered in order, so once the second reply is on the stream
	// any second reply to the first would have come before it.
	replies := map[string]int{}
	for replies[second.TurnID] == 0 {
		ev := stream.Next(t, 30*time.Second)
		if ev.Name != "turn" {
			continue
		}
		var turn gatewaytest.Turn
		if err := json.Unmarshal([]byte(ev.Data), &turn); err != nil {
			t.Fatalf("turn event is not JSON: %v: %s", err, ev.Data)
		}
		replies[turn.TurnID]++
	}
	if replies[first.TurnID] != 1 || len(replies) != 2 {
		t.Errorf("replies on the stream by turn: %v, want one for each of %s and %s", replies, first.TurnID, second.TurnID)
	}

	// A key names a turn of its session only.
	other := n.CreateSession(t, "", "project-discovery")
	res = n.Do(t, gatewaytest.Call{Method: http.MethodPost, Path: "/v1/sessions/" + other + "/turns?wait=30s",
		Header: http.Header{"Idempotency-Key": {"key-1"}}, Body: map[string]string{"message": msg}})
	var elsewhere gatewaytest.Turn
	res.Decode(t, &elsewhere)
	if res.Status != http.StatusOK || elsewhere.TurnID == first.TurnID || elsewhere.SessionID != other || elsewhere.TurnNumber != 1 {
		t.Errorf("key-1 in another session answered %d %s, want a new turn 1 of %s", res.Status, res.Body, other)
	}
}

func TestSessionStateAndExtractionLog(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	id := n.CreateSession(t, "", "project-discovery")
	script := []string{
		"We want to build a scheduling app for dental clinics so patients can book appointments online.",
		"It is a web app. Our receptionists currently use a paper book and phone calls.",
		"Actually, it is a mobile app, not a web app.",
	}
	var answered []gatewaytest.Turn
	for _, msg := range script {
		answered = append(answered, n.Say(t, "", id, msg))
	}
	last := answered[len(answered)-1]

	res := n.Get(t, "/v1/sessions/"+id, "")
	if res.Status != http.StatusOK {
		t.Fatalf("GET session: status %d: %s", res.Status, res.Body)
	}
	var s session
	res.Decode(t, &s)
	if s.Phase != last.Phase || s.Completeness != *last.Completeness || s.TurnCount != len(script) {
		t.Errorf("state: phase %s, completeness %v, %d turns; the last reply said %s, %v after %d turns",
			s.Phase, s.Completeness, s.TurnCount, last.Phase, *last.Completeness, len(script))
	}
	if s.Completeness <= 0 {
		t.Errorf("completeness %v after %d informative turns, want > 0", s.Completeness, len(script))
	}
	if s.Sidebar.PhaseIndicator == nil || s.Sidebar.PhaseIndicator.CurrentPhase != s.Phase {
		t.Errorf("the sidebar does not show phase %s", s.Phase)
	}
	if len(s.Obligations) == 0 {
		t.Error("the state lists no obligations")
	}

	// The correction replaced the value, and the state says what it replaced.
	const field = "purpose_and_problem.project_type"
	f, ok := s.Extraction[field]
	if !ok {
		t.Fatalf("no %s in the extraction; fields: %v", field, keys(s.Extraction))
	}
	if string(f.Value) != `"mobile app"` || f.LastUpdatedAtTurn != 3 || f.LastMessageID != answered[2].TurnID ||
		!slices.Contains(f.ExtractedFromTurns, 3) || f.Confidence <= 0 {
		t.Errorf("%s: value %s, last updated at turn %d by %s, from turns %v, confidence %v; want \"mobile app\" from turn 3 (%s)",
			field, f.Value, f.LastUpdatedAtTurn, f.LastMessageID, f.ExtractedFromTurns, f.Confidence, answered[2].TurnID)
	}
	if p := f.SupersededPrevious; p == nil || string(p.Value) != `"web app"` || p.AtTurn != 2 || p.ReplacedAtTurn != 3 {
		t.Errorf("%s: superseded_previous %+v, want \"web app\" of turn 2 replaced at turn 3", field, p)
	}
	if core, ok := s.Extraction["purpose_and_problem.core_problem"]; !ok || core.LastMessageID != answered[0].TurnID {
		t.Errorf("the core problem is not traced to turn 1 (%s): %+v", answered[0].TurnID, core)
	}

	// The log keeps every step: new rows, and the superseded one linked to
	// the row that replaced it.
	log := extractions(t, n, "", id)
	byID := map[string]logEntry{}
	for i, e := range log {
		byID[e.ID] = e
		if e.TurnNumber < 1 || e.TurnNumber > len(script) || e.MessageID != answered[e.TurnNumber-1].TurnID {
			t.Errorf("log row %s: turn %d, message %s does not match the turns posted", e.ID, e.TurnNumber, e.MessageID)
		}
		if i > 0 && e.TurnNumber < log[i-1].TurnNumber {
			t.Errorf("the log is not in turn order at row %d", i)
		}
	}
	var news, supersedes []logEntry
	for _, e := range log {
		if e.FieldPath != field {
			continue
		}
		switch e.Type {
		case "new":
			news = append(news, e)
		case "supersede":
			supersedes = append(supersedes, e)
		default:
			t.Errorf("%s logged as %q", field, e.Type)
		}
	}
	if len(news) != 1 || len(supersedes) != 1 {
		t.Fatalf("%s: %d new and %d supersede rows, want one each: %+v", field, len(news), len(supersedes), log)
	}
	if news[0].TurnNumber != 2 || string(news[0].Value) != `"web app"` || news[0].SupersededBy != supersedes[0].ID {
		t.Errorf("the first %s row is %+v; want web app at turn 2, superseded_by %s", field, news[0], supersedes[0].ID)
	}
	if supersedes[0].TurnNumber != 3 || string(supersedes[0].Value) != `"mobile app"` || supersedes[0].SupersededBy != "" {
		t.Errorf("the supersede row is %+v; want mobile app at turn 3, not superseded", supersedes[0])
	}
	if _, ok := byID[news[0].SupersededBy]; !ok {
		t.Errorf("superseded_by %s names no row of the log", news[0].SupersededBy)
	}
	// Every field of the state has its row in the log.
	for path, f := range s.Extraction {
		found := false
		for _, e := range log {
			found = found || (e.FieldPath == path && e.MessageID == f.LastMessageID && e.SupersededBy == "")
		}
		if !found {
			t.Errorf("field %s (last set by %s) has no current row in the log", path, f.LastMessageID)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestStream(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	id := n.CreateSession(t, "", "project-discovery")
	stream := n.MustOpenStream(t, id, "")
	if ct := stream.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	ev := stream.Next(t, 10*time.Second)
	var state session
	if err := json.Unmarshal([]byte(ev.Data), &state); ev.Name != "state" || err != nil || state.SessionID != id {
		t.Fatalf("first event %s %s (%v), want the session's state", ev.Name, ev.Data, err)
	}

	nextTurnOn := func(stream *gatewaytest.Stream) gatewaytest.Turn {
		t.Helper()
		ev := stream.Next(t, 30*time.Second)
		for ev.Name == "task" { // a background task's progress, between the replies
			ev = stream.Next(t, 30*time.Second)
		}
		if ev.Name != "turn" {
			t.Fatalf("event %q, want turn: %s", ev.Name, ev.Data)
		}
		var turn gatewaytest.Turn
		if err := json.Unmarshal([]byte(ev.Data), &turn); err != nil {
			t.Fatalf("turn event is not JSON: %v: %s", err, ev.Data)
		}
		// Its id is its turn's (a reconnecting client sends it back); it
		// says when it was answered, and nothing it does not know.
		if ev.ID != turn.TurnID || turn.RespondedAt == nil || turn.RespondedAt.IsZero() || turn.ReceivedAt != nil && turn.ReceivedAt.IsZero() {
			t.Errorf("turn event id %q, data %s: want the turn's id, responded_at and no zero received_at", ev.ID, ev.Data)
		}
		return turn
	}
	nextTurn := func() gatewaytest.Turn { t.Helper(); return nextTurnOn(stream) }
	for i, msg := range []string{
		"We want to build a scheduling app for dental clinics so patients can book appointments online.",
		"It is a web app. Our receptionists currently use a paper book and phone calls.",
	} {
		posted := n.Say(t, "", id, msg)
		got := nextTurn()
		if got.TurnID != posted.TurnID || got.TurnNumber != i+1 || got.Reply != posted.Reply || got.Phase != posted.Phase ||
			got.Completeness == nil || *got.Completeness != *posted.Completeness || got.SessionID != id {
			t.Errorf("stream event %+v does not match the reply %+v", got, posted)
		}
		var sb sidebar
		if err := json.Unmarshal(got.Sidebar, &sb); err != nil || sb.PhaseIndicator == nil || len(sb.Sections) == 0 {
			t.Errorf("stream event without the sidebar (%v): %s", err, got.Sidebar)
		}
	}
	// A turn posted without waiting is seen on the stream alone.
	res := n.Post(t, "/v1/sessions/"+id+"/turns", "", map[string]string{"message": "About 40 receptionists will use it."})
	var accepted gatewaytest.Turn
	res.Decode(t, &accepted)
	if got := nextTurn(); got.TurnID != accepted.TurnID || got.Reply == "" || got.TurnNumber != 3 {
		t.Errorf("stream event %+v, want the reply to %s numbered 3", got, accepted.TurnID)
	}
	// Another session's replies do not reach this stream.
	other := n.CreateSession(t, "", "project-discovery")
	n.Say(t, "", other, "We want to build a web app.")
	n.Say(t, "", id, "Patients keep calling to move appointments.")
	if got := nextTurn(); got.SessionID != id || got.TurnNumber != 4 {
		t.Errorf("stream event %+v, want turn 4 of %s", got, id)
	}

	// A client that reconnects with the id of the last turn it saw gets the
	// turns answered since, then the live ones.
	all := turns(t, n, "", id)
	again := n.MustOpenStream(t, id, "")
	if ev := again.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first event %s, want state", ev.Name)
	}
	resumed, _ := n.OpenStreamAfter(t, id, "", all[0].TurnID)
	if ev := resumed.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first event after a reconnection %s, want state", ev.Name)
	}
	for want := 2; want <= 4; want++ {
		if got := nextTurnOn(resumed); got.TurnNumber != want || got.Reply == "" {
			t.Fatalf("after Last-Event-ID %s: turn %d (%q), want turn %d", all[0].TurnID, got.TurnNumber, got.Reply, want)
		}
	}
	n.Say(t, "", id, "They use a shared calendar today.")
	if got := nextTurnOn(resumed); got.TurnNumber != 5 {
		t.Errorf("live after the missed turns: turn %d, want 5", got.TurnNumber)
	}
	if got := nextTurnOn(again); got.TurnNumber != 5 {
		t.Errorf("a stream opened without Last-Event-ID: turn %d, want only the live turn 5", got.TurnNumber)
	}
	// A turn answered after later ones (one the session went on without,
	// set aside once redriven) reaches a client that reconnects after them.
	all = turns(t, n, "", id)
	late := conversation.Turn{ID: "set-aside-turn", TenantID: n.DevTenant, SessionID: id, Message: "lost",
		ReceivedAt: time.Now().Add(-time.Hour)}
	if err := conversation.CreateTurn(context.Background(), n.DB, late); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	late.TurnNumber, late.Reply, late.Phase, late.Degraded, late.RespondedAt = 2, "set aside", "OPENING", true, &at
	if err := conversation.AnswerTurn(context.Background(), n.DB, late); err != nil {
		t.Fatal(err)
	}
	resumedAgain, _ := n.OpenStreamAfter(t, id, "", all[len(all)-1].TurnID)
	if ev := resumedAgain.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first event after a reconnection %s, want state", ev.Name)
	}
	if got := nextTurnOn(resumedAgain); got.TurnID != late.ID || got.Reply != "set aside" {
		t.Errorf("after Last-Event-ID of turn 5: %s (%q), want the turn answered since, %s", got.TurnID, got.Reply, late.ID)
	}

	_, res = n.OpenStream(t, "no-such-session", "")
	wantError(t, res, http.StatusNotFound, "unknown_session", "no-such-session")
}

// A reply published twice (the relay, or a redelivered handler's catch-up,
// publishes again what it cannot tell was published; the stream drops the
// copy, but the gateway's subscription sees both) reaches a session's
// stream once.
func TestStreamShowsARepublishedReplyOnce(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	id := n.CreateSession(t, "", "project-discovery")
	stream := n.MustOpenStream(t, id, "")
	if ev := stream.Next(t, 10*time.Second); ev.Name != "state" {
		t.Fatalf("first event %s, want state", ev.Name)
	}
	reply := func(turnID string) event.Event {
		ev, err := contracts.NewEvent(contracts.Meta{ID: "reply-" + turnID, Source: "/test", Time: time.Now()},
			contracts.TurnResponded{TenantID: n.DevTenant, SessionID: id, TurnID: turnID, TurnNumber: 1, Text: "Who uses it?", Phase: "OPENING"})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	for _, ev := range []event.Event{reply("t1"), reply("t1"), reply("t2")} {
		if err := n.Bus.Publish(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"t1", "t2"} {
		ev := stream.Next(t, 10*time.Second)
		var turn gatewaytest.Turn
		if err := json.Unmarshal([]byte(ev.Data), &turn); ev.Name != "turn" || err != nil || turn.TurnID != want {
			t.Fatalf("stream event %s %s, want the reply to %s (each reply once)", ev.Name, ev.Data, want)
		}
	}
}

func TestInfoPageAndRoutes(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	info := n.Get(t, "/v1/info", "").Map(t)
	if info["offline"] != true || info["llm_provider"] != "offline" || info["tenant_id"] != n.DevTenant {
		t.Errorf("/v1/info %v, want the offline provider and tenant %s", info, n.DevTenant)
	}
	page := n.Get(t, "/", "")
	if page.Status != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page.Body), `data-testid="offline-banner"`) {
		t.Errorf("GET /: %d %s", page.Status, page.Header.Get("Content-Type"))
	}
	for _, path := range []string{"/static/app.js", "/static/app.css"} {
		if res := n.Get(t, path, ""); res.Status != http.StatusOK || len(res.Body) == 0 {
			t.Errorf("GET %s: %d", path, res.Status)
		}
	}
	wantError(t, n.Get(t, "/v1/nope", ""), http.StatusNotFound, "no_route", "/v1/nope", "POST /v1/sessions")
	res := n.Do(t, gatewaytest.Call{Method: http.MethodDelete, Path: "/v1/sessions/x"})
	wantError(t, res, http.StatusMethodNotAllowed, "method_not_allowed", "DELETE", "GET")
	if allow := res.Header.Get("Allow"); allow != "GET" {
		t.Errorf("Allow %q, want GET", allow)
	}
	res = n.Do(t, gatewaytest.Call{Method: http.MethodPut, Path: "/v1/sessions"})
	wantError(t, res, http.StatusMethodNotAllowed, "method_not_allowed")
	if allow := res.Header.Get("Allow"); allow != "GET, POST" {
		t.Errorf("Allow %q, want GET, POST", allow)
	}
}

// TestWaitWithoutReply: with no runner nothing answers; a waiting post ends
// with 202 and the pending turn when its wait runs out or the gateway stops,
// and the turn stays recorded.
func TestWaitWithoutReply(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway", "extractor"}})
	id := n.CreateSession(t, "", "project-discovery")
	const msg = "We want to build a web app for dental clinics."

	began := time.Now()
	res := n.Post(t, "/v1/sessions/"+id+"/turns?wait=300ms", "", map[string]string{"message": msg})
	if res.Status != http.StatusAccepted {
		t.Fatalf("status %d, want 202 once the wait runs out: %s", res.Status, res.Body)
	}
	if waited := time.Since(began); waited < 300*time.Millisecond {
		t.Errorf("answered after %s, before the 300ms wait ran out", waited)
	}
	var pending struct {
		gatewaytest.Turn
		ReceivedAt time.Time `json:"received_at"`
	}
	res.Decode(t, &pending)
	if pending.TurnID == "" || pending.SessionID != id || pending.Status != "pending" || pending.Message != msg ||
		pending.ReceivedAt.IsZero() || pending.Reply != "" {
		t.Errorf("a turn still waiting is shown as %s", res.Body)
	}

	// A post still waiting when the node stops is answered, not cut off.
	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := n.HTTP.Post(n.URL+"/v1/sessions/"+id+"/turns?wait=60s", "application/json",
			strings.NewReader(`{"message": "About 40 receptionists will use it."}`))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer res.Body.Close()
		var b strings.Builder
		_, err = io.Copy(&b, res.Body)
		answered <- answer{status: res.StatusCode, body: b.String(), err: err}
	}()
	gatewaytest.WaitFor(t, 30*time.Second, "the second turn to be recorded", func() bool {
		return len(turns(t, n, "", id)) == 2
	})
	n.Stop(t)
	select {
	case a := <-answered:
		if a.err != nil || a.status != http.StatusAccepted || !strings.Contains(a.body, `"status":"pending"`) {
			t.Errorf("the waiting post ended with %d %s (%v), want 202 pending", a.status, a.body, a.err)
		}
	case <-time.After(30 * time.Second): // half its wait: the stop answered it, its wait did not end
		t.Fatal("the waiting post was not answered when the node stopped")
	}
}
