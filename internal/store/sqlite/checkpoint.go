package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
)

// checkpointer copies the write-ahead log into the database file from a
// connection of its own, so that no commit pays for it.
//
// By default SQLite checkpoints inside the commit that takes the log past
// 1,000 pages: that commit, and every transaction queued behind the single
// writer, waits while the pages are copied and both files synced. Under load
// that is many times a second, and it is the tail of every write. Here the
// writer never checkpoints (wal_autocheckpoint is off on its connection);
// instead, every interval:
//
//  1. a passive checkpoint copies what has been committed so far. It takes
//     the checkpoint lock, not the write lock: the writer goes on
//     committing meanwhile.
//  2. Because the writer goes on, the log is seldom wholly copied at the
//     moment of a commit, and SQLite starts a log over from its beginning
//     only then: left to passive checkpoints, it would grow without end.
//     So once it is longer than RestartFrames pages, a second passive
//     checkpoint copies what was committed during the first (for a long
//     log, hundreds of pages) and the checkpointer syncs the database file
//     (see syncDB); then it holds the writer connection (no transaction of
//     this process can begin) and runs a RESTART checkpoint: it copies the
//     few pages committed since, syncs, and waits for the readers still on
//     the old log, so that the writer's next commit starts the log over.
//     Those readers are waited for by polling every 100µs, up to
//     restartPatience, not in SQLite's busy handler, whose first sleeps
//     alone come to 8 ms.
//  3. A restart that could not finish (a reader stayed) is tried again once
//     the log has grown by another RestartFrames, so a reader that never
//     ends (a leaked cursor, another process) costs the writer a wait now
//     and then, not every round.
//
// A failing checkpoint, or a restart a reader keeps failing, leaves the log
// growing: either is logged after ten rounds in a row, and again at every
// power of ten.
type checkpointer struct {
	db     *sql.DB // one connection; reconnected by database/sql if it breaks
	writer *sql.DB
	// file is the database file, opened for syncing it (syncDB). It is
	// closed by DB.Close after every connection, never before: SQLite's
	// locks on the file are POSIX record locks, which belong to the
	// process, and closing any descriptor of the file releases them all.
	file *os.File
	// syncDB syncs the database file before a restart holds the writer.
	// A passive copy syncs the file only when it reaches the end of the
	// log, which under load it seldom does: the pages copied since the
	// last restart (a second of them, megabytes) are left for the
	// RESTART checkpoint to sync, which took it 8–12 ms, every commit
	// waiting. Synced first, without the writer, they leave it the pages
	// of its own copy. It only saves the writer time: when it fails the
	// restart goes on, and syncs everything itself. A field for tests.
	syncDB  func() error
	restart int
	log     *slog.Logger
	cancel  context.CancelFunc
	done    sync.WaitGroup

	// Touched by the loop only (and by tests that run rounds themselves,
	// with the loop idle).
	threshold    int // log length past which a round restarts it
	restartedAt  int // log length at the last restart, until a commit resets it
	lastFrames   int // log length at the last round
	failures     int // rounds failed in a row
	syncFailures int // pre-syncs (syncDB) failed in a row
	stuck        int // restarts given up in a row (a reader stayed)

	restarts atomic.Int64 // by the loop, for tests
}

func startCheckpointer(ctx context.Context, path, dsn string, writer *sql.DB, every time.Duration, restart int,
	log *slog.Logger) (*checkpointer, error) {
	conn, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	// fsync flushes the file, whatever the descriptor it is given; writable
	// for the systems whose sync wants one (Windows). Nothing writes to it.
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		db.Close()
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	cp := &checkpointer{db: db, writer: writer, file: file, syncDB: file.Sync, restart: restart, log: log, cancel: cancel,
		threshold: restart}
	cp.done.Add(1)
	go cp.loop(cctx, every)
	return cp, nil
}

func (cp *checkpointer) loop(ctx context.Context, every time.Duration) {
	defer cp.done.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		restarted, err := cp.checkpoint(ctx)
		if restarted {
			cp.restarts.Add(1)
		}
		switch {
		case err == nil:
			cp.failures = 0
		case ctx.Err() != nil:
			return
		default:
			cp.failures++
			if n := cp.failures; worthWarning(n) {
				cp.log.Warn("sqlite: checkpoints keep failing; the write-ahead log grows until they succeed",
					"failures_in_a_row", n, "error", err)
			}
		}
	}
}

