package executor_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/executor"
)

// Only the attempts in flight when a run stopped are marked redispatched
// on resume; the attempts dispatched for the first time are not.
func TestRedispatchedMarksOnlyResumedAttempts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, chainABC, map[string]string{"brief.md": "brief"})
	var mu sync.Mutex
	marked := map[string]bool{}
	started := make(chan struct{})
	var once sync.Once
	first := agent.NewRouter(map[string]agent.Runtime{"mock": dispatchFunc(func(ctx context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
		mu.Lock()
		marked[task.DispatchID] = executor.Redispatched(ctx)
		mu.Unlock()
		if task.TaskID == "b" {
			once.Do(func() { close(started) })
			<-ctx.Done()
			return agent.Result{}, ctx.Err()
		}
		return answer(task), nil
	})})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.executor(t, first, nil).Run(ctx, e.bundle, executor.RunOptions{RunID: "run-mark"})
		done <- err
	}()
	within(t, started, "b to be dispatched")
	stop()
	if err := <-done; !errors.Is(err, executor.ErrInterrupted) {
		t.Fatalf("run = %v", err)
	}
	second := agent.NewRouter(map[string]agent.Runtime{"mock": dispatchFunc(func(ctx context.Context, task agent.Task, _ agent.Context) (agent.Result, error) {
		mu.Lock()
		marked[task.DispatchID+" resumed"] = executor.Redispatched(ctx)
		mu.Unlock()
		return answer(task), nil
	})})
	if _, err := e.executor(t, second, nil).Resume(context.Background(), e.bundle, "run-mark"); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"run-mark/a/1": false, "run-mark/b/1": false, "run-mark/b/1 resumed": true, "run-mark/c/1 resumed": false}
	mu.Lock()
	defer mu.Unlock()
	for k, v := range want {
		if got, ok := marked[k]; !ok || got != v {
			t.Errorf("Redispatched for %s = %v (seen %v), want %v", k, got, ok, v)
		}
	}
}

type dispatchFunc func(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error)

func (f dispatchFunc) Dispatch(ctx context.Context, t agent.Task, c agent.Context) (agent.Result, error) {
	return f(ctx, t, c)
}
