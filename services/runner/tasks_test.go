package runner_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/runner"
)

// handedOff is a session of the testing engine whose first turn dispatched
// budget_research (failure strategy fs) and handed off to "elsewhere".
func handedOff(t *testing.T, fs engine.FailureStrategy) (*runner.Runner, *engine.Definition, *runner.Result) {
	t.Helper()
	def := enginetest.Definition()
	def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "budget_research", DisplayName: "Budget research", Handler: "research.web",
		EstimatedDuration: engine.Duration(10 * time.Second),
		Trigger:           engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}},
		FailureStrategy:   fs}}
	def.ExitTransitions = []engine.ExitTransition{{TargetEngine: "elsewhere", Reason: "user asked",
		Conditions: []engine.Condition{{Type: engine.CondUserRequest, Keywords: []string{"explore options"}}}}}
	r := newRunner(t, &fakeLLM{reply: "Sure."})
	res := process(t, r, def, nil, input(t, def, nil, "Can we explore options?", nil))
	if len(res.Effects.Tasks) != 1 || res.Effects.Exit == nil {
		t.Fatalf("turn 1: tasks %+v, exit %+v", res.Effects.Tasks, res.Effects.Exit)
	}
	return r, def, res
}

// A failed attempt of a session that has handed off is not tried again: the
// session takes no more turns, and nothing it would wait for can help it.
// The task settles, with the failure and why.
func TestNoRetryAfterTheHandoff(t *testing.T) {
	for _, fs := range []engine.FailureStrategy{
		{Type: engine.FailureRetry, MaxRetries: new(3)},
		{Type: engine.FailureStall},
	} {
		r, def, res := handedOff(t, fs)
		mg, err := r.Merge(def, res.State, runner.TaskOutcome{TaskID: "budget_research", Attempt: 1, Error: "search API timed out",
			At: res.ProcessedAt.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		rec, _ := mg.State.BackgroundTasks.Task("budget_research")
		if !mg.Applied || len(mg.Tasks) != 0 || rec.Status != engine.TaskDegraded || len(mg.State.BackgroundTasks.Pending) != 0 ||
			rec.Error != "search API timed out" || rec.Note == "" {
			t.Errorf("%s after the handoff: applied %t, dispatches %+v, record %+v", fs.Type, mg.Applied, mg.Tasks, rec)
		}
		if mg.Forward != nil {
			t.Errorf("%s: a failure is forwarded: %+v", fs.Type, mg.Forward)
		}
	}
}

// The result of research the session started before it handed off serves
// the session the conversation went on in: it is recorded here, and
// forwarded to the handoff's target session, where it merges as a completed
// task of its own.
func TestResultAfterTheHandoffIsForwarded(t *testing.T) {
	r, def, res := handedOff(t, engine.FailureStrategy{Type: engine.FailureProceedWithGap})
	out := json.RawMessage(`{"summary":"budgets run $2k-$8k","findings":[]}`)
	at := res.ProcessedAt.Add(time.Minute)
	mg, err := r.Merge(def, res.State, runner.TaskOutcome{TaskID: "budget_research", Attempt: 1, Completed: true, Output: out, At: at})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := mg.State.BackgroundTasks.Task("budget_research"); !mg.Applied || rec.Status != engine.TaskCompleted {
		t.Fatalf("source: applied %t, record %+v", mg.Applied, rec)
	}
	want := runner.Forward{SessionID: runner.TargetSessionID(res.State.Exit.HandoffID),
		Outcome: runner.TaskOutcome{TaskID: "budget_research", Attempt: 1, Completed: true, Output: out, At: at, From: "s1"}}
	if f := mg.Forward; f == nil || f.SessionID != want.SessionID || f.Outcome.From != "s1" || string(f.Outcome.Output) != string(out) ||
		f.Outcome.TaskID != "budget_research" || !f.Outcome.At.Equal(at) {
		t.Fatalf("forward = %+v, want %+v", f, want)
	}

	// The target, another engine that defines no such task, takes it once.
	target := enginetest.Definition()
	target.EngineID = "elsewhere"
	tm := engine.NewWorkingMemory(target, want.SessionID, "p1")
	got, err := r.Merge(target, tm, mg.Forward.Outcome)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := got.State.BackgroundTasks.Task("budget_research")
	if !got.Applied || !ok || rec.Status != engine.TaskCompleted || string(rec.Result) != string(out) || got.Status != contracts.TaskStatusCompleted {
		t.Fatalf("target: applied %t, record %+v", got.Applied, rec)
	}
	if again, _ := r.Merge(target, got.State, mg.Forward.Outcome); again.Applied {
		t.Error("the forwarded result merged twice")
	}
	// A session that never started the task takes no failure or plain
	// result of it.
	if plain, _ := r.Merge(target, tm, runner.TaskOutcome{TaskID: "budget_research", Attempt: 1, Completed: true, Output: out}); plain.Applied {
		t.Error("a result the target never waited for merged")
	}
}

// A project-discovery session handed the problem and the option chosen
// knows the problem from the handoff, so its competitive scan is
// dispatched at turn 2, before the user has said what it is: the scan
// works on the pain points and the decision the handoff carried. (Its
// input used to hold only "Project type: Sounds good", and the scan looked
// for products solving no problem.)
func TestCompetitiveScanWorksOnTheCarriedProblem(t *testing.T) {
	h := handOff(t, "exploration", nil, explorationMessages...)
	h = handOff(t, "project-discovery", &h, projectDiscoveryMessages...)
	h = handOff(t, "exploration", &h, explorationMessages...)
	res := startFrom(t, "project-discovery", &h, "Hello again.", "Sounds good.")
	i := slices.IndexFunc(res.Effects.Tasks, func(d runner.TaskDispatch) bool { return d.TaskID == "competitive_scan" })
	if i < 0 {
		t.Fatalf("turn 2 dispatched %+v, want competitive_scan", res.Effects.Tasks)
	}
	var in tasks.Input
	if err := json.Unmarshal(res.Effects.Tasks[i].Input, &in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pain point (from an earlier session): " + h.SituationAwareness.KeyPainPoints[0],
		"Decision (from an earlier session): " + h.ActionList.DecisionsReached[0].Decision,
	} {
		if !slices.Contains(in.Facts, want) {
			t.Errorf("facts %q lack %q", in.Facts, want)
		}
	}
}

// While a stalled task holds progress the reply says so, and what waits
// for it: the next phase, the handoff of the last phase, or, in a last
// phase with no exit, nothing ("the next step" there promised one).
func TestStalledNoticeNamesWhatWaits(t *testing.T) {
	for _, tc := range []struct {
		name, phase string
		exit        bool
		want, not   string
	}{
		{"a phase with a next one", "INTRO", false, "the next step waits for it", ""},
		{"the last phase, with an exit", "REVIEW", true, "moving on to the next conversation waits for it", "next step"},
		{"the last phase, with no exit", "REVIEW", false, "We can go on talking meanwhile.", "next step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := enginetest.Definition()
			def.InitialPhase = tc.phase
			def.BackgroundTasks = []engine.BackgroundTask{{TaskID: "budget_research", DisplayName: "Budget research",
				Handler: "research.web", EstimatedDuration: engine.Duration(10 * time.Second), BlockPhaseTransition: true,
				Trigger:         engine.TaskTrigger{Type: engine.TaskTriggerObligationStatus, ObligationIDs: []string{"budget_known"}},
				FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall}}}
			if tc.exit {
				def.ExitTransitions = []engine.ExitTransition{{TargetEngine: "elsewhere", Reason: "user asked",
					Conditions: []engine.Condition{{Type: engine.CondUserRequest, Keywords: []string{"explore options"}}}}}
			}
			r := newRunner(t, &fakeLLM{reply: "Sure."})
			res := process(t, r, def, nil, input(t, def, nil, "Hello", nil))
			mg, err := r.Merge(def, res.State, runner.TaskOutcome{TaskID: "budget_research", Attempt: 1, Error: "search API timed out",
				At: res.ProcessedAt.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			res = process(t, r, def, mg.State, input(t, def, mg.State, "Tell me more", nil))
			if !slices.Equal(res.Stalled, []string{"Budget research"}) || res.Phase != tc.phase {
				t.Fatalf("stalled %v in phase %s; want Budget research in %s", res.Stalled, res.Phase, tc.phase)
			}
			if !strings.Contains(res.Reply, "(Waiting for background research: Budget research.") ||
				!strings.Contains(res.Reply, tc.want) || (tc.not != "" && strings.Contains(res.Reply, tc.not)) {
				t.Errorf("reply %q; want it to say %q", res.Reply, tc.want)
			}
		})
	}
}