// worthWarning reports whether the nth trouble in a row is logged: the
// tenth, then every power of ten.
func worthWarning(n int) bool {
	if n < 10 {
		return false
	}
	for n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// checkpoint runs one round (see checkpointer) and reports whether it
// restarted the log.
func (cp *checkpointer) checkpoint(ctx context.Context) (restarted bool, err error) {
	// Never sleep in SQLite's busy handler: set again at every round, should
	// database/sql have reconnected. (Not in the connection's DSN: opening
	// waits for locks like any connection.)
	if _, err := cp.db.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false, err
	}
	frames, err := cp.passive(ctx)
	if err != nil || frames < 0 {
		// -1: another connection holds the checkpoint lock (a checkpoint
		// of another process, say); nothing learnt, nothing to do.
		return false, err
	}
	if frames < cp.lastFrames {
		// A commit started the log over (after a full passive copy, with no
		// reader on the old log): back to the plain threshold.
		cp.threshold, cp.restartedAt, cp.stuck = cp.restart, 0, 0
	}
	cp.lastFrames = frames
	if frames <= cp.threshold || frames == cp.restartedAt {
		// Short enough; or restarted already, and no commit since to
		// start it over.
		return false, nil
	}
	if _, err := cp.passive(ctx); err != nil {
		return false, err
	}
	if err := cp.syncDB(); err != nil {
		cp.syncFailures++
		if n := cp.syncFailures; n == 1 || worthWarning(n) {
			cp.log.Warn("sqlite: syncing the database file before a log restart failed; the restart syncs it itself, holding the writer longer",
				"failures_in_a_row", n, "error", err)
		}
	} else {
		cp.syncFailures = 0
	}
	w, err := cp.writer.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer w.Close()
	// The writer held shows in execution traces (runtime/trace), for
	// telling the writes it held up from others.
	defer trace.StartRegion(ctx, RestartRegion).End()
	// The first attempt copies and syncs, which can take longer than the
	// patience: the wait for readers starts after it.
	frames, busy, err := cp.run(ctx, "RESTART")
	deadline := time.Now().Add(restartPatience)
	for err == nil && busy && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
		frames, busy, err = cp.run(ctx, "RESTART")
	}
	switch {
	case err != nil:
		return false, err
	case busy:
		// frames is -1 when the lock itself was taken: back off from the
		// length this round saw.
		cp.threshold = max(frames, cp.lastFrames) + cp.restart
		cp.stuck++
		if n := cp.stuck; worthWarning(n) {
			cp.log.Warn("sqlite: a reader keeps the write-ahead log from starting over; it grows until the reader ends",
				"restarts_failed_in_a_row", n, "log_pages", cp.lastFrames)
		}
		return false, nil
	}
	cp.threshold, cp.restartedAt, cp.stuck = cp.restart, frames, 0
	return true, nil
}

// Names of the execution trace regions (runtime/trace) of a checkpoint
// round: a passive copy (one every round, a second before a restart), and
// a restart of the log, while it holds the writer.
const (
	CheckpointRegion = "sqlite: checkpoint"
	RestartRegion    = "sqlite: log restart"
)

// restartPatience bounds how long a round waits, holding the writer, for
// readers on the old log.
const restartPatience = 5 * time.Millisecond

// passive runs a passive checkpoint, a region of execution traces
// (CheckpointRegion), and returns the log's length in pages.
func (cp *checkpointer) passive(ctx context.Context) (frames int, err error) {
	defer trace.StartRegion(ctx, CheckpointRegion).End()
	frames, _, err = cp.run(ctx, "PASSIVE")
	return frames, err
}

// run runs a checkpoint of the given mode and returns the log's length in
// pages, and whether it could not finish (readers or another process's
// writer in its way).
func (cp *checkpointer) run(ctx context.Context, mode string) (frames int, busy bool, err error) {
	var blocked, copied int
	err = cp.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&blocked, &frames, &copied)
	return frames, blocked != 0, err
}

// stop ends the loop and closes the connection; not the file, which DB.Close
// closes after the writer (see file). The last connection to close (the
// writer's) checkpoints what is left.
func (cp *checkpointer) stop() error {
	cp.cancel()
	cp.done.Wait()
	return cp.db.Close()
}
