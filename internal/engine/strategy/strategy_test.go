package strategy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
)

func TestHeuristicClassifier(t *testing.T) {
	tests := []struct {
		text string
		want []engine.Mode
	}{
		{"Could you describe who uses it today?", []engine.Mode{engine.ModeExtract}},
		{"To confirm, here is what I have: a task tracker for 20 people. Is that right?", []engine.Mode{engine.ModeValidate, engine.ModeInform}},
		{"Let me weigh the pros and cons: a custom app versus a SaaS tool.", []engine.Mode{engine.ModeDeliberate}},
		{"Anything else?", []engine.Mode{engine.ModeExtract}},
		{"Thanks.", nil},
	}
	for _, tt := range tests {
		got, err := HeuristicClassifier{}.Classify(context.Background(), tt.text)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Classify(%q) = %v, %v; want %v", tt.text, got, err, tt.want)
		}
	}
	if got, _ := (NoOpClassifier{}).Classify(context.Background(), "anything"); got != nil {
		t.Errorf("NoOp = %v", got)
	}
}

type fakeLLM struct {
	answer string
	err    error
}

func (f fakeLLM) Complete(context.Context, llm.Request) (*llm.Response, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &llm.Response{Content: f.answer}, nil
}

func TestLLMClassifier(t *testing.T) {
	tests := []struct {
		llm  fakeLLM
		want []engine.Mode
	}{
		{fakeLLM{answer: `{"modes":["inform","chatting","inform","validate"]}`}, []engine.Mode{engine.ModeInform, engine.ModeValidate}},
		{fakeLLM{err: errors.New("down")}, []engine.Mode{engine.ModeExtract}},
		{fakeLLM{answer: "inform"}, []engine.Mode{engine.ModeExtract}},
	}
	for _, tt := range tests {
		got, err := LLMClassifier{LLM: tt.llm}.Classify(context.Background(), "Who uses it?")
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Classify = %v, %v; want %v", got, err, tt.want)
		}
	}
}

