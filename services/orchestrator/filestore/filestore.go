// Package filestore keeps workflow runs in files, for CLI mode: the run
// state in the seed's state file, the run's events as JSON lines, and the
// outputs of its tasks.
//
// Layout under Dir (default .praetor/state):
//
//	workflow-state.json                    the current run's state (engine.State)
//	runs/<run>/events.jsonl                every event of the run, in order
//	runs/<run>/source.json                 where the run's definition came from
//	runs/<run>/outputs/<task>/<output>     the outputs of the run's tasks
//
// Save appends the new events (fsync) and then replaces the state file
// atomically: written to a temporary file in the same directory, fsynced,
// renamed over the old one, and the directory fsynced. A crash leaves either
// the old or the new state, never a torn one; and since the events are
// written first, Load catches up a state file that lags its events by
// folding the missing ones (the events are the truth, the state a snapshot).
// Any failure of Save is returned: the executor treats it as critical.
package filestore

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// StateFile is the name of the state file, as in the seed.
const StateFile = "workflow-state.json"

// DefaultDir is the state directory of CLI mode.
const DefaultDir = ".praetor/state"

// Errors.
var (
	// ErrRunInProgress is returned when a new run would replace the state
	// file of another run that is still RUNNING.
	ErrRunInProgress = errors.New("filestore: another run is in progress")
	// ErrCorrupt is returned for a stored output whose content no longer
	// matches its SHA-256, or an event log that cannot be read.
	ErrCorrupt = errors.New("filestore: corrupt data")
)

// Config configures a Store.
type Config struct {
	// Dir is the state directory. Default DefaultDir.
	Dir string
}

// WithDefaults fills the defaults.
func (c Config) WithDefaults() Config {
	c.Dir = cmp.Or(c.Dir, DefaultDir)
	return c
}

// Store keeps runs in files. It is safe for concurrent use; one process at a
// time should use a directory.
type Store struct {
	dir string
	mu  sync.Mutex
	// lastSeq remembers the last event written per run, to catch a caller
	// that skips or repeats events.
	lastSeq map[string]int64
	// sync and rename are the file system operations Save depends on; tests
	// replace them to simulate failures.
	sync   func(*os.File) error
	rename func(oldpath, newpath string) error
}

