// Package sqlstore keeps workflow runs in the relational store (PostgreSQL
// in production, SQLite in praetor dev): the executor's StateStore and
// ArtifactStore, the agent results the JetStream dispatcher receives, and the
// leases by which orchestrators share runs.
//
// Save writes one change in one commit: the change's engine events
// (workflow_events), the run row (workflow_runs: status, sequence number and,
// now and then, a snapshot of the whole state with its hash), and — when an
// Encoder is configured — the change's workflow.* events in the outbox, so
// the event log gets every change exactly when the database does, and
// `praetor replay --workflow` can rebuild the run from the stream. On
// PostgreSQL every change after a run's first is a single statement (one
// round trip, since the run waits on each save before it dispatches); a
// run's first change, and every change on SQLite, is a transaction.
//
// The events are the truth and the snapshot a cache: a snapshot is written
// on a run's first and last change and whenever enough events have passed
// since the last one (SnapshotEvery, or by default as many as the run has
// tasks, at least 256), and Load folds the events after it. Writing the
// whole state on every change would cost O(tasks) per change, O(tasks²) per
// run; so would a snapshot every fixed number of events on large plans. An
// interval that grows with the plan keeps snapshots O(tasks) per run, and
// a Load folds at most about one event per task. A change is accepted only on top of the sequence number stored (an
// optimistic check), so two orchestrators that both think they hold a run
// cannot interleave their changes.
//
// JSON is stored as text, byte for byte, so a state rebuilt from the stored
// events hashes the same as the live one.
package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/praetorhq/praetor/internal/delivery"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// Errors.
var (
	// ErrConflict is wrapped when a change does not follow the stored one:
	// another orchestrator wrote to the run, or the run exists already.
	ErrConflict = errors.New("sqlstore: conflicting change")
	// ErrCorrupt is wrapped when stored data cannot be read back: a state
	// or event that does not decode or fold, an output whose hash changed.
	ErrCorrupt = errors.New("sqlstore: corrupt data")
)

// Kicker is told when the outbox has new messages; *delivery.Relay is one.
type Kicker interface{ Kick() }

// Config configures a Store.
type Config struct {
	// DB is the relational store, migrated. Required.
	DB store.DB
	// TenantID owns every run of this Store. Required.
	TenantID string
	// Encoder, when set, writes each change's workflow.* events to the
	// outbox in the change's transaction. Default: none (no event log).
	Encoder delivery.Encoder
	// Relay, when set, is kicked after a change that wrote to the outbox.
	Relay Kicker
	// RelayDelay lets the changes of that long gather before the relay is
	// kicked: one relay pass (a lock, a read of the outbox, the publish, a
	// write to mark it) for all of them rather than one per change, which
	// on a busy run is several a second less work for the database, and
	// the relay's lock held less often. The workflow.* events reach the
	// stream up to that much later; the state and the outbox commit as
	// before. Default DefaultRelayDelay; negative kicks at once.
	RelayDelay time.Duration
	// SnapshotEvery is how many events may pass between two snapshots of a
	// running run; 1 snapshots every change. Default (0): as many as the
	// run has tasks, at least 256 — a snapshot costs O(tasks), so a fixed
	// interval would cost O(tasks²) per run on large plans.
	SnapshotEvery int
	// Now stamps updated_at and created_at. Default time.Now.
	Now func() time.Time
}

// DefaultRelayDelay is the default Config.RelayDelay.
const DefaultRelayDelay = 20 * time.Millisecond

// WithDefaults fills the defaults.
func (c Config) WithDefaults() Config {
	if c.RelayDelay == 0 {
		c.RelayDelay = DefaultRelayDelay
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.DB == nil:
		return errors.New("sqlstore: DB is required")
	case !contracts.ValidToken(c.TenantID):
		return fmt.Errorf("sqlstore: tenant id %q must be 1-128 of [A-Za-z0-9_-]", c.TenantID)
	case c.SnapshotEvery < 0:
		return errors.New("sqlstore: SnapshotEvery must not be negative (0 is the default)")
	}
	return nil
}

