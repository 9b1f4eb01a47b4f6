package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/datadir"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

func migrateCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var dataDir, databaseURL string
	var status bool
	fs := ff.NewFlagSet("migrate").SetParent(parent)
	fs.StringVar(&databaseURL, 0, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL); empty: the SQLite store of --data-dir")
	fs.StringVar(&dataDir, 0, "data-dir", "./.praetor", "directory of the praetor dev data (used without --database-url)")
	fs.BoolVar(&status, 0, "status", "only print which migrations are applied")
	return &ff.Command{
		Name:      "migrate",
		Usage:     "praetor migrate [--database-url URL | --data-dir DIR] [--status]",
		ShortHelp: "apply the database migrations",
		Flags:     fs,
		Exec: func(ctx context.Context, args []string) error {
			if err := noArgs("migrate", args); err != nil {
				return err
			}
			if databaseURL == "" {
				// Say so: a forgotten DATABASE_URL would otherwise look
				// like PostgreSQL migrated.
				fmt.Fprintf(g.stderr, "praetor migrate: no --database-url (DATABASE_URL): the SQLite store of --data-dir %s\n", dataDir)
			}
			db, err := node.OpenStore(ctx, databaseURL == "", dataDir, databaseURL)
			if err != nil {
				return err
			}
			defer db.Close()
			if !status {
				applied, err := store.Migrate(ctx, db)
				if err != nil {
					return err
				}
				if len(applied) == 0 {
					fmt.Fprintln(g.stdout, "database is up to date")
				}
				for _, v := range applied {
					fmt.Fprintf(g.stdout, "applied %05d\n", v)
				}
			}
			st, err := store.Status(ctx, db)
			if err != nil {
				return err
			}
			for _, s := range st {
				state := "pending"
				if s.Applied {
					state = "applied " + s.AppliedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(g.stdout, "%-40s %s\n", s.Name, state)
			}
			return nil
		},
	}
}

// localDevURL is where a praetor dev listens by default (--nats-listen).
var localDevURL = "nats://" + defaultNATSListen

// toolConn connects a tool to the event log: --nats-url when given; else
// the praetor dev running on --data-dir, at the address its lock records;
// else the embedded server opened on --data-dir, holding its lock meanwhile
// (so no dev starts on it); else, when --data-dir has no store, a praetor
// dev listening on the default address, which it says on stderr: that dev
// may run on any directory.
func toolConn(command, natsURL, dataDir string, stderr io.Writer) (*nats.Conn, func(), error) {
	if natsURL != "" {
		nc, err := events.Connect(natsURL, "praetor-tool")
		if err != nil {
			return nil, nil, err
		}
		return nc, nc.Close, nil
	}
	storeDir := filepath.Join(dataDir, "nats")
	if _, err := os.Stat(storeDir); err != nil {
		if nc, err := nats.Connect(localDevURL, nats.Name("praetor-tool"), nats.Timeout(500*time.Millisecond)); err == nil {
			fmt.Fprintf(stderr, "praetor %s: no praetor dev data in %s (%s not found): reading the NATS at %s, "+
				"a praetor dev's on another --data-dir or any server's there; give --data-dir or --nats-url to choose\n",
				command, dataDir, storeDir, localDevURL)
			return nc, nc.Close, nil
		}
		return nil, nil, fmt.Errorf("no NATS to read from: set --nats-url (NATS_URL), start praetor dev, or point --data-dir at its data (%s not found)", storeDir)
	}
	lock, err := datadir.Acquire(dataDir, datadir.Owner{PID: os.Getpid(), Command: "praetor " + command})
	if inUse, ok := datadir.IsInUse(err); ok {
		// Another process serves the directory: never open its store
		// beside it.
		switch o := inUse.Owner; {
		case o.NATSURL != "":
			nc, err := events.Connect(o.NATSURL, "praetor-tool")
			if err != nil {
				return nil, nil, fmt.Errorf("%s, running on %s: %w", o, dataDir, err)
			}
			return nc, nc.Close, nil
		case o.Command == "praetor dev":
			return nil, nil, fmt.Errorf("%s, running on %s, has no NATS address for other processes: it is starting "+
				"(try again in a moment), or runs with --nats-listen \"\" (restart it with --nats-listen)", o, dataDir)
		default:
			return nil, nil, fmt.Errorf("%s has the store of %s open; try again once it is done, or give --nats-url", o, dataDir)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	// Said, as a running dev elsewhere (another --data-dir, an external
	// NATS) would not be what is read.
	fmt.Fprintf(stderr, "praetor %s: no praetor dev runs on %s; reading its store\n", command, dataDir)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: storeDir})
	if err != nil {
		lock.Release()
		return nil, nil, err
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		lock.Release()
		return nil, nil, err
	}
	return nc, func() { nc.Close(); srv.Shutdown(); lock.Release() }, nil
}

// toolNATSFlags registers the flags that say where a tool finds NATS (see
// toolConn).
func toolNATSFlags(fs *ff.FlagSet, natsURL, dataDir *string) {
	fs.StringVar(natsURL, 0, "nats-url", os.Getenv("NATS_URL"), "NATS server URL (NATS_URL); default: a local praetor dev")
	fs.StringVar(dataDir, 0, "data-dir", "./.praetor", "praetor dev data directory: the NATS of the dev running on it, else its store")
}

