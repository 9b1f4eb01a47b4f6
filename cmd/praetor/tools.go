package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
				name, state := s.Name, "pending"
				switch {
				case s.Newer:
					// This build has no file, hence no name, for it.
					name, state = fmt.Sprintf("%05d (unknown to this build)", s.Version), "applied by a newer build "+s.AppliedAt.Format(time.RFC3339)
				case s.Applied:
					state = "applied " + s.AppliedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(g.stdout, "%-40s %s\n", name, state)
			}
			if err := store.CheckNotNewer(st); err != nil {
				fmt.Fprintf(g.stderr, "praetor migrate: %v\n", err)
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
		workflowDB                      string
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
	fs.StringVar(&workflowDB, 0, "database-url", "", "the --workflow run's PostgreSQL database, to check the fold against the stored run (DATABASE_URL is not read implicitly); without it, the store of --data-dir's praetor dev")
	return &ff.Command{
		Name:      "replay",
		Usage:     "praetor replay --stream S [--from-seq N | --since T] [--subject F ...] | --session ID | --workflow RUN [--tenant T] [--database-url URL]",
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
			"An event of the session that is no CloudEvent, or breaks its contract, is left out, as the live\n" +
			"services left it (they dead-letter it: it never reached the state): a line names each (stream\n" +
			"sequence, subject, why), the summary counts them, and they do not make it exit 1.\n" +
			"--workflow RUN folds a run's events from PRAETOR_WORKFLOWS and prints its state and hash, then\n" +
			"checks it against the live run in its store: --database-url (the run's PostgreSQL, as for\n" +
			"praetor workflow status), else the SQLite store of --data-dir's praetor dev (not with --nats-url\n" +
			"unless --data-dir is given): ok, or DIVERGED with the first field that differs, and exit 1.\n" +
			"Without a store it says that only the fold was done.\n\n" +
			"A replay that prints nothing says why on stderr when it can: a --subject no subject of the stream\n" +
			"can match (it names the stream's subjects), a --from-seq past its last sequence; it exits 0.\n" +
			"Each mode takes its own flags, and refuses another's: --stream with --subject, --from-seq,\n" +
			"--since; --session with --engines-dir; --workflow with --tenant, --database-url.",
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			if err := replayMode(fs); err != nil {
				return err
			}
			if workflowRun != "" {
				dataDirFlag, _ := fs.GetFlag("data-dir")
				live, err := openLiveRuns(ctx, workflowDB, natsURL, dataDir, dataDirFlag.IsSet())
				if err != nil {
					return err
				}
				defer live.close()
				return withToolBus("replay", natsURL, dataDir, g.stderr, func(bus *events.Bus) error {
					return replayWorkflow(ctx, bus, tenant, workflowRun, live, g.stdout, g.stderr)
				})
			}
			if session != "" {
				return withToolBus("replay", natsURL, dataDir, g.stderr, func(bus *events.Bus) error {
					return replaySession(ctx, bus, session, enginesDirs, g.stdout, g.stderr, time.Now)
				})
			}
			if stream == "" {
				return settingErr("stream", "required (or --session ID, or --workflow RUN); one of %s", streamNames())
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
				why := ""
				if n == 0 && err == nil {
					why = emptyReplay(ctx, bus, cfg)
				}
				fmt.Fprintf(g.stderr, "replayed %d messages from %s%s\n", n, stream, why)
				return err
			})
		},
	}
}

// replayModes are replay's modes, each by its flag, with the flags that go
// with it.
var replayModes = []struct {
	flag string
	with []string
}{
	{"stream", []string{"subject", "from-seq", "since"}},
	{"session", []string{"engines-dir"}},
	{"workflow", []string{"tenant", "database-url"}},
}