// Store keeps one tenant's runs. It is safe for concurrent use; changes of
// one run must come in order (the executor's run loop is their one writer).
type Store struct {
	cfg Config

	mu sync.Mutex
	// snapshots remembers, per run, the sequence number of its last
	// snapshot, to decide when the next is due. A run it does not know gets
	// a snapshot at its next change.
	snapshots map[string]int64
	// sources and leases hold what runs about to start get with their
	// first change (SetSource, SetLease).
	sources map[string]string
	leases  map[string]lease

	// kickDue is set while a delayed kick of the relay is pending.
	kickDue atomic.Bool
}

type lease struct {
	owner string
	until time.Time
}

// New returns a store.
func New(cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Store{cfg: cfg, snapshots: map[string]int64{}, sources: map[string]string{}, leases: map[string]lease{}}, nil
}

// TenantID is the tenant of the store's runs.
func (s *Store) TenantID() string { return s.cfg.TenantID }

// maxRowsPerInsert bounds one multi-row INSERT, well under both dialects'
// limits on bound parameters.
const maxRowsPerInsert = 500

// Save writes a change: its events, the run row, and the outbox, in one
// commit. It returns once the change is committed.
func (s *Store) Save(ctx context.Context, st engine.State, evs []engine.Event) error {
	if st.RunID == "" {
		return errors.New("sqlstore: save a state without a run id")
	}
	for i := range evs {
		if evs[i].RunID != st.RunID || (i > 0 && evs[i].Seq != evs[i-1].Seq+1) {
			return fmt.Errorf("sqlstore: run %s: events of a change must be of the run and consecutive", st.RunID)
		}
	}
	if len(evs) > 0 && evs[len(evs)-1].Seq != st.Seq {
		return fmt.Errorf("sqlstore: run %s: the state is at event %d, the change ends at %d", st.RunID, st.Seq, evs[len(evs)-1].Seq)
	}

	first := len(evs) > 0 && evs[0].Seq == 1
	s.mu.Lock()
	last, known := s.snapshots[st.RunID]
	source := nullString(s.sources[st.RunID])
	ls, leased := s.leases[st.RunID]
	s.mu.Unlock()
	var owner *string
	var leaseUntil *time.Time
	if leased {
		owner, leaseUntil = &ls.owner, nullTime(&ls.until)
	}
	snapshot := first || !known || len(evs) == 0 || st.Status != engine.RunRunning ||
		st.Seq-last >= int64(s.snapshotEvery(st))

	var stateJSON, hash string
	if snapshot {
		b, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("sqlstore: encode state of run %s: %w", st.RunID, err)
		}
		stateJSON = string(b)
		// The hash (canonical JSON of the whole state) costs more than the
		// snapshot itself; it is kept for the final state, which is what
		// status and replay compare.
		if st.Status != engine.RunRunning {
			if hash, err = engine.Hash(st); err != nil {
				return err
			}
		}
	}
	rows, err := eventRows(evs)
	if err != nil {
		return err
	}
	now := s.cfg.Now().UTC()
	var msgs []store.OutboxMessage
	if s.cfg.Encoder != nil {
		if msgs, err = s.outbox(ctx, evs, now); err != nil {
			return fmt.Errorf("sqlstore: run %s: %w", st.RunID, err)
		}
	}

	if s.cfg.DB.Dialect() == store.Postgres && !first {
		err = s.saveStatement(ctx, st, evs, snapshot, stateJSON, hash, rows, msgs, now)
	} else {
		err = s.saveTx(ctx, st, evs, first, snapshot, stateJSON, hash, source, owner, leaseUntil, rows, msgs, now)
	}
	if err != nil {
		if !errors.Is(err, ErrConflict) {
			err = fmt.Errorf("sqlstore: save run %s at event %d: %w", st.RunID, st.Seq, err)
		}
		return err
	}
	s.mu.Lock()
	switch {
	case st.Status != engine.RunRunning:
		delete(s.snapshots, st.RunID) // finished: nothing more to decide
	case snapshot:
		s.snapshots[st.RunID] = st.Seq
	}
	if first {
		delete(s.sources, st.RunID)
		delete(s.leases, st.RunID)
	}
	s.mu.Unlock()
	if len(msgs) > 0 && s.cfg.Relay != nil {
		s.kick()
	}
	return nil
}