// withToolBus runs fn with a bus on the NATS a tool reads (see toolConn),
// and closes it after.
func withToolBus(command, natsURL, dataDir string, stderr io.Writer, fn func(*events.Bus) error) error {
	nc, closeConn, err := toolConn(command, natsURL, dataDir, stderr)
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

func replayCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var (
		stream, natsURL, dataDir, since string
		subjects, enginesDirs           []string
		fromSeq                         uint64
		session                         string
		workflowRun, tenant             string
	)
	fs := ff.NewFlagSet("replay").SetParent(parent)
	fs.StringVar(&stream, 0, "stream", "", "stream to read, e.g. PRAETOR_TURNS, PRAETOR_DLQ (required unless --session or --workflow)")
	fs.StringListVar(&subjects, 0, "subject", "subject filter, repeatable (e.g. 'praetor.turn.*.acme.SESSION.*')")
	fs.Uint64Var(&fromSeq, 0, "from-seq", 0, "start at this stream sequence")
	fs.StringVar(&since, 0, "since", "", "start at this time: RFC 3339 (2026-11-22T10:00:00Z) or a duration ago (1h)")
	toolNATSFlags(fs, &natsURL, &dataDir)
	fs.StringVar(&session, 0, "session", "", "rebuild this session from its events and recorded model answers, and check its state hashes and its handoff")
	fs.StringListVar(&enginesDirs, 0, "engines-dir", "engine directories besides the shipped engines, whose released versions are built in: your engines' older versions, or the engine files of the build that recorded the session (with --session)")
	fs.StringVar(&workflowRun, 0, "workflow", "", "rebuild this workflow run from its events on PRAETOR_WORKFLOWS; print its state and hash")
	fs.StringVar(&tenant, 0, "tenant", "default", "tenant of the --workflow run")
	return &ff.Command{
		Name:      "replay",
		Usage:     "praetor replay --stream S [--from-seq N | --since T] [--subject F ...] | --session ID | --workflow RUN [--tenant T]",
		ShortHelp: "print a stream's events as JSON lines, or rebuild a session or workflow run and check it against the live run",
		LongHelp: "Streams: " + streamNames() + ".\n" +
			"Each line is {\"stream_seq\",\"subject\",\"stored_at\",\"event\"}; a message that is not a valid\n" +
			"CloudEvent is printed with \"error\", its headers and its base64 data. No consumer is touched.\n\n" +
			"--session ID rebuilds a session from PRAETOR_TURNS, its model answers served from PRAETOR_LLM\n" +
			"(no model is called): a line per turn on stderr with its state hash, ok or DIVERGED from the\n" +
			"hash the live run recorded, and for a turn that hands off a line with its handoff's payload hash,\n" +
			"ok or DIVERGED (with what differs) from the payload the live run published: the handoff.created\n" +
			"on PRAETOR_HANDOFFS, or else the inbound handoff of the target session's session.started on\n" +
			"PRAETOR_TURNS; NOT CHECKED, with why, when neither stream holds it. Then the state and the\n" +
			"handoffs as JSON on stdout. It exits 1 on either divergence and on a handoff not checked.\n" +
			"Before, while it reads and rebuilds, a line a second says what it is at. It fails naming the\n" +
			"turn and the model call it cannot serve, or the engine version it lacks (--engines-dir; the\n" +
			"shipped engines' released versions are built in).\n" +
			"--workflow RUN folds a run's events from PRAETOR_WORKFLOWS and prints its state and hash.",
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			if workflowRun != "" || session != "" {
				return withToolBus("replay", natsURL, dataDir, g.stderr, func(bus *events.Bus) error {
					if workflowRun != "" {
						return replayWorkflow(ctx, bus, tenant, workflowRun, g.stdout, g.stderr)
					}
					return replaySession(ctx, bus, session, enginesDirs, g.stdout, g.stderr, time.Now)
				})
			}
			if stream == "" {
				return settingErr("stream", "required (or --session ID); one of %s", streamNames())
			}
			if fromSeq > 0 && since != "" {
				return settingErr("since", "give --from-seq or --since, not both")
			}
			cfg := events.ReplayConfig{Stream: stream, Subjects: subjects, FromSeq: fromSeq}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return settingErr("since", "%v", err)
				}
				cfg.Since = t
			}
			return withToolBus("replay", natsURL, dataDir, g.stderr, func(bus *events.Bus) error {
				n, err := replayJSON(ctx, bus, cfg, g.stdout)
				if errors.Is(err, jetstream.ErrStreamNotFound) {
					return settingErr("stream", "no stream %s on this server; streams: %s", stream, streamNames())
				}
				fmt.Fprintf(g.stderr, "replayed %d messages from %s\n", n, stream)
				return err
			})
		},
	}
}

func streamNames() string {
	names := []string{events.DeadLetterStream}
	for _, s := range contracts.Streams() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q: a duration ago must be positive", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-11-22T10:00:00Z) nor a duration (90m)", s)
	}
	return t, nil
}

type replayLine struct {
	StreamSeq uint64          `json:"stream_seq"`
	Subject   string          `json:"subject"`
	StoredAt  time.Time       `json:"stored_at"`
	Event     json.RawMessage `json:"event,omitempty"`
	Error     string          `json:"error,omitempty"`
	Header    nats.Header     `json:"header,omitempty"`
	Data      []byte          `json:"data,omitempty"`
}

func replayJSON(ctx context.Context, bus *events.Bus, cfg events.ReplayConfig, w io.Writer) (int, error) {
	enc := json.NewEncoder(w)
	n := 0
	err := bus.Replay(ctx, cfg, func(r events.Record) error {
		n++
		line := replayLine{StreamSeq: r.StreamSeq, Subject: r.Subject, StoredAt: r.Timestamp}
		if r.Err != nil {
			line.Error, line.Header, line.Data = r.Err.Error(), r.Header, r.Data
		} else {
			b, err := json.Marshal(r.Event)
			if err != nil {
				return err
			}
			line.Event = b
		}
		return enc.Encode(line)
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return n, err
}