// New returns a store, creating its directory.
func New(cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return &Store{dir: cfg.Dir, lastSeq: map[string]int64{},
		sync: (*os.File).Sync, rename: os.Rename}, nil
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// StatePath returns the path of the state file.
func (s *Store) StatePath() string { return filepath.Join(s.dir, StateFile) }

func (s *Store) runDir(runID string) string { return filepath.Join(s.dir, "runs", runID) }

func (s *Store) eventsPath(runID string) string {
	return filepath.Join(s.runDir(runID), "events.jsonl")
}

// Save appends events to the run's log and replaces the state file with st.
func (s *Store) Save(_ context.Context, st engine.State, events []engine.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(events) > 0 {
		if events[0].Seq == 1 {
			if err := s.checkReplace(st.RunID); err != nil {
				return err
			}
		} else if last, ok := s.lastSeq[st.RunID]; ok && events[0].Seq != last+1 {
			return fmt.Errorf("filestore: run %s: event %d does not follow %d", st.RunID, events[0].Seq, last)
		}
		if err := s.appendEvents(st.RunID, events); err != nil {
			return err
		}
		s.lastSeq[st.RunID] = events[len(events)-1].Seq
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("filestore: encode state: %w", err)
	}
	return s.writeAtomic(s.StatePath(), append(data, '\n'))
}

// checkReplace refuses to start a run over another one still RUNNING.
func (s *Store) checkReplace(runID string) error {
	cur, err := s.readState()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur.RunID != runID && cur.Status == engine.RunRunning {
		return fmt.Errorf("%w: run %s of workflow %s is RUNNING in %s: resume it, or remove the state file",
			ErrRunInProgress, cur.RunID, cur.Workflow, s.StatePath())
	}
	return nil
}

func (s *Store) appendEvents(runID string, events []engine.Event) error {
	if err := os.MkdirAll(s.runDir(runID), 0o755); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	flags := os.O_RDWR | os.O_CREATE | os.O_APPEND // read: for dropTornLine
	if events[0].Seq == 1 {
		flags |= os.O_TRUNC // a new run with this id starts a new log
	}
	f, err := os.OpenFile(s.eventsPath(runID), flags, 0o644)
	if err != nil {
		return fmt.Errorf("filestore: open event log: %w", err)
	}
	// A torn last line (readEvents drops it) goes first: appended after
	// it, the next event would be glued to it, and the log unreadable.
	if err := dropTornLine(f); err != nil {
		f.Close()
		return fmt.Errorf("filestore: event log: %w", err)
	}
	var buf bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			f.Close()
			return fmt.Errorf("filestore: encode event %d: %w", e.Seq, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("filestore: append events: %w", err)
	}
	if err := s.sync(f); err != nil {
		f.Close()
		return fmt.Errorf("filestore: sync event log: %w", err)
	}
	return f.Close()
}

// writeAtomic replaces path with data: temp file, fsync, rename, fsync dir.
func (s *Store) writeAtomic(target string, data []byte) (err error) {
	dir := filepath.Dir(target)
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return fmt.Errorf("filestore: write %s: %w", target, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("filestore: write %s: %w", target, err)
	}
	if err = s.sync(f); err != nil {
		f.Close()
		return fmt.Errorf("filestore: sync %s: %w", target, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("filestore: close %s: %w", target, err)
	}
	if err = s.rename(tmp, target); err != nil {
		return fmt.Errorf("filestore: replace %s: %w", target, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		// Make the rename itself durable.
		serr := d.Sync()
		d.Close()
		if serr != nil {
			return fmt.Errorf("filestore: sync %s: %w", dir, serr)
		}
	}
	return nil
}

func (s *Store) readState() (engine.State, error) {
	data, err := os.ReadFile(s.StatePath())
	if err != nil {
		return engine.State{}, err
	}
	var st engine.State
	if err := json.Unmarshal(data, &st); err != nil {
		return engine.State{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, s.StatePath(), err)
	}
	return st, nil
}

// Load returns the state of a run: the state file when it holds the run,
// caught up with any events written after it; otherwise the run's events
// folded. It returns an error wrapping store.ErrNotFound when the directory
// knows no such run.
func (s *Store) Load(_ context.Context, runID string) (engine.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.readState()
	switch {
	case err == nil && st.RunID == runID:
	case err == nil || errors.Is(err, fs.ErrNotExist):
		st = engine.State{}
	default:
		return engine.State{}, err
	}
	events, err := s.readEvents(runID)
	if errors.Is(err, fs.ErrNotExist) {
		if st.RunID == "" {
			return engine.State{}, fmt.Errorf("run %s in %s: %w", runID, s.dir, store.ErrNotFound)
		}
		events = nil
	} else if err != nil {
		return engine.State{}, err
	}
	ch := engine.NewChange(st)
	for _, e := range events {
		if e.Seq <= st.Seq {
			continue
		}
		if err := ch.Apply(e); err != nil {
			return engine.State{}, fmt.Errorf("%w: run %s: %v", ErrCorrupt, runID, err)
		}
	}
	st = ch.State()
	if st.RunID == "" {
		return engine.State{}, fmt.Errorf("run %s in %s: %w", runID, s.dir, store.ErrNotFound)
	}
	if err := st.Validate(); err != nil {
		return engine.State{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	s.lastSeq[runID] = st.Seq
	return st, nil
}

// Current returns the run in the state file, whichever it is: what
// `praetor workflow resume` and `status` use without a run id.
func (s *Store) Current(ctx context.Context) (engine.State, error) {
	s.mu.Lock()
	st, err := s.readState()
	s.mu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		return engine.State{}, fmt.Errorf("no run in %s: %w", s.dir, store.ErrNotFound)
	}
	if err != nil {
		return engine.State{}, err
	}
	return s.Load(ctx, st.RunID)
}

// Events returns a run's events, for replay.
func (s *Store) Events(_ context.Context, runID string) ([]engine.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	events, err := s.readEvents(runID)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s in %s: %w", runID, s.dir, store.ErrNotFound)
	}
	return events, err
}

// readEvents reads the log. A last line without its newline is a write
// that a crash interrupted before its fsync returned, so before the state
// could depend on it: it is ignored.
func (s *Store) readEvents(runID string) ([]engine.Event, error) {
	f, err := os.Open(s.eventsPath(runID))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []engine.Event
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // a torn last line, if any, is dropped
		}
		if err != nil {
			return nil, fmt.Errorf("filestore: read events: %w", err)
		}
		var e engine.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrCorrupt, s.eventsPath(runID), n, err)
		}
		out = append(out, e)
	}
}