// saveStatement saves a change that follows another on PostgreSQL in one
// statement, committed on its own: the run row's update, and — only when
// it matched — the events and the outbox messages. One round trip, where a
// transaction takes four (begin, two statements, commit), each of which the
// run's next change waits on. The statement's text does not depend on the
// number of events, so each connection prepares it once.
func (s *Store) saveStatement(ctx context.Context, st engine.State, evs []engine.Event, snapshot bool, stateJSON, hash string,
	rows []eventRow, msgs []store.OutboxMessage, now time.Time) error {
	prev := st.Seq
	if len(evs) > 0 {
		prev = evs[0].Seq - 1
	}
	args := []any{s.cfg.TenantID, st.RunID, string(st.Status), st.Seq, nullString(st.Error), nullTime(st.FinishedAt), now, prev}
	update := `UPDATE workflow_runs SET status = $3, seq = $4, error = $5, finished_at = $6, updated_at = $7`
	if snapshot {
		update += `, snapshot_seq = $4, state_json = $9, state_hash = $10`
		args = append(args, stateJSON, hash)
	}
	update += ` WHERE tenant_id = $1 AND id = $2 AND seq = $8 RETURNING 1`
	seqs, types, tasks, jsons, ats := make([]int64, len(rows)), make([]string, len(rows)), make([]*string, len(rows)),
		make([]string, len(rows)), make([]time.Time, len(rows))
	for i, r := range rows {
		seqs[i], types[i], tasks[i], jsons[i], ats[i] = r.seq, r.typ, r.task, r.json, r.at
	}
	p := len(args) + 1
	args = append(args, seqs, types, tasks, jsons, ats)
	outbox, oargs, err := store.PostgresEnqueue(msgs, p+5, `EXISTS (SELECT 1 FROM run)`)
	if err != nil {
		return fmt.Errorf("sqlstore: run %s: outbox: %w", st.RunID, err)
	}
	args = append(args, oargs...)
	q := fmt.Sprintf(`WITH run AS (%s),
		events AS (INSERT INTO workflow_events (tenant_id, run_id, seq, type, task_id, event_json, at)
			SELECT $1, $2, v.seq, v.type, v.task_id, v.event_json, v.at
			FROM unnest($%d::bigint[], $%d::text[], $%d::text[], $%d::text[], $%d::timestamptz[]) AS v (seq, type, task_id, event_json, at)
			WHERE EXISTS (SELECT 1 FROM run)),
		outbox AS (%s)
		SELECT count(*) FROM run`, update, p, p+1, p+2, p+3, p+4, outbox)
	// The statement runs at the server's default isolation: the run row's
	// sequence check and the tables' keys keep it correct at any level. Under
	// a serializable default it may fail for a concurrent transaction, as a
	// transaction would, and is run again (store.Retry).
	var n int64
	if err := store.Retry(ctx, func() error { return s.cfg.DB.QueryRow(ctx, q, args...).Scan(&n) }); err != nil {
		return fmt.Errorf("sqlstore: update run %s, insert its events and outbox: %w", st.RunID, err)
	}
	if n == 0 {
		return s.conflict(ctx, s.cfg.DB, st.RunID, prev)
	}
	return nil
}