// replayMode refuses flags of two modes of replay at once (--session with
// --from-seq, say), which would otherwise be ignored, naming which flags go
// with which mode.
func replayMode(fs *ff.FlagSet) error {
	isSet := func(name string) bool {
		f, ok := fs.GetFlag(name)
		return ok && f.IsSet()
	}
	var modes, usage []string
	for _, m := range replayModes {
		set := isSet(m.flag)
		for _, w := range m.with {
			set = set || isSet(w)
		}
		if set {
			modes = append(modes, m.flag)
		}
		usage = append(usage, "--"+m.flag+" with "+"--"+strings.Join(m.with, ", --"))
	}
	if len(modes) < 2 {
		return nil
	}
	var given []string
	for _, m := range replayModes {
		for _, name := range append([]string{m.flag}, m.with...) {
			if isSet(name) {
				given = append(given, "--"+name)
			}
		}
	}
	return settingErr(modes[1], "%s mix modes of replay: give one of --stream, --session or --workflow, each with its own flags (%s)",
		strings.Join(given, ", "), strings.Join(usage, "; "))
}

// emptyReplay says why a replay read nothing, when it can be known: a
// --from-seq past the stream's last sequence, subject filters no subject of
// the stream can match (naming what its subjects are), a --since after its
// last message, or a stream that holds none. "" when none of these.
func emptyReplay(ctx context.Context, bus *events.Bus, cfg events.ReplayConfig) string {
	st, err := bus.JetStream().Stream(ctx, cfg.Stream)
	if err != nil {
		return ""
	}
	info := st.CachedInfo()
	switch {
	case info.State.Msgs == 0:
		return ": it holds no messages" + lost(ctx, bus, cfg.Stream)
	case cfg.FromSeq > info.State.LastSeq:
		return fmt.Sprintf(": --from-seq %d is past its last sequence, %d", cfg.FromSeq, info.State.LastSeq)
	}
	held := heldSubjects(info.Config)
	var unmatched []string
	for _, f := range cfg.Subjects {
		if !slices.ContainsFunc(held, func(h string) bool { return subjectsMeet(f, h) }) {
			unmatched = append(unmatched, f)
		}
	}
	if len(cfg.Subjects) > 0 && len(unmatched) == len(cfg.Subjects) {
		return fmt.Sprintf(": no subject it holds can match --subject %s; its subjects are %s",
			strings.Join(unmatched, ", --subject "), describeSubjects(info.Config, held))
	}
	if !cfg.Since.IsZero() && cfg.Since.After(info.State.LastTime) {
		return fmt.Sprintf(": --since %s is after its last message, stored at %s", cfg.Since.UTC().Format(time.RFC3339),
			info.State.LastTime.UTC().Format(time.RFC3339))
	}
	return ""
}

// heldSubjects are the subject patterns a stream stores its messages on:
// its subjects, or, for a partitioned stream, what its transform makes of
// them (a partition token appended).
func heldSubjects(c jetstream.StreamConfig) []string {
	if t := c.SubjectTransform; t != nil && t.Destination != "" {
		tokens := strings.Split(t.Destination, ".")
		for i, tok := range tokens {
			if strings.HasPrefix(tok, "{{") {
				tokens[i] = "*"
			}
		}
		return []string{strings.Join(tokens, ".")}
	}
	return c.Subjects
}

// describeSubjects writes a stream's subject patterns, naming the tokens
// of a catalog stream's: the event's, then tenant and key (for
// PRAETOR_TURNS the session), then the partition when partitioned.
func describeSubjects(c jetstream.StreamConfig, held []string) string {
	if _, ok := contracts.Stream(c.Name); !ok || len(held) != 1 || len(c.Subjects) != 1 {
		return strings.Join(held, ", ")
	}
	tokens := strings.Split(c.Subjects[0], ".")
	key := "<key>"
	if c.Name == contracts.StreamTurns {
		key = "<session>"
	}
	for i := len(tokens) - 1; i >= 0 && tokens[i] == "*"; i-- {
		switch {
		case i == len(tokens)-1:
			tokens[i] = key
		case i == len(tokens)-2:
			tokens[i] = "<tenant>"
		default:
			tokens[i] = "<event>"
		}
	}
	named := strings.Join(tokens, ".")
	if c.SubjectTransform != nil {
		named += ".<partition>"
	}
	return held[0] + " (" + named + ")"
}

// subjectsMeet reports whether some subject matches both patterns (NATS
// wildcards: * one token, > one or more at the end).
func subjectsMeet(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		switch {
		case i == len(at) || i == len(bt):
			return len(at) == len(bt)
		case at[i] == ">" || bt[i] == ">":
			return true
		case at[i] != "*" && bt[i] != "*" && at[i] != bt[i]:
			return false
		}
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
