package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/redact"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
	"github.com/praetorhq/praetor/services/orchestrator/runevents"
)

func init() {
	// submit reads its flags after WORKFLOW itself, as run does.
	interspersedFlags["praetor workflow submit"] = true
}

// submitFlags are the settings of praetor workflow submit.
type submitFlags struct {
	natsURL, tenant, runID, registry string
	seed                             int64
	wait                             bool
	timeout                          time.Duration
}

func workflowSubmitCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	f := submitFlags{natsURL: os.Getenv("NATS_URL"), tenant: "default", timeout: 30 * time.Minute}
	bind := func(fs *ff.FlagSet) {
		fs.StringVar(&f.natsURL, 0, "nats-url", f.natsURL, "NATS server of the orchestrators (NATS_URL); default: a local praetor dev, "+localDevURL)
		fs.StringVar(&f.tenant, 0, "tenant", f.tenant, "tenant owning the run: on praetor serve, one added with praetor tenant add")
		fs.StringVar(&f.runID, 0, "run-id", f.runID, "id of the new run, 1-128 of [A-Za-z0-9_-] (default: a new UUID, printed)")
		fs.StringVar(&f.registry, 0, "registry", f.registry, "agent registry YAML file instead of the workflow's agents: one, relative to the same directory as WORKFLOW")
		fs.Func(0, "seed", func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n == 0 {
				return fmt.Errorf("%q is not a non-zero 64-bit integer", v)
			}
			f.seed = n
			return nil
		}, "seed of the run's random draws, a non-zero `INT` (default: derived from the run id)")
		fs.BoolVarDefault(&f.wait, 0, "wait", f.wait, "follow the run: a line per task transition, exit 0 when it completes, 1 when it fails or the request is refused")
		fs.DurationVar(&f.timeout, 0, "timeout", f.timeout, "with --wait, stop following after this long (exit 1; the run goes on)")
	}
	fs := ff.NewFlagSet("submit").SetParent(parent)
	bind(fs)
	return &ff.Command{
		Name:      "submit",
		Usage:     "praetor workflow submit [FLAGS] WORKFLOW",
		ShortHelp: "ask the orchestrators of a praetor serve (or dev) to run a workflow file",
		LongHelp: strings.TrimSpace(`
Publishes a workflow.requested event on the NATS of the orchestrators; one of
them starts the run and carries it on, whatever happens to this command.
WORKFLOW (and --registry) are paths relative to the orchestrators' workflow
directory, ` + orchestrator.EnvWorkflowDir + ` of the praetor serve (or dev)
that runs --services orchestrator, on its host: the files are read there, not
here. Prints the run id on stdout.

praetor workflow run FILE instead runs the orchestrator in this process, on
files of this host, and lives as long as the run.

With --wait it follows the run on PRAETOR_WORKFLOWS, printing a line per task
transition on stderr, and exits 0 when the run completes, 1 when it fails;
when the orchestrator refuses the request (a file that is missing, outside
the directory or invalid, with file:line and rule; an unknown tenant; a run
id taken by another workflow) it prints the dead letter's reason and exits 1.
After --timeout it exits 1 and the run goes on: praetor workflow status RUN
--database-url URL --tenant T shows it.`),
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			args, err := interspersed(parent, "submit", bind, args)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usageError{fmt.Sprintf("submit takes one workflow file: praetor workflow submit WORKFLOW (got %d arguments)", len(args))}
			}
			return submitWorkflow(ctx, g, f, args[0])
		},
	}
}

func (f *submitFlags) check() error {
	if !contracts.ValidToken(f.tenant) {
		return settingErr("tenant", "%q must be 1-128 of [A-Za-z0-9_-]", f.tenant)
	}
	if f.runID != "" && !contracts.ValidToken(f.runID) {
		return settingErr("run-id", "%q must be 1-128 of [A-Za-z0-9_-]", f.runID)
	}
	if f.wait && f.timeout <= 0 {
		return settingErr("timeout", "--wait needs a positive --timeout, such as 30m")
	}
	return nil
}

func submitWorkflow(ctx context.Context, g *globals, f submitFlags, workflow string) error {
	if err := f.check(); err != nil {
		return err
	}
	if f.runID == "" {
		f.runID = uuid.Must(uuid.NewV7()).String()
	}
	url := f.natsURL
	if url == "" {
		url = localDevURL
		fmt.Fprintf(g.stderr, "praetor workflow submit: no --nats-url (NATS_URL): the praetor dev at %s\n", url)
	}
	nc, err := events.Connect(url, "praetor-workflow-submit")
	if err != nil {
		return err
	}
	defer nc.Close()
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		return err
	}
	ev, err := contracts.NewEvent(contracts.Meta{}, contracts.WorkflowRequested{TenantID: f.tenant, RunID: f.runID,
		Workflow: workflow, Registry: f.registry, Seed: f.seed, RequestedAt: time.Now()})
	if err != nil {
		return usageError{err.Error()}
	}
	// Dead letters are looked for from here on: the request's cannot be
	// older.
	var dlqFrom uint64
	if f.wait {
		if dlqFrom, err = nextSeq(ctx, bus, events.DeadLetterStream); err != nil {
			return err
		}
	}
	ack, err := bus.PublishAck(ctx, ev)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			return fmt.Errorf("no stream on %s takes the request (%s): run praetor serve --services orchestrator, or praetor dev, on this NATS: %w",
				redact.URL(url), contracts.StreamWorkflows, err)
		}
		return fmt.Errorf("publish the run request: %w", err)
	}
	fmt.Fprintln(g.stdout, f.runID)
	if !f.wait {
		fmt.Fprintf(g.stderr, "run %s of %s requested for tenant %s (event %s): follow it with --wait, or see a refusal with praetor dlq list\n",
			f.runID, workflow, f.tenant, ev.ID())
		return nil
	}
	fmt.Fprintf(g.stderr, "run %s of %s requested for tenant %s; following it (--timeout %s)\n", f.runID, workflow, f.tenant, f.timeout)
	wctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return followRun(wctx, bus, followed{tenant: f.tenant, runID: f.runID, eventID: ev.ID(), requestSeq: ack.Seq, dlqFrom: dlqFrom}, g.stderr)
}