// saveTx saves a change in a transaction: a run's first change, and every
// change on SQLite.
func (s *Store) saveTx(ctx context.Context, st engine.State, evs []engine.Event, first, snapshot bool, stateJSON, hash string,
	source, owner *string, leaseUntil *time.Time, rows []eventRow, msgs []store.OutboxMessage, now time.Time) error {
	tenant := s.cfg.TenantID
	return s.cfg.DB.Tx(ctx, func(tx store.Querier) error {
		if first {
			var def *string
			if evs[0].Start != nil {
				b, err := json.Marshal(evs[0].Start)
				if err != nil {
					return err
				}
				d := string(b)
				def = &d
			}
			n, err := tx.Exec(ctx, `INSERT INTO workflow_runs (tenant_id, id, workflow, project, status, seq, snapshot_seq,
				state_json, state_hash, error, definition, source, owner, lease_until, started_at, finished_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (tenant_id, id) DO NOTHING`,
				tenant, st.RunID, st.Workflow, st.Project, string(st.Status), st.Seq, stateJSON, hash, nullString(st.Error),
				def, source, owner, leaseUntil, st.StartedAt.UTC(), nullTime(st.FinishedAt), now)
			if err != nil {
				return fmt.Errorf("sqlstore: create run %s: %w", st.RunID, err)
			}
			if n == 0 {
				return fmt.Errorf("%w: run %s of tenant %s exists already: %w", ErrConflict, st.RunID, tenant, store.ErrConflict)
			}
		} else {
			prev := st.Seq
			if len(evs) > 0 {
				prev = evs[0].Seq - 1
			}
			q := `UPDATE workflow_runs SET status = $3, seq = $4, error = $5, finished_at = $6, updated_at = $7`
			args := []any{tenant, st.RunID, string(st.Status), st.Seq, nullString(st.Error), nullTime(st.FinishedAt), now, prev}
			if snapshot {
				q += `, snapshot_seq = $4, state_json = $9, state_hash = $10`
				args = append(args, stateJSON, hash)
			}
			q += ` WHERE tenant_id = $1 AND id = $2 AND seq = $8`
			n, err := tx.Exec(ctx, q, args...)
			if err != nil {
				return fmt.Errorf("sqlstore: update run %s: %w", st.RunID, err)
			}
			if n == 0 {
				return s.conflict(ctx, tx, st.RunID, prev)
			}
		}
		if err := insertEvents(ctx, tx, tenant, st.RunID, rows); err != nil {
			return err
		}
		if len(msgs) > 0 {
			if err := store.Enqueue(ctx, tx, msgs...); err != nil {
				return fmt.Errorf("sqlstore: run %s: outbox: %w", st.RunID, err)
			}
		}
		return nil
	})
}

// kick asks the relay to publish: once RelayDelay has passed since the
// first change not kicked for yet, or at once.
func (s *Store) kick() {
	if s.cfg.RelayDelay <= 0 {
		s.cfg.Relay.Kick()
		return
	}
	if s.kickDue.CompareAndSwap(false, true) {
		time.AfterFunc(s.cfg.RelayDelay, func() {
			s.kickDue.Store(false)
			s.cfg.Relay.Kick()
		})
	}
}

// minSnapshotEvery is the default interval between snapshots of a small
// run.
const minSnapshotEvery = 256

// snapshotEvery is the interval between snapshots of st's run.
func (s *Store) snapshotEvery(st engine.State) int {
	if s.cfg.SnapshotEvery > 0 {
		return s.cfg.SnapshotEvery
	}
	return max(minSnapshotEvery, len(st.Plan.Tasks))
}

// SetSource records where a run about to start comes from (opaque to the
// store; the orchestrator's Source); it is written with the run's first
// change.
func (s *Store) SetSource(runID string, source []byte) {
	s.mu.Lock()
	s.sources[runID] = string(source)
	s.mu.Unlock()
}

// SetLease makes the run about to start owned by owner until the given
// time, from its first change (see Leases).
func (s *Store) SetLease(runID, owner string, until time.Time) {
	s.mu.Lock()
	s.leases[runID] = lease{owner: owner, until: until}
	s.mu.Unlock()
}

// Source returns what SetSource recorded for a run: nil when nothing was,
// an error wrapping store.ErrNotFound when there is no such run.
func (s *Store) Source(ctx context.Context, runID string) ([]byte, error) {
	var src *string
	err := s.cfg.DB.QueryRow(ctx, `SELECT source FROM workflow_runs WHERE tenant_id = $1 AND id = $2`, s.cfg.TenantID, runID).Scan(&src)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("run %s of tenant %s: %w", runID, s.cfg.TenantID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: source of run %s: %w", runID, err)
	}
	if src == nil {
		return nil, nil
	}
	return []byte(*src), nil
}

// conflict explains a change the run row refused.
func (s *Store) conflict(ctx context.Context, tx store.Querier, runID string, prev int64) error {
	var seq int64
	err := tx.QueryRow(ctx, `SELECT seq FROM workflow_runs WHERE tenant_id = $1 AND id = $2`, s.cfg.TenantID, runID).Scan(&seq)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: run %s of tenant %s does not exist: %w", ErrConflict, runID, s.cfg.TenantID, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: run %s is at event %d in the store, the change follows event %d (is another orchestrator running it?)",
		ErrConflict, runID, seq, prev)
}

