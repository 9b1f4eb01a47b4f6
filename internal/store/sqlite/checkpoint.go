package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// checkpointer copies the write-ahead log into the database file from a
// connection of its own, so that no commit pays for it.
//
// By default SQLite checkpoints inside the commit that takes the log past
// 1,000 pages: that commit, and every transaction queued behind the single
// writer, waits while the pages are copied. Under load that is many times a
// second, and it is the tail of every write. Here the writer never
// checkpoints (wal_autocheckpoint is off on its connection); instead, every
// interval:
//
//  1. a passive checkpoint copies what has been committed so far. It takes
//     the checkpoint lock, not the write lock: the writer goes on
//     committing meanwhile.
//  2. Because the writer goes on, the log is seldom wholly copied at the
//     moment of a commit, and SQLite starts a log over from its beginning
//     only then: left to passive checkpoints, it would grow without end.
//     So once it is longer than RestartFrames pages, the checkpointer holds
//     the writer connection (no transaction of this process can begin) and
//     runs a RESTART checkpoint, which copies the few pages committed
//     since and starts the log over (a second passive checkpoint first
//     copies those committed during step 1, which for a long log are
//     hundreds). The writer waits for that copy
//     only, not for the whole log. Readers still on the old log are waited
//     for by polling every 100µs, up to restartPatience, not in SQLite's
//     busy handler, whose first sleeps alone come to 8 ms; past it the
//     next round tries again.
//
// A failed checkpoint is not an error anyone can act on: the next tick tries
// again, and the log only grows meanwhile.
type checkpointer struct {
	conn    *sql.Conn
	db      *sql.DB
	writer  *sql.DB
	restart int
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func startCheckpointer(ctx context.Context, dsn string, writer *sql.DB, every time.Duration, restart int) (*checkpointer, error) {
	conn, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err == nil {
		// Never sleep in SQLite's busy handler (see checkpoint).
		_, err = c.ExecContext(ctx, "PRAGMA busy_timeout = 0")
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	cp := &checkpointer{conn: c, db: db, writer: writer, restart: restart, cancel: cancel}
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
		_ = cp.checkpoint(ctx)
	}
}

// checkpoint runs one round: a passive checkpoint, then a restart when the
// log has grown past its bound.
func (cp *checkpointer) checkpoint(ctx context.Context) error {
	frames, _, err := cp.run(ctx, "PASSIVE")
	if err != nil || frames <= cp.restart {
		return err
	}
	// Copy (and sync) what was committed during the first pass, still
	// beside the writer: the remainder left for the writer to wait on is
	// then what a millisecond commits, not what the first pass took.
	if _, _, err := cp.run(ctx, "PASSIVE"); err != nil {
		return err
	}
	w, err := cp.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	// Readers that began on the old log hold it for as long as their
	// query runs; those beginning now read the database file. Poll for
	// the old ones to finish, finely, and give up the round past
	// restartPatience: the writer is waiting.
	deadline := time.Now().Add(restartPatience)
	for {
		_, busy, err := cp.run(ctx, "RESTART")
		if err != nil || !busy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// restartPatience bounds how long a round waits, holding the writer, for
// readers on the old log.
const restartPatience = 5 * time.Millisecond

// run runs a checkpoint of the given mode and returns the log's length
// before it, in pages, and whether it could not finish (readers or a writer
// in its way).
func (cp *checkpointer) run(ctx context.Context, mode string) (frames int, busy bool, err error) {
	var blocked, copied int
	err = cp.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&blocked, &frames, &copied)
	return frames, blocked != 0, err
}

// stop ends the loop and closes the connection. The last connection to close
// (the writer's) checkpoints what is left.
func (cp *checkpointer) stop() error {
	cp.cancel()
	cp.done.Wait()
	err := cp.conn.Close()
	if err2 := cp.db.Close(); err == nil {
		err = err2
	}
	return err
}
