package tasks_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/obligation"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/pkg/contracts"
)

func TestDueAndDispatch(t *testing.T) {
	tests := []struct {
		name    string
		trigger engine.TaskTrigger
		setup   func(m *engine.WorkingMemory)
		want    bool
	}{
		{"low confidence ignores pending", engine.TaskTrigger{Type: engine.TaskTriggerLowConfidence, Threshold: 0.6}, nil, false},
		{"low confidence fires on weak evidence", engine.TaskTrigger{Type: engine.TaskTriggerLowConfidence, Threshold: 0.6},
			func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.users", "ops", 0.4, 1) }, true},
		{"low confidence limited to ids", engine.TaskTrigger{Type: engine.TaskTriggerLowConfidence, Threshold: 0.6, ObligationIDs: []string{"goal_known"}},
			func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.users", "ops", 0.4, 1) }, false},
		{"status pending", engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}}, nil, true},
		{"status no longer pending", engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}},
			func(m *engine.WorkingMemory) { enginetest.Set(m, "details.budget", 10, 0.9, 1) }, false},
		{"min turn delays", engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}, MinTurn: 3}, nil, false},
		{"custom at threshold", engine.TaskTrigger{Type: engine.TaskTriggerCustom, Evaluator: "half", Threshold: 0.5}, nil, true},
		{"custom default threshold 1", engine.TaskTrigger{Type: engine.TaskTriggerCustom, Evaluator: "half"}, nil, false},
		{"already dispatched", engine.TaskTrigger{Type: engine.TaskTriggerCustom, Evaluator: "always"},
			func(m *engine.WorkingMemory) {
				m.BackgroundTasks.Completed = []engine.TaskRecord{{TaskID: "research"}}
			}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := enginetest.Definition()
			def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "research", Handler: "research.web", Trigger: tt.trigger}}
			m := enginetest.Memory(def)
			m.TurnNumber = 2
			if tt.setup != nil {
				tt.setup(m)
			}
			m.Obligations = obligation.Evaluate(def, m, enginetest.Registry())
			due := tasks.Due(def, m, enginetest.Registry())
			if got := len(due) == 1; got != tt.want {
				t.Fatalf("due = %+v, want fired %t", due, tt.want)
			}
			if !tt.want {
				return
			}
			recs := tasks.Dispatch(m, due)
			if len(recs) != 1 || recs[0].Attempt != 1 || recs[0].DispatchedAtTurn != 2 || !m.BackgroundTasks.IsPending("research") {
				t.Errorf("records = %+v, state = %+v", recs, m.BackgroundTasks)
			}
			if again := tasks.Due(def, m, enginetest.Registry()); len(again) != 0 {
				t.Errorf("dispatched twice: %+v", again)
			}
		})
	}
}

// dispatched is a memory of the test engine whose task "research" (with
// strategy fs) was dispatched at turn 2.
func dispatched(t *testing.T, fs engine.FailureStrategy) (*engine.Definition, *engine.WorkingMemory) {
	t.Helper()
	def := enginetest.Definition()
	def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "research", DisplayName: "Research", Handler: "research.web",
		Trigger: engine.TaskTrigger{Type: engine.TaskTriggerCustom, Evaluator: "always"}, FailureStrategy: fs}}
	m := enginetest.Memory(def)
	m.TurnNumber, m.UpdatedAt = 2, epoch
	if recs := tasks.Dispatch(m, def.BackgroundTasks); len(recs) != 1 || !recs[0].DispatchedAt.Equal(epoch) {
		t.Fatalf("dispatch = %+v", recs)
	}
	return def, m
}

var epoch = time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)

func TestCompleteMergesTheAwaitedAttemptOnce(t *testing.T) {
	_, m := dispatched(t, engine.FailureStrategy{Type: engine.FailureDegrade})
	if tasks.Complete(m, "research", 2, json.RawMessage(`{"a":1}`)) {
		t.Fatal("an attempt nobody awaits was merged")
	}
	m.TurnNumber = 3
	if !tasks.Complete(m, "research", 1, json.RawMessage(`{"a":1}`)) {
		t.Fatal("the awaited attempt was not merged")
	}
	if tasks.Complete(m, "research", 1, json.RawMessage(`{"a":2}`)) {
		t.Fatal("a duplicate was merged again")
	}
	r, _ := m.BackgroundTasks.Task("research")
	if r.Status != engine.TaskCompleted || string(r.Result) != `{"a":1}` || r.SettledAtTurn != 3 || len(m.BackgroundTasks.Pending) != 0 {
		t.Errorf("record = %+v", r)
	}
}

