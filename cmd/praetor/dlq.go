package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	fs.StringVar(&natsURL, 0, "nats-url", os.Getenv("NATS_URL"), "NATS server URL (NATS_URL); default: a local praetor dev")
	fs.StringVar(&dataDir, 0, "data-dir", "./.praetor", "praetor dev data directory, opened when no server answers")
	withBus := func(ctx context.Context, fn func(*events.Bus) error) error {
		nc, closeConn, err := toolConn(natsURL, dataDir)
		if err != nil {
			return err
		}
		defer closeConn()
		bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
		if err != nil {
			return err
		}
		return fn(bus)
	}

	var cause, since string
	listFlags := ff.NewFlagSet("list").SetParent(fs)
	listFlags.StringVar(&cause, 0, "cause", "", "only this cause: decode, permanent, max_deliver or unpublishable")
	listFlags.StringVar(&since, 0, "since", "", "only dead letters since this time: RFC 3339 or a duration ago (1h)")
	list := &ff.Command{
		Name:      "list",
		Usage:     "praetor dlq list [--cause C] [--since T]",
		ShortHelp: "print the dead letters as JSON lines, without their data",
		LongHelp: "Each line is {\"seq\",\"at\",\"cause\",\"reason\",\"service\",\"stream\",\"stream_seq\",\"subject\",\"event_id\",\"deliveries\"},\n" +
			"with \"data_omitted\" when the dead letter could not keep the data (redrive takes it from its stream's copy);\n" +
			"seq is what `praetor dlq redrive` takes. `praetor replay --stream " + events.DeadLetterStream + "` prints them whole.",
		Flags: listFlags,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("dlq list takes no arguments, got %q", args)
			}
			switch cause {
			case "", "decode", "permanent", "max_deliver", events.CauseUnpublishable:
			default:
				return settingErr("cause", "%q is not one of decode, permanent, max_deliver, unpublishable", cause)
			}
			cfg := events.ReplayConfig{Stream: events.DeadLetterStream}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return settingErr("since", "%v", err)
				}
				cfg.Since = t
			}
			return withBus(ctx, func(bus *events.Bus) error {
				n, err := listDeadLetters(ctx, bus, cfg, cause, g)
				if errors.Is(err, jetstream.ErrStreamNotFound) {
					fmt.Fprintln(g.stderr, "no dead letters: the server has no "+events.DeadLetterStream+" stream yet")
					return nil
				}
				fmt.Fprintf(g.stderr, "%d dead letters\n", n)
				return err
			})
		},
	}
	redrive := &ff.Command{
		Name:      "redrive",
		Usage:     "praetor dlq redrive SEQ...",
		ShortHelp: "publish dead letters' original messages again, once their cause is mended",
		LongHelp: strings.TrimSpace(`
Each dead letter's original message goes back to its subject byte for byte,
event id included, and is handled as if it had just arrived; the dead letter
stays. Within the stream's duplicate window (2m by default) the stream drops
the copy: the line says "duplicate", and the command exits 1; redrive after
the window. Redrive a dead letter once: the services that keep an inbox drop
a second copy, but an agent worker may run its task again. Prints one JSON
line per message stored; exits 1 if any was not.`),
		Flags: ff.NewFlagSet("redrive").SetParent(fs),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) == 0 {
				return errors.New("dlq redrive: give the sequences of the dead letters (see praetor dlq list)")
			}
			seqs := make([]uint64, len(args))
			for i, a := range args {
				n, err := strconv.ParseUint(a, 10, 64)
				if err != nil || n == 0 {
					return fmt.Errorf("dlq redrive: %q is not a dead letter's sequence (a positive number)", a)
				}
				seqs[i] = n
			}
			return withBus(ctx, func(bus *events.Bus) error {
				enc := json.NewEncoder(g.stdout)
				failed := 0
				for _, seq := range seqs {
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
						fmt.Fprintf(g.stderr, "dead letter %d: %s still holds event %s within its duplicate window; redrive it after the window\n",
							seq, r.Stream, r.EventID)
					}
				}
				if failed > 0 {
					fmt.Fprintf(g.stderr, "%d of %d dead letters not redriven\n", failed, len(seqs))
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
		Exec: func(context.Context, []string) error {
			return errors.New("dlq: give a subcommand, list or redrive (praetor dlq --help)")
		},
	}
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

func listDeadLetters(ctx context.Context, bus *events.Bus, cfg events.ReplayConfig, cause string, g *globals) (int, error) {
	enc := json.NewEncoder(g.stdout)
	n := 0
	err := bus.Replay(ctx, cfg, func(r events.Record) error {
		var dl events.DeadLetter
		if r.Err != nil || r.Event.Type() != events.DeadLetterType {
			fmt.Fprintf(g.stderr, "message %d of %s is not a dead letter; skipped\n", r.StreamSeq, cfg.Stream)
			return nil
		}
		if err := json.Unmarshal(r.Event.Data(), &dl); err != nil {
			fmt.Fprintf(g.stderr, "dead letter %d: %v; skipped\n", r.StreamSeq, err)
			return nil
		}
		if cause != "" && dl.Cause != cause {
			return nil
		}
		n++
		return enc.Encode(deadLetterLine{Seq: r.StreamSeq, At: dl.At, Cause: dl.Cause, Reason: dl.Reason, Service: dl.Consumer,
			Stream: dl.Stream, StreamSeq: dl.StreamSeq, Subject: dl.Subject, EventID: dl.EventID, Deliveries: dl.Deliveries,
			DataOmitted: dl.DataOmitted})
	})
	return n, err
}
