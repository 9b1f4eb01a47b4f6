package strategy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

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
		FailureStrategy: engine.FailureStrategy{Type: engine.FailureRetry, MaxRetries: 3}}
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
			MaxRetries: 1, RetryDelay: engine.Duration(time.Second), Then: engine.FailureDegrade, DegradedBehavior: "use the user's info"}},
			errors.New("x"), 2, Decision{Action: engine.FailureDegrade, Note: "use the user's info"}},
		{"degrade", engine.BackgroundTask{FailureStrategy: engine.FailureStrategy{Type: engine.FailureDegrade, DegradedBehavior: "skip enrichment"}},
			errors.New("x"), 1, Decision{Action: engine.FailureDegrade, Note: "skip enrichment"}},
		{"stall", engine.BackgroundTask{DisplayName: "background research", FailureStrategy: engine.FailureStrategy{Type: engine.FailureStall}},
			errors.New("x"), 1, Decision{Action: engine.FailureStall, Note: "Waiting for background research..."}},
	}
	for _, tt := range tests {
		if got := (ConfigDriven{}).HandleFailure(tt.task, tt.err, tt.attempt); got != tt.want {
			t.Errorf("%s: decision = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestRecordFailure(t *testing.T) {
	m := &engine.WorkingMemory{BackgroundTasks: engine.BackgroundTaskState{Pending: []engine.TaskRecord{{TaskID: "a", Attempt: 1}, {TaskID: "b", Attempt: 1}}}}
	RecordFailure(m, "a", errors.New("timeout"), Decision{Action: engine.FailureRetry, NextAttempt: 2})
	if m.BackgroundTasks.Pending[0].Attempt != 2 {
		t.Errorf("retry: %+v", m.BackgroundTasks.Pending)
	}
	RecordFailure(m, "b", errors.New("gone"), Decision{Action: engine.FailureProceedWithGap})
	if len(m.BackgroundTasks.Pending) != 1 || len(m.BackgroundTasks.Completed) != 1 || m.BackgroundTasks.Completed[0].Status != "proceed-with-gap" ||
		!slices.Equal(m.BackgroundTasks.Gaps, []string{"b"}) {
		t.Errorf("gap: %+v", m.BackgroundTasks)
	}
}