// Each failure strategy of the seed, merged into working memory.
func TestFailureStrategies(t *testing.T) {
	boom := tasks.Failure{Message: "search API timed out"}
	panicked := tasks.Failure{Message: "handler panicked: nil map", Permanent: true}
	type attempt struct {
		err        error
		wantStatus string
		wantNext   int           // the attempt now awaited (0: settled)
		wantWait   time.Duration // the backoff before it
	}
	tests := []struct {
		name     string
		fs       engine.FailureStrategy
		attempts []attempt
		gap      bool
	}{
		{"retry 5s 10s 20s then the gap", engine.FailureStrategy{Type: engine.FailureRetry, MaxRetries: new(3)},
			[]attempt{{boom, engine.TaskRetrying, 2, 5 * time.Second}, {boom, engine.TaskRetrying, 3, 10 * time.Second},
				{boom, engine.TaskRetrying, 4, 20 * time.Second}, {boom, engine.TaskGap, 0, 0}}, true},
		{"retry with a configured delay then degrade", engine.FailureStrategy{Type: engine.FailureRetry, MaxRetries: new(1),
			RetryDelay: engine.Duration(time.Second), Then: engine.FailureDegrade, DegradedBehavior: "use what the user said"},
			[]attempt{{boom, engine.TaskRetrying, 2, time.Second}, {boom, engine.TaskDegraded, 0, 0}}, false},
		{"a panic skips the retries", engine.FailureStrategy{Type: engine.FailureRetry, MaxRetries: new(3)},
			[]attempt{{panicked, engine.TaskGap, 0, 0}}, true},
		{"degrade", engine.FailureStrategy{Type: engine.FailureDegrade, DegradedBehavior: "skip enrichment"},
			[]attempt{{boom, engine.TaskDegraded, 0, 0}}, false},
		{"stall tries until it succeeds", engine.FailureStrategy{Type: engine.FailureStall},
			[]attempt{{boom, engine.TaskStalled, 2, 5 * time.Second}, {boom, engine.TaskStalled, 3, 10 * time.Second}}, false},
		{"stall stops waiting after its retries", engine.FailureStrategy{Type: engine.FailureStall, MaxRetries: new(1)},
			[]attempt{{boom, engine.TaskStalled, 2, 5 * time.Second}, {boom, engine.TaskGap, 0, 0}}, true},
		{"stall on a panic stops waiting", engine.FailureStrategy{Type: engine.FailureStall},
			[]attempt{{panicked, engine.TaskGap, 0, 0}}, true},
		{"proceed with gap", engine.FailureStrategy{Type: engine.FailureProceedWithGap},
			[]attempt{{boom, engine.TaskGap, 0, 0}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, m := dispatched(t, tt.fs)
			at := epoch
			for i, a := range tt.attempts {
				at = at.Add(time.Minute)
				if _, ok := tasks.Fail(def, m, nil, "research", i+1, a.err, at); !ok {
					t.Fatalf("attempt %d was not awaited", i+1)
				}
				r, _ := m.BackgroundTasks.Task("research")
				if r.Status != a.wantStatus || r.Error != a.err.Error() {
					t.Fatalf("attempt %d: record %+v, want status %s", i+1, r, a.wantStatus)
				}
				if a.wantNext == 0 {
					if m.BackgroundTasks.IsPending("research") || r.Note == "" {
						t.Fatalf("attempt %d: not settled with a note: %+v", i+1, r)
					}
					continue
				}
				if r.Attempt != a.wantNext || (a.wantWait > 0 && !r.NotBefore.Equal(at.Add(a.wantWait))) {
					t.Fatalf("attempt %d: record %+v, want attempt %d not before %s", i+1, r, a.wantNext, at.Add(a.wantWait))
				}
			}
			if got := slices.Contains(m.BackgroundTasks.Gaps, "research"); got != tt.gap {
				t.Errorf("gap flagged = %t, want %t", got, tt.gap)
			}
			last := tt.attempts[len(tt.attempts)-1]
			if stalled := len(m.BackgroundTasks.Stalled()) > 0; stalled != (last.wantStatus == engine.TaskStalled) {
				t.Errorf("stalled = %t", stalled)
			}
		})
	}
}

// A gap is dispatched again when a later phase comes.
func TestRefillAGap(t *testing.T) {
	def, m := dispatched(t, engine.FailureStrategy{Type: engine.FailureProceedWithGap})
	tasks.Fail(def, m, nil, "research", 1, tasks.Failure{Message: "down"}, epoch)
	if len(m.BackgroundTasks.Gaps) != 1 {
		t.Fatalf("gaps = %v", m.BackgroundTasks.Gaps)
	}
	m.TurnNumber = 5
	recs := tasks.Refill(def, m)
	if len(recs) != 1 || recs[0].Attempt != 2 || recs[0].DispatchedAtTurn != 5 || !m.BackgroundTasks.IsPending("research") ||
		len(m.BackgroundTasks.Gaps) != 0 {
		t.Fatalf("refill = %+v, state %+v", recs, m.BackgroundTasks)
	}
	if again := tasks.Refill(def, m); len(again) != 0 {
		t.Errorf("refilled twice: %+v", again)
	}
	if !tasks.Complete(m, "research", 2, json.RawMessage(`{}`)) {
		t.Error("the refill's result was not merged")
	}
}