func TestConfigDrivenFailure(t *testing.T) {
	retry := engine.BackgroundTask{TaskID: "research", DisplayName: "Market research",
		FailureStrategy: engine.FailureStrategy{Type: engine.FailureRetry, MaxRetries: new(3)}}
	tests := []struct {
		name    string
		task    engine.BackgroundTask
		err     error
		attempt int
		want    Decision
	}{
		{"retry 1", retry, errors.New("x"), 1, Decision{Action: engine.FailureRetry, RetryAfter: 5 * time.Second, NextAttempt: 2}},
		{"retry 2", retry, errors.New("x"), 2, Decision{Action: engine.FailureRetry, RetryAfter: 10 * time.Second, NextAttempt: 3}},
		{"retry 3", retry, errors.New("x"), 3, Decision{Action: engine.FailureRetry, RetryAfter: 20 * time.Second, NextAttempt: 4}},
		{"retries spent", retry, errors.New("x"), 4, Decision{Action: engine.FailureProceedWithGap, Note: "Market research is unavailable"}},
		{"permanent skips retries", retry, fmt.Errorf("bad input: %w", ErrPermanent), 1,
			Decision{Action: engine.FailureProceedWithGap, Note: "Market research is unavailable"}},
		{"retry then degrade", engine.BackgroundTask{DisplayName: "R", FailureStrategy: engine.FailureStrategy{Type: engine.FailureRetry,
			MaxRetries: new(1), RetryDelay: engine.Duration(time.Second), Then: engine.FailureDegrade, DegradedBehavior: "use the user's info"}},
			errors.New("x"), 2, Decision{Action: engine.FailureDegrade, Note: "use the user's info"}},
		{"degrade", engine.BackgroundTask{FailureStrategy: engine.FailureStrategy{Type: engine.FailureDegrade, DegradedBehavior: "skip enrichment"}},
			errors.New("x"), 1, Decision{Action: engine.FailureDegrade, Note: "skip enrichment"}},
		{"stall tries again", engine.BackgroundTask{DisplayName: "background research", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall}},
			errors.New("x"), 1, Decision{Action: engine.FailureStall, Note: "Waiting for background research...", RetryAfter: 5 * time.Second, NextAttempt: 2}},
		{"stall backs off", engine.BackgroundTask{DisplayName: "background research", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall}},
			errors.New("x"), 3, Decision{Action: engine.FailureStall, Note: "Waiting for background research...", RetryAfter: 20 * time.Second, NextAttempt: 4}},
		{"stall backoff is capped", engine.BackgroundTask{DisplayName: "background research", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall, MaxRetries: new(20)}},
			errors.New("x"), 10, Decision{Action: engine.FailureStall, Note: "Waiting for background research...", RetryAfter: MaxStallBackoff, NextAttempt: 11}},
		{"stall tries its last retry", engine.BackgroundTask{DisplayName: "background research", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall}},
			errors.New("x"), DefaultStallRetries, Decision{Action: engine.FailureStall, Note: "Waiting for background research...",
				RetryAfter: 80 * time.Second, NextAttempt: DefaultStallRetries + 1}},
		{"stall stops waiting after its retries", engine.BackgroundTask{DisplayName: "background research", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall}},
			errors.New("x"), DefaultStallRetries + 1, Decision{Action: engine.FailureProceedWithGap, Note: "background research is unavailable"}},
		{"stall on a permanent error stops waiting", engine.BackgroundTask{DisplayName: "background research", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall}},
			fmt.Errorf("panic: %w", ErrPermanent), 1, Decision{Action: engine.FailureProceedWithGap, Note: "background research is unavailable"}},
		{"stall then degrade", engine.BackgroundTask{DisplayName: "R", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall,
			MaxRetries: new(2), Then: engine.FailureDegrade, DegradedBehavior: "use the user's info"}},
			errors.New("x"), 3, Decision{Action: engine.FailureDegrade, Note: "use the user's info"}},
		{"configured delay", engine.BackgroundTask{DisplayName: "R", FailureStrategy: engine.FailureStrategy{Type: engine.FailureRetry,
			MaxRetries: new(3), RetryDelay: engine.Duration(2 * time.Second)}},
			errors.New("x"), 3, Decision{Action: engine.FailureRetry, RetryAfter: 8 * time.Second, NextAttempt: 4}},
		{"retry then stall", engine.BackgroundTask{DisplayName: "R", FailureStrategy: engine.FailureStrategy{Type: engine.FailureRetry,
			MaxRetries: new(1), Then: engine.FailureStall}},
			errors.New("x"), 2, Decision{Action: engine.FailureStall, Note: "Waiting for R...", RetryAfter: 10 * time.Second, NextAttempt: 3}},
		{"retry then stall stops waiting", engine.BackgroundTask{DisplayName: "R", FailureStrategy: engine.FailureStrategy{Type: engine.FailureRetry,
			MaxRetries: new(1), Then: engine.FailureStall}},
			errors.New("x"), 2 + DefaultStallRetries, Decision{Action: engine.FailureProceedWithGap, Note: "R is unavailable"}},
	}
	for _, tt := range tests {
		if got := (ConfigDriven{}).HandleFailure(tt.task, tt.err, tt.attempt); got != tt.want {
			t.Errorf("%s: decision = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestRecordFailure(t *testing.T) {
	at := time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC)
	m := &engine.WorkingMemory{TurnNumber: 4, BackgroundTasks: engine.BackgroundTaskState{Pending: []engine.TaskRecord{
		{TaskID: "a", Attempt: 1}, {TaskID: "b", Attempt: 1}, {TaskID: "c", Attempt: 1}, {TaskID: "d", Attempt: 1}}}}
	RecordFailure(m, "a", errors.New("timeout"), Decision{Action: engine.FailureRetry, NextAttempt: 2, RetryAfter: 5 * time.Second}, at)
	if a := m.BackgroundTasks.Pending[0]; a.Attempt != 2 || a.Status != engine.TaskRetrying || !a.NotBefore.Equal(at.Add(5*time.Second)) || a.Error != "timeout" {
		t.Errorf("retry: %+v", a)
	}
	RecordFailure(m, "b", errors.New("gone"), Decision{Action: engine.FailureProceedWithGap, Note: "B is unavailable"}, at)
	if len(m.BackgroundTasks.Pending) != 3 || len(m.BackgroundTasks.Completed) != 1 || m.BackgroundTasks.Completed[0].Status != "proceed-with-gap" ||
		m.BackgroundTasks.Completed[0].SettledAtTurn != 4 || !slices.Equal(m.BackgroundTasks.Gaps, []string{"b"}) {
		t.Errorf("gap: %+v", m.BackgroundTasks)
	}
	RecordFailure(m, "c", errors.New("down"), Decision{Action: engine.FailureDegrade, Note: "skip it"}, at)
	if c, _ := m.BackgroundTasks.Task("c"); c.Status != engine.TaskDegraded || c.Note != "skip it" || m.BackgroundTasks.IsPending("c") {
		t.Errorf("degrade: %+v", c)
	}
	RecordFailure(m, "d", errors.New("down"), Decision{Action: engine.FailureStall, Note: "Waiting for D...", NextAttempt: 2, RetryAfter: time.Minute}, at)
	if st := m.BackgroundTasks.Stalled(); len(st) != 1 || st[0].TaskID != "d" || st[0].Attempt != 2 || st[0].Note != "Waiting for D..." {
		t.Errorf("stall: %+v", st)
	}
	if RecordFailure(m, "zzz", errors.New("x"), Decision{Action: engine.FailureDegrade}, at) {
		t.Error("a task nobody awaits was recorded")
	}
}

// TestStallMaxRetriesAsWritten reads the stall strategy from YAML, as an
// engine file gives it: max_retries: 0 means no retry (then applies at
// once), and no max_retries means DefaultStallRetries.
func TestStallMaxRetriesAsWritten(t *testing.T) {
	tests := []struct {
		yaml    string
		attempt int
		want    Action
	}{
		{"type: stall\nmax_retries: 0\n", 1, engine.FailureProceedWithGap},
		{"type: stall\nmax_retries: 0\nthen: degrade\n", 1, engine.FailureDegrade},
		{"type: stall\nmax_retries: 1\n", 1, engine.FailureStall},
		{"type: stall\nmax_retries: 1\n", 2, engine.FailureProceedWithGap},
		{"type: stall\n", DefaultStallRetries, engine.FailureStall},
		{"type: stall\n", DefaultStallRetries + 1, engine.FailureProceedWithGap},
	}
	for _, tt := range tests {
		var fs engine.FailureStrategy
		if err := yaml.Unmarshal([]byte(tt.yaml), &fs); err != nil {
			t.Fatal(err)
		}
		got := (ConfigDriven{}).HandleFailure(engine.BackgroundTask{TaskID: "research", FailureStrategy: fs}, errors.New("x"), tt.attempt)
		if got.Action != tt.want {
			t.Errorf("%q, attempt %d: action = %s, want %s", tt.yaml, tt.attempt, got.Action, tt.want)
		}
	}
}

// A retry_delay that is not positive (validation refuses it; a definition
// built in Go may still carry one) backs off as the default 5s does, not at
// once.
func TestNonPositiveRetryDelayBacksOffAsTheDefault(t *testing.T) {
	for _, delay := range []time.Duration{-5 * time.Second, -1, 0} {
		for _, typ := range []engine.FailureStrategyType{engine.FailureRetry, engine.FailureStall} {
			task := engine.BackgroundTask{TaskID: "research", FailureStrategy: engine.FailureStrategy{Type: typ,
				MaxRetries: new(3), RetryDelay: engine.Duration(delay)}}
			for attempt, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second} {
				d := ConfigDriven{}.HandleFailure(task, errors.New("timeout"), attempt)
				if d.Action != typ || d.RetryAfter != want {
					t.Errorf("%s with retry_delay %s, attempt %d: %s after %s; want %s after %s",
						typ, delay, attempt, d.Action, d.RetryAfter, typ, want)
				}
			}
		}
	}
}