// nextSeq is the sequence the next message of a stream will have.
func nextSeq(ctx context.Context, bus *events.Bus, stream string) (uint64, error) {
	s, err := bus.JetStream().Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w (is a praetor serve or dev running on this NATS?)", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", stream, err)
	}
	return info.State.LastSeq + 1, nil
}

// followed is a requested run that submit --wait follows.
type followed struct {
	tenant, runID string
	// eventID is the request's, which its dead letter names; requestSeq
	// is where the request is on the workflow stream.
	eventID    string
	requestSeq uint64
	// dlqFrom is where the dead letters after the request begin.
	dlqFrom uint64
}

// followPoll is how often --wait reads the streams again.
const followPoll = 250 * time.Millisecond

// followRun prints the run's transitions until it finishes (nil when it
// completed), its request is dead-lettered, or ctx ends. A run whose events
// come before the request existed already: the orchestrator refuses the
// request (another workflow: a dead letter) or takes it as a redelivery (the
// same), so its end is the answer only once the request is handled.
func followRun(ctx context.Context, bus *events.Bus, r followed, w io.Writer) error {
	p := newProgress(w, time.Now())
	var (
		evs      []engine.Event
		runFrom  uint64 = 1
		seen     int64
		finished *engine.Event
		earlier  bool
	)
	for {
		err := bus.Replay(ctx, events.ReplayConfig{Stream: contracts.StreamWorkflows, Subjects: runevents.Subjects(r.tenant, r.runID), FromSeq: runFrom},
			func(rec events.Record) error {
				runFrom = rec.StreamSeq + 1
				if rec.Err != nil {
					return nil
				}
				e, err := runevents.FromCloudEvent(rec.Event)
				if err != nil || e.Seq <= seen {
					return nil // a request, or a copy of an event
				}
				if rec.StreamSeq < r.requestSeq && !earlier {
					earlier = true
					fmt.Fprintf(w, "run %s of tenant %s existed before this request: the orchestrators refuse the request if it names another workflow, "+
						"and carry the run on otherwise\n", r.runID, r.tenant)
				}
				seen = e.Seq
				evs = append(evs, e)
				s, _ := engine.Fold(evs)
				p.observe(s, []engine.Event{e})
				if e.Type == engine.EventRunFinalized {
					finished = &e
				}
				return nil
			})
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("follow run %s: %w", r.runID, err)
		}
		// Handled before the dead letters are read: a refused request's
		// dead letter is stored before the request is settled.
		handled := !earlier
		if earlier && finished != nil {
			if handled, err = requestHandled(ctx, bus, r.requestSeq); err != nil && ctx.Err() == nil {
				return fmt.Errorf("follow run %s: %w", r.runID, err)
			}
		}
		var refused *events.DeadLetter
		err = bus.Replay(ctx, events.ReplayConfig{Stream: events.DeadLetterStream, FromSeq: r.dlqFrom}, func(rec events.Record) error {
			r.dlqFrom = rec.StreamSeq + 1
			if rec.Err != nil {
				return nil
			}
			if dl, err := events.AsDeadLetter(rec.Event); err == nil && dl.EventID == r.eventID {
				refused = &dl
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("follow run %s: dead letters: %w", r.runID, err)
		}
		if refused != nil {
			return fmt.Errorf("the request of run %s was refused (dead letter, cause %s): %s", r.runID, refused.Cause, refused.Reason)
		}
		if finished != nil && handled {
			if engine.RunStatus(finished.Status) == engine.RunCompleted {
				return nil
			}
			return fmt.Errorf("run %s %s: %s", r.runID, finished.Status, finished.Reason)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("--timeout reached before run %s finished (%d events seen); the run goes on: praetor workflow status %s shows it",
					r.runID, len(evs), r.runID)
			}
			return ctx.Err()
		case <-time.After(followPoll):
		}
	}
}

// requestHandled reports whether the orchestrators settled the request at
// seq of the workflow stream: their consumer of its partition acknowledged
// (or dead-lettered) it.
func requestHandled(ctx context.Context, bus *events.Bus, seq uint64) (bool, error) {
	stream, err := bus.JetStream().Stream(ctx, contracts.StreamWorkflows)
	if err != nil {
		return false, err
	}
	msg, err := stream.GetMsg(ctx, seq)
	if err != nil {
		return false, fmt.Errorf("the request at %d: %w", seq, err)
	}
	consumer := "orchestrator"
	tokens := strings.Split(msg.Subject, ".")
	if p, err := strconv.Atoi(tokens[len(tokens)-1]); err == nil && len(tokens) > 5 {
		consumer = events.PartitionConsumer(consumer, p)
	}
	cons, err := stream.Consumer(ctx, consumer)
	if err != nil {
		return false, fmt.Errorf("consumer %s: %w", consumer, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("consumer %s: %w", consumer, err)
	}
	return info.AckFloor.Stream >= seq, nil
}