func TestOverdue(t *testing.T) {
	def, m := dispatched(t, engine.FailureStrategy{Type: engine.FailureDegrade})
	def.BackgroundTasks[0].EstimatedDuration = engine.Duration(30 * time.Second)
	if late := tasks.Overdue(def, m, 2, epoch.Add(2*time.Minute)); len(late) != 0 {
		t.Fatalf("overdue at twice the timeout: %+v", late)
	}
	if late := tasks.Overdue(def, m, 2, epoch.Add(2*time.Minute+time.Second)); len(late) != 1 || late[0].TaskID != "research" {
		t.Fatalf("not overdue past twice the timeout: %+v", late)
	}
	// A retry counts from when it may start.
	m.BackgroundTasks.Pending[0].NotBefore = epoch.Add(time.Hour)
	if late := tasks.Overdue(def, m, 2, epoch.Add(time.Hour+time.Minute)); len(late) != 0 {
		t.Errorf("a retry waiting for its backoff is overdue: %+v", late)
	}
	def.BackgroundTasks[0].EstimatedDuration = 0
	if late := tasks.Overdue(def, m, 2, epoch.Add(1000*time.Hour)); len(late) != 0 {
		t.Errorf("a task without a duration is overdue: %+v", late)
	}
}

// researchTask is a task of the testing engine, for NewInput.
var researchTask = engine.BackgroundTask{TaskID: "research", DisplayName: "Research",
	Description: "Look up products that solve the user's problem.", Handler: "research.web"}

// The input of a session that started without a handoff is the one its
// recorded request hash was computed from: the fields extracted, in schema
// order, strings unquoted, values clipped at 200 characters.
func TestNewInputWithoutAHandoffIsUnchanged(t *testing.T) {
	def := enginetest.Definition()
	m := enginetest.Memory(def)
	m.Phase.Current = "DETAILS"
	enginetest.Set(m, "details.features", []string{"job list", "signatures"}, 0.9, 3)
	enginetest.Set(m, "basics.goal", strings.Repeat("No job is forgotten. ", 12), 0.9, 1)
	enginetest.Set(m, "details.budget", 90000, 0.9, 2)
	enginetest.Set(m, "basics.users", "40 field technicians", 0.9, 2)
	got, err := json.Marshal(tasks.NewInput(def, m, researchTask))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"task_id":"research","display_name":"Research","description":"Look up products that solve the user's problem.",` +
		`"engine_id":"testing","project_id":"project-1","phase":"DETAILS","facts":["Goal: No job is forgotten. No job is forgotten. ` +
		`No job is forgotten. No job is forgotten. No job is forgotten. No job is forgotten. No job is forgotten. No job is forgotten. ` +
		`No job is forgotten. No job is f…","Users: 40 field technicians","Budget: 90000","Features: [\"job list\",\"signatures\"]"]}`
	if string(got) != want {
		t.Errorf("input = %s\nwant    %s", got, want)
	}
}

// A session started by a handoff knows what the handoff carried before the
// user says anything here: its tasks work on the problem (the pain points),
// the decisions reached (one choice made for two questions with the
// question of each, not as a repeat), the goals and the
// constraints, each labelled as from an earlier session, then on what this
// session extracted.
func TestNewInputCarriesTheInboundHandoff(t *testing.T) {
	def := enginetest.Definition()
	m := enginetest.Memory(def)
	h := contracts.EngineHandoff{
		ActionList: contracts.ActionList{
			DecisionsReached: []contracts.Decision{{Decision: "off-the-shelf tool", Confidence: 0.85,
				Reasoning: "It is cheap and fast to start with"},
				{Decision: "PostgreSQL", Question: "Which database should we use for the app?"},
				{Decision: "PostgreSQL", Question: "Which database should we use for analytics?"}},
			ConstraintsIdentified: []contracts.IdentifiedConstraint{{Constraint: "Integration: QuickBooks"}},
		},
		SituationAwareness: contracts.SituationAwareness{
			KeyPainPoints: []string{"Jobs get lost on paper", " "},
			UserGoals:     []string{"No job is forgotten"},
		},
	}
	var err error
	if m.InboundHandoff, err = json.Marshal(h); err != nil {
		t.Fatal(err)
	}
	enginetest.Set(m, "basics.name", "Sounds good.", 0.5, 2)
	want := []string{
		"Pain point (from an earlier session): Jobs get lost on paper",
		"Decision (from an earlier session): off-the-shelf tool",
		"Decision (from an earlier session): PostgreSQL, for: Which database should we use for the app?",
		"Decision (from an earlier session): PostgreSQL, for: Which database should we use for analytics?",
		"Goal (from an earlier session): No job is forgotten",
		"Constraint (from an earlier session): Integration: QuickBooks",
		"Name: Sounds good.",
	}
	if got := tasks.NewInput(def, m, researchTask).Facts; !slices.Equal(got, want) {
		t.Errorf("facts = %q, want %q", got, want)
	}
}
