package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// Streams finds a stream, to list its consumers; jetstream.JetStream is
// one.
type Streams interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
}

// jetStreamer is a bus that gives its JetStream (*events.Bus).
type jetStreamer interface {
	JetStream() jetstream.JetStream
}

// defaultUnservedAfter is how long an attempt waits before the dispatcher
// looks whether any worker pool takes its agent's attempts.
const defaultUnservedAfter = 30 * time.Second

// unservedHint says how an agent gets a worker pool.
const unservedHint = "run an agent-worker on this NATS with a registry that has the agent: praetor serve --services agent-worker " +
	"(or praetor dev) with PRAETOR_WORKFLOW_REGISTRY naming the registry file, and PRAETOR_WORKFLOW_AGENTS listing the agent when it is set; " +
	"praetor workflow run serves its agents itself unless --workers 0"

// lookTimeout bounds one look at the task stream's consumers.
const lookTimeout = 5 * time.Second

// looks is what the dispatcher's looks for worker pools share: per tenant
// and agent, when the last look started and whether one runs, so that many
// long attempts of one agent (an LLM agent's run past UnservedAfter as a
// rule) list the stream's consumers once per UnservedAfter, not once each.
type looks struct {
	// ctx ends the looks still running when the dispatcher stops.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	byAgent map[string]*look
}

type look struct {
	started time.Time
	running bool
}

func newLooks() *looks {
	ctx, stop := context.WithCancel(context.Background())
	return &looks{ctx: ctx, stop: stop, byAgent: map[string]*look{}}
}

// close ends the looks running and waits for them; none starts after.
func (l *looks) close() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.stop()
	l.wg.Wait()
}

// lookServed starts, in its own goroutine, a look for a worker pool of
// task's agent, unless the agent was warned of already, a look for it runs,
// or the last one started less than UnservedAfter ago. The attempt does not
// wait for it: its answer may come meanwhile. A look warns, once per
// agent, when no consumer of the task stream takes the agent's attempts: a
// worker pool of the agent creates one (<pool>-<agent>), and without it the
// attempt waits silently until its timeout. A look that fails says nothing:
// the wait goes on as before.
func (d *Dispatcher) lookServed(tenant string, task agent.Task) {
	if d.cfg.Streams == nil {
		return
	}
	if _, warned := d.unserved.Load(task.Agent); warned {
		return
	}
	l, key, now := d.looks, tenant+"\x00"+task.Agent, d.cfg.Now()
	l.mu.Lock()
	last := l.byAgent[key]
	if l.stopped || last != nil && (last.running || now.Sub(last.started) < d.cfg.UnservedAfter) {
		l.mu.Unlock()
		return
	}
	if last == nil {
		last = &look{}
		l.byAgent[key] = last
	}
	last.started, last.running = now, true
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		defer func() {
			l.mu.Lock()
			last.running = false
			l.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(l.ctx, lookTimeout)
		defer cancel()
		d.checkServed(ctx, tenant, task)
	}()
}

// checkServed warns, once per agent, when no consumer of the task stream
// takes the attempts of task's agent.
func (d *Dispatcher) checkServed(ctx context.Context, tenant string, task agent.Task) {
	served, err := d.served(ctx, tenant, task.Agent)
	if err != nil {
		d.cfg.Logger.Debug("could not look for the worker pool of an agent", "agent", task.Agent, "error", err)
		return
	}
	if served {
		return
	}
	if _, warned := d.unserved.LoadOrStore(task.Agent, true); warned {
		return
	}
	d.cfg.Logger.Warn("no worker pool serves this agent: its attempts wait for a taker until their timeout",
		"agent", task.Agent, "task", task.TaskID, "dispatch", task.DispatchID, "waited", d.cfg.UnservedAfter,
		"stream", contracts.StreamTasks, "hint", unservedHint)
}

// served reports whether a consumer of the task stream takes the attempts
// of an agent of a tenant.
func (d *Dispatcher) served(ctx context.Context, tenant, agentName string) (bool, error) {
	stream, err := d.cfg.Streams.Stream(ctx, contracts.StreamTasks)
	if err != nil {
		return false, fmt.Errorf("dispatch: stream %s: %w", contracts.StreamTasks, err)
	}
	subject := contracts.TaskDispatchedSpec.SubjectPrefix() + "." + tenant + "." + agentName
	list := stream.ListConsumers(ctx)
	served := false
	for info := range list.Info() {
		filters := info.Config.FilterSubjects
		if info.Config.FilterSubject != "" {
			filters = append(filters, info.Config.FilterSubject)
		}
		for _, f := range filters {
			if subjectMatches(f, subject) {
				served = true
			}
		}
	}
	if err := list.Err(); err != nil {
		return false, fmt.Errorf("dispatch: consumers of %s: %w", contracts.StreamTasks, err)
	}
	return served, nil
}

// subjectMatches reports whether a NATS subject filter (with * and >)
// matches a subject.
func subjectMatches(filter, subject string) bool {
	ft, st := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, f := range ft {
		if f == ">" {
			return len(st) > i
		}
		if i >= len(st) || (f != "*" && f != st[i]) {
			return false
		}
	}
	return len(ft) == len(st)
}