type eventRow struct {
	seq    int64
	typ    string
	task   *string
	json   string
	at     time.Time
	runID  string
	tenant string
}

func eventRows(evs []engine.Event) ([]eventRow, error) {
	rows := make([]eventRow, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: encode event %d of run %s: %w", e.Seq, e.RunID, err)
		}
		rows[i] = eventRow{seq: e.Seq, typ: string(e.Type), task: nullString(e.TaskID), json: string(b), at: e.At.UTC()}
	}
	return rows, nil
}

func insertEvents(ctx context.Context, tx store.Querier, tenant, runID string, rows []eventRow) error {
	for len(rows) > 0 {
		n := min(len(rows), maxRowsPerInsert)
		batch := rows[:n]
		rows = rows[n:]
		var b strings.Builder
		b.WriteString(`INSERT INTO workflow_events (tenant_id, run_id, seq, type, task_id, event_json, at) VALUES `)
		args := make([]any, 0, 2+5*n)
		args = append(args, tenant, runID)
		for i, r := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			p := 3 + 5*i
			fmt.Fprintf(&b, "($1, $2, $%d, $%d, $%d, $%d, $%d)", p, p+1, p+2, p+3, p+4)
			args = append(args, r.seq, r.typ, r.task, r.json, r.at)
		}
		if _, err := tx.Exec(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("sqlstore: insert events of run %s: %w", runID, err)
		}
	}
	return nil
}

// Load returns a run's last saved state: its snapshot with the events after
// it folded on. It returns an error wrapping store.ErrNotFound when the
// tenant has no such run.
func (s *Store) Load(ctx context.Context, runID string) (engine.State, error) {
	var (
		stateJSON    string
		seq, snapSeq int64
	)
	err := s.cfg.DB.QueryRow(ctx, `SELECT state_json, seq, snapshot_seq FROM workflow_runs WHERE tenant_id = $1 AND id = $2`,
		s.cfg.TenantID, runID).Scan(&stateJSON, &seq, &snapSeq)
	if errors.Is(err, store.ErrNotFound) {
		return engine.State{}, fmt.Errorf("run %s of tenant %s: %w", runID, s.cfg.TenantID, store.ErrNotFound)
	}
	if err != nil {
		return engine.State{}, fmt.Errorf("sqlstore: load run %s: %w", runID, err)
	}
	var st engine.State
	if err := json.Unmarshal([]byte(stateJSON), &st); err != nil {
		return engine.State{}, fmt.Errorf("%w: run %s: snapshot: %v", ErrCorrupt, runID, err)
	}
	if seq > snapSeq {
		evs, err := s.events(ctx, runID, snapSeq)
		if err != nil {
			return engine.State{}, err
		}
		ch := engine.NewChange(st)
		for _, e := range evs {
			if err := ch.Apply(e); err != nil {
				return engine.State{}, fmt.Errorf("%w: run %s: %v", ErrCorrupt, runID, err)
			}
		}
		st = ch.State()
	}
	if st.Seq != seq {
		return engine.State{}, fmt.Errorf("%w: run %s is at event %d, its stored events reach %d", ErrCorrupt, runID, seq, st.Seq)
	}
	if err := st.Validate(); err != nil {
		return engine.State{}, fmt.Errorf("%w: run %s: %v", ErrCorrupt, runID, err)
	}
	s.mu.Lock()
	s.snapshots[runID] = snapSeq
	s.mu.Unlock()
	return st, nil
}

// Events returns a run's events in order, for replay.
func (s *Store) Events(ctx context.Context, runID string) ([]engine.Event, error) {
	evs, err := s.events(ctx, runID, 0)
	if err == nil && len(evs) == 0 {
		return nil, fmt.Errorf("run %s of tenant %s: %w", runID, s.cfg.TenantID, store.ErrNotFound)
	}
	return evs, err
}

