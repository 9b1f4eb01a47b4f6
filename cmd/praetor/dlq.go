package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// dlqCommand lists the dead letters and sends them back where they came
// from once their cause is mended.
func dlqCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var natsURL, dataDir string
	fs := ff.NewFlagSet("dlq").SetParent(parent)
	toolNATSFlags(fs, &natsURL, &dataDir)

	var listFilter dlqFilter
	listFlags := ff.NewFlagSet("list").SetParent(fs)
	listFilter.register(listFlags)
	list := &ff.Command{
		Name:      "list",
		Usage:     "praetor dlq list [--cause C] [--since T]",
		ShortHelp: "print the dead letters as JSON lines, without their data",
		LongHelp: "Each line is {\"seq\",\"at\",\"cause\",\"reason\",\"service\",\"stream\",\"stream_seq\",\"subject\",\"event_id\",\"deliveries\"},\n" +
			"with \"data_omitted\" when the dead letter could not keep the data (redrive takes it from its stream's copy);\n" +
			"event_id is the message's Nats-Msg-Id or ce-id header, absent when it gave neither (its reason says so).\n" +
			"seq is what `praetor dlq redrive` takes. `praetor replay --stream " + events.DeadLetterStream + "` prints them whole.",
		Flags: listFlags,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("dlq list takes no arguments, got %q", args)
			}
			cfg, err := listFilter.replayConfig()
			if err != nil {
				return err
			}
			return withToolBus("dlq list", natsURL, dataDir, g.stderr, func(bus *events.Bus) error {
				enc := json.NewEncoder(g.stdout)
				n, err := eachDeadLetter(ctx, bus, cfg, listFilter, g, func(seq uint64, dl events.DeadLetter) error {
					return enc.Encode(deadLetterLine{Seq: seq, At: dl.At, Cause: dl.Cause, Reason: dl.Reason, Service: dl.Consumer,
						Stream: dl.Stream, StreamSeq: dl.StreamSeq, Subject: dl.Subject, EventID: dl.EventID, Deliveries: dl.Deliveries,
						DataOmitted: dl.DataOmitted})
				})
				if err == nil {
					fmt.Fprintf(g.stderr, "%d %s\n", n, plural(n, "dead letter", "dead letters"))
				}
				return err
			})
		},
	}
	var (
		redriveFilter dlqFilter
		all, force    bool
	)
	redriveFlags := ff.NewFlagSet("redrive").SetParent(fs)
	redriveFlags.Value(0, "all", switchFlag{&all, "all"}, "redrive every dead letter that --cause and --since select, instead of SEQ...")
	redriveFlags.Value(0, "force", switchFlag{&force, "force"}, "redrive also the dead letters whose message cannot be handled (not a CloudEvent, or breaking its contract); before a SEQ, give it as --force=true")
	redriveFilter.register(redriveFlags)
	redrive := &ff.Command{
		Name:      "redrive",
		Usage:     "praetor dlq redrive [--force=true] SEQ... | --all [--force=true] [--cause C] [--since T]",
		ShortHelp: "publish dead letters' original messages again, once their cause is mended",
		LongHelp: strings.TrimSpace(`
Each dead letter's original message goes back to its subject byte for byte,
event id included, and is handled as if it had just arrived; the dead letter
stays. Within the stream's duplicate window (--duplicate-window: by default
a minute in dev, 2m in serve) the stream drops the copy: the line says
"duplicate", and the command exits 1; redrive after the window. After it,
redriving again does no harm: the services' inboxes drop the copy (the
message carries a Praetor-Redriven header, so handlers that skip their inbox
on first deliveries look it up). --all takes one dead
letter an event, but also those redriven before (they stay): narrow it with
--since.

A dead letter whose message cannot be handled as it is is skipped, with a
line saying why: a message that is not a valid CloudEvent (cause decode), or
one that breaks its event type's contract (cause permanent: its data is
malformed, or does not match its tenant and key). Sent again byte for byte,
it would only be dead-lettered again. They are checked with this praetor's
codec and contracts, so one that a newer release accepts goes; --force=true
redrives them all the same. Before a sequence a switch is written with its
value after "=", as --force=true: the parser would read a sequence 1 after
a bare one as the switch's value, which is refused.

Prints one JSON line per message stored; exits 1 if any was not (skipped
ones included).`),
		Flags: redriveFlags,
		Exec: func(ctx context.Context, args []string) error {
			switch {
			case all && len(args) > 0:
				return errors.New("dlq redrive: give SEQ... or --all, not both")
			case !all && len(args) == 0:
				return errors.New("dlq redrive: give the sequences of the dead letters (see praetor dlq list), or --all")
			case !all && (redriveFilter.cause != "" || redriveFilter.since != ""):
				return errors.New("dlq redrive: --cause and --since select dead letters for --all")
			}
			seqs := make([]uint64, len(args))
			for i, a := range args {
				n, err := strconv.ParseUint(a, 10, 64)
				if err != nil || n == 0 {
					return fmt.Errorf("dlq redrive: %q is not a dead letter's sequence (a positive number)", a)
				}
				seqs[i] = n
			}
			cfg, err := redriveFilter.replayConfig()
			if err != nil {
				return err
			}
			return withToolBus("dlq redrive", natsURL, dataDir, g.stderr, func(bus *events.Bus) error {
				letters := map[uint64]events.DeadLetter{}
				if all {
					// The dead letters present now (one a redrive fails into
					// comes after them), one an event: several consumers may
					// have given up on it, or a redriven copy failed again.
					first := map[string]uint64{}
					_, err := eachDeadLetter(ctx, bus, cfg, redriveFilter, g, func(seq uint64, dl events.DeadLetter) error {
						key := dl.EventID
						if key == "" {
							key = fmt.Sprintf("%s/%d", dl.Stream, dl.StreamSeq)
						}
						if m, ok := first[key]; ok {
							fmt.Fprintf(g.stderr, "dead letter %d: the same event as dead letter %d; skipped\n", seq, m)
							return nil
						}
						first[key] = seq
						seqs = append(seqs, seq)
						letters[seq] = dl
						return nil
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(g.stderr, "redriving %d %s\n", len(seqs), plural(len(seqs), "dead letter", "dead letters"))
				}
				enc := json.NewEncoder(g.stdout)
				failed, skipped := 0, 0
				for _, seq := range seqs {
					if err := ctx.Err(); err != nil {
						return err
					}
					if !force {
						dl, ok := letters[seq]
						if !ok {
							// One that cannot be read is left to Redrive,
							// which says why.
							ev, err := bus.Stored(ctx, events.DeadLetterStream, seq)
							if err == nil {
								dl, err = events.AsDeadLetter(ev)
							}
							ok = err == nil
						}
						if why := unredrivable(dl); ok && why != "" {
							failed++
							skipped++
							fmt.Fprintf(g.stderr, "dead letter %d: skipped: %s, so a redrive would be dead-lettered again (--force=true redrives it)\n", seq, why)
							continue
						}
					}
					r, err := bus.Redrive(ctx, seq)
					if err != nil {
						failed++
						fmt.Fprintf(g.stderr, "dead letter %d: %v\n", seq, err)
						continue
					}
					if err := enc.Encode(r); err != nil {
						return err
					}
					if r.Duplicate {
						failed++
						fmt.Fprintf(g.stderr, "dead letter %d: %s still holds event %s within its duplicate window%s\n",
							seq, r.Stream, r.EventID, windowEnd(ctx, bus, r))
					}
				}
				if failed > 0 {
					var also string
					if skipped > 0 {
						also = fmt.Sprintf(" (%d skipped: %s cannot be handled as %s; --force=true redrives %s)", skipped,
							plural(skipped, "its message", "their messages"), plural(skipped, "it is", "they are"), plural(skipped, "it", "them"))
					}
					fmt.Fprintf(g.stderr, "%d of %d dead letters not redriven%s\n", failed, len(seqs), also)
					return exitError(1)
				}
				return nil
			})
		},
	}
	return &ff.Command{
		Name:        "dlq",
		Usage:       "praetor dlq <list|redrive> [FLAGS]",
		ShortHelp:   "dead letters: list them, and redrive them once their cause is mended",
		Flags:       fs,
		Subcommands: []*ff.Command{list, redrive},
	}
}

// windowEnd says how long the duplicate window of a redrive's stream is and
// when it ends for the event: at the time its first copy (r.StreamSeq, a
// duplicate's) was stored, plus the window. What cannot be read is left
// out, down to "after the window".
func windowEnd(ctx context.Context, bus *events.Bus, r events.Redriven) string {
	stream, err := bus.JetStream().Stream(ctx, r.Stream)
	if err != nil {
		return "; redrive it after the window"
	}
	window := stream.CachedInfo().Config.Duplicates
	first, err := stream.GetMsg(ctx, r.StreamSeq)
	if err != nil || window <= 0 {
		return fmt.Sprintf(" (%s); redrive it after the window", window)
	}
	end := first.Time.Add(window).UTC()
	return fmt.Sprintf(" (%s, from its first copy stored at %s, message %d): redrive it after %s",
		window, first.Time.UTC().Format(time.RFC3339), r.StreamSeq, end.Format(time.RFC3339))
}

// deadLetterLine is one line of praetor dlq list.
type deadLetterLine struct {
	Seq        uint64    `json:"seq"`
	At         time.Time `json:"at"`
	Cause      string    `json:"cause"`
	Reason     string    `json:"reason"`
	Service    string    `json:"service"`
	Stream     string    `json:"stream,omitempty"`
	StreamSeq  uint64    `json:"stream_seq,omitempty"`
	Subject    string    `json:"subject"`
	EventID    string    `json:"event_id,omitempty"`
	Deliveries uint64    `json:"deliveries"`
	// DataOmitted: the dead letter did not keep the data (too large); a
	// redrive takes it from the stream's copy while the stream keeps it.
	DataOmitted bool `json:"data_omitted,omitempty"`
}

// switchFlag is a bool flag that takes "true" or "false" as its value and
// nothing else: the flag parser reads a bool flag's next argument as its
// value when it parses as a bool, so praetor dlq redrive --force 1 2 took
// the sequence 1 for --force's value and redrove 2 alone.
type switchFlag struct {
	p    *bool
	name string
}

func (f switchFlag) Set(s string) error {
	switch s {
	case "true", "false":
		*f.p = s == "true"
		return nil
	}
	return fmt.Errorf("--%s takes no value, and %q would be read as one: give it as --%s=true", f.name, s, f.name)
}

func (f switchFlag) String() string {
	if f.p == nil {
		return "false"
	}
	return strconv.FormatBool(*f.p)
}

func (switchFlag) IsBoolFlag() bool { return true }

// unredrivable says why a redrive of dl cannot succeed, or "" when it may:
// its message, which a redrive publishes again byte for byte, is not a
// valid CloudEvent, or (a permanent failure) breaks its catalog type's
// contract, and a consumer would dead-letter it again at once. The message
// is checked, not the letter's reason, with this build's codec and
// contracts: one a newer release accepts goes through. A letter that did
// not keep its data (DataOmitted) is not checked.
func unredrivable(dl events.DeadLetter) string {
	if dl.DataOmitted || dl.Subject == "" {
		return ""
	}
	ev, err := events.Decode(dl.Header, dl.Data)
	if err != nil {
		return fmt.Sprintf("its message is not a valid CloudEvent (%v)", err)
	}
	if _, known := contracts.Lookup(ev.Type()); !known || dl.Cause != events.CausePermanent {
		return ""
	}
	if err := contracts.Validate(ev); err != nil {
		return fmt.Sprintf("its message breaks its contract (%v)", err)
	}
	return ""
}

// dlqFilter selects dead letters by cause and time.
type dlqFilter struct{ cause, since string }

func (f *dlqFilter) register(fs *ff.FlagSet) {
	fs.StringVar(&f.cause, 0, "cause", "", "only this cause: "+strings.Join(events.DeadLetterCauses, ", "))
	fs.StringVar(&f.since, 0, "since", "", "only dead letters since this time: RFC 3339 or a duration ago (1h)")
}

// replayConfig checks the filter and returns the read of the dead-letter
// stream it starts.
func (f dlqFilter) replayConfig() (events.ReplayConfig, error) {
	cfg := events.ReplayConfig{Stream: events.DeadLetterStream}
	if f.cause != "" && !slices.Contains(events.DeadLetterCauses, f.cause) {
		return cfg, settingErr("cause", "%q is not one of %s", f.cause, strings.Join(events.DeadLetterCauses, ", "))
	}
	if f.since != "" {
		t, err := parseSince(f.since, time.Now())
		if err != nil {
			return cfg, settingErr("since", "%v", err)
		}
		cfg.Since = t
	}
	return cfg, nil
}

// eachDeadLetter calls fn with the sequence and content of each dead letter
// the filter selects, and returns how many it selected. A server without a
// dead-letter stream has none.
func eachDeadLetter(ctx context.Context, bus *events.Bus, cfg events.ReplayConfig, f dlqFilter, g *globals,
	fn func(seq uint64, dl events.DeadLetter) error) (int, error) {
	n := 0
	err := bus.Replay(ctx, cfg, func(r events.Record) error {
		if r.Err != nil {
			fmt.Fprintf(g.stderr, "message %d of %s is not a dead letter; skipped\n", r.StreamSeq, cfg.Stream)
			return nil
		}
		dl, err := events.AsDeadLetter(r.Event)
		if err != nil {
			fmt.Fprintf(g.stderr, "message %d of %s: %v; skipped\n", r.StreamSeq, cfg.Stream, err)
			return nil
		}
		if f.cause != "" && dl.Cause != f.cause {
			return nil
		}
		n++
		return fn(r.StreamSeq, dl)
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		fmt.Fprintln(g.stderr, "no dead letters: the server has no "+events.DeadLetterStream+" stream yet")
		return 0, nil
	}
	return n, err
}