// SaveSource records where a run comes from (opaque to the store; the
// orchestrator's Source) in runs/<run>/source.json, so a later resume can
// load its definition again.
func (s *Store) SaveSource(runID string, source []byte) error {
	if !validRel(runID) || strings.Contains(runID, "/") {
		return fmt.Errorf("filestore: run id %q is not a plain name", runID)
	}
	if err := os.MkdirAll(s.runDir(runID), 0o755); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return s.writeAtomic(filepath.Join(s.runDir(runID), "source.json"), source)
}

// Source returns what SaveSource recorded for a run, or an error wrapping
// store.ErrNotFound.
func (s *Store) Source(runID string) ([]byte, error) {
	if !validRel(runID) || strings.Contains(runID, "/") {
		return nil, fmt.Errorf("filestore: run id %q is not a plain name", runID)
	}
	b, err := os.ReadFile(filepath.Join(s.runDir(runID), "source.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("source of run %s in %s: %w", runID, s.dir, store.ErrNotFound)
	}
	return b, err
}

// Put stores one output of a task.
func (s *Store) Put(_ context.Context, runID, taskID, name string, content []byte) (engine.OutputRef, error) {
	rel := path.Join("runs", runID, "outputs", taskID, name)
	if !validRel(runID) || !validRel(taskID) || !validRel(name) || strings.Contains(runID+taskID, "/") {
		return engine.OutputRef{}, fmt.Errorf("filestore: output path %q is not a plain relative path", rel)
	}
	target := filepath.Join(s.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return engine.OutputRef{}, fmt.Errorf("filestore: %w", err)
	}
	if err := s.writeAtomic(target, content); err != nil {
		return engine.OutputRef{}, err
	}
	sum := sha256.Sum256(content)
	return engine.OutputRef{Name: name, Path: rel, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}, nil
}

// Get reads a stored output and checks it against its hash.
func (s *Store) Get(_ context.Context, ref engine.OutputRef) ([]byte, error) {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	defer root.Close()
	data, err := root.ReadFile(filepath.FromSlash(ref.Path))
	if err != nil {
		return nil, fmt.Errorf("filestore: output %s: %w", ref.Path, err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%w: output %s changed since it was written (sha256 mismatch)", ErrCorrupt, ref.Path)
	}
	return data, nil
}

func validRel(p string) bool {
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") {
		return false
	}
	c := path.Clean(p)
	return c == p && c != "." && c != ".." && !strings.HasPrefix(c, "../")
}

// dropTornLine truncates f after its last newline: what follows it is a
// write a crash cut short (see readEvents).
func dropTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	buf := make([]byte, 4096)
	for pos := end; pos > 0; {
		n := int64(len(buf))
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			if keep := pos + int64(i) + 1; keep < end {
				return f.Truncate(keep)
			}
			return nil
		}
	}
	if end > 0 {
		return f.Truncate(0) // no whole line at all
	}
	return nil
}