func (s *Store) events(ctx context.Context, runID string, after int64) ([]engine.Event, error) {
	rows, err := s.cfg.DB.Query(ctx, `SELECT seq, event_json FROM workflow_events WHERE tenant_id = $1 AND run_id = $2 AND seq > $3 ORDER BY seq`,
		s.cfg.TenantID, runID, after)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []engine.Event
	for rows.Next() {
		var (
			seq int64
			raw string
		)
		if err := rows.Scan(&seq, &raw); err != nil {
			return nil, fmt.Errorf("sqlstore: events of run %s: %w", runID, err)
		}
		var e engine.Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Seq != seq {
			return nil, fmt.Errorf("%w: run %s: event %d does not decode (%v)", ErrCorrupt, runID, seq, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: events of run %s: %w", runID, err)
	}
	return out, nil
}

// RunInfo is a run's row, for listings.
type RunInfo struct {
	ID       string
	Workflow string
	Project  string
	Status   engine.RunStatus
	Seq      int64
	Error    string
	// StateHash is the hash of the final state once the run has finished;
	// empty while it runs.
	StateHash  string
	StartedAt  time.Time
	FinishedAt *time.Time
	UpdatedAt  time.Time
}

// Runs lists the tenant's runs, newest first, at most limit.
func (s *Store) Runs(ctx context.Context, limit int) ([]RunInfo, error) {
	rows, err := s.cfg.DB.Query(ctx, `SELECT id, workflow, project, status, seq, error, state_hash, started_at, finished_at, updated_at
		FROM workflow_runs WHERE tenant_id = $1 ORDER BY started_at DESC, id LIMIT $2`, s.cfg.TenantID, max(limit, 1))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list runs: %w", err)
	}
	defer rows.Close()
	var out []RunInfo
	for rows.Next() {
		var (
			r      RunInfo
			status string
			errMsg *string
		)
		if err := rows.Scan(&r.ID, &r.Workflow, &r.Project, &status, &r.Seq, &errMsg, &r.StateHash, &r.StartedAt, &r.FinishedAt, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("sqlstore: list runs: %w", err)
		}
		r.Status = engine.RunStatus(status)
		if errMsg != nil {
			r.Error = *errMsg
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Put stores one output of a task, replacing what an earlier attempt of the
// task stored under the same name.
func (s *Store) Put(ctx context.Context, runID, taskID, name string, content []byte) (engine.OutputRef, error) {
	p := path.Join(runID, taskID, name)
	if !plainName(runID) || !plainName(taskID) || !relPath(name) {
		return engine.OutputRef{}, fmt.Errorf("sqlstore: output path %q is not a plain relative path", p)
	}
	if content == nil {
		content = []byte{}
	}
	sum := sha256.Sum256(content)
	ref := engine.OutputRef{Name: name, Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}
	_, err := s.cfg.DB.Exec(ctx, `INSERT INTO workflow_artifacts (tenant_id, path, run_id, task_id, name, sha256, size, content, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (tenant_id, path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, content = excluded.content, created_at = excluded.created_at`,
		s.cfg.TenantID, p, runID, taskID, name, ref.SHA256, ref.Size, content, s.cfg.Now().UTC())
	if err != nil {
		return engine.OutputRef{}, fmt.Errorf("sqlstore: store output %s: %w", p, err)
	}
	return ref, nil
}

// Get returns a stored output, checked against its hash.
func (s *Store) Get(ctx context.Context, ref engine.OutputRef) ([]byte, error) {
	var content []byte
	err := s.cfg.DB.QueryRow(ctx, `SELECT content FROM workflow_artifacts WHERE tenant_id = $1 AND path = $2`,
		s.cfg.TenantID, ref.Path).Scan(&content)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("sqlstore: output %s of tenant %s: %w", ref.Path, s.cfg.TenantID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: output %s: %w", ref.Path, err)
	}
	sum := sha256.Sum256(content)
	if hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%w: output %s changed since it was written (sha256 mismatch)", ErrCorrupt, ref.Path)
	}
	return content, nil
}

func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

func relPath(p string) bool {
	if p == "" || path.IsAbs(p) || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	c := path.Clean(p)
	return c == p && c != "." && c != ".." && !strings.HasPrefix(c, "../")
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
