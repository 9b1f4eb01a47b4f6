package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openPages opens a database with cfg (closed at the end of the test) and
// creates the table writePages fills.
func openPages(t *testing.T, cfg Config) *DB {
	t.Helper()
	db, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(t.Context(), `CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// openForCheckpoints opens a database whose checkpointer never ticks on its
// own (the test runs its rounds) and restarts the log past restart pages.
func openForCheckpoints(t *testing.T, restart int) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ckpt.db")
	return openPages(t, Config{Path: path, CheckpointInterval: time.Hour, RestartFrames: restart}), path
}

// round runs one checkpoint round and fails the test unless it restarted
// the log exactly when want says, without error.
func round(t *testing.T, ctx context.Context, db *DB, want bool, what string) {
	t.Helper()
	if restarted, err := db.ckpt.checkpoint(ctx); err != nil || restarted != want {
		t.Fatalf("%s = restarted %v, %v; want restarted %v and no error", what, restarted, err, want)
	}
}

// writePages commits n rows of a page each, one transaction apiece.
func writePages(t *testing.T, db *DB, n int) {
	t.Helper()
	body := strings.Repeat("p", 4000)
	for range n {
		if _, err := db.Exec(t.Context(), `INSERT INTO pages (body) VALUES ($1)`, body); err != nil {
			t.Fatal(err)
		}
	}
}

// logBytes is the size of the write-ahead log file. Asking SQLite instead
// (PRAGMA wal_checkpoint) would checkpoint.
func logBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCommitsNeverCheckpoint(t *testing.T) {
	db, path := openForCheckpoints(t, 1<<30)
	// SQLite's default would checkpoint and start the log over past 1,000
	// pages; with the checkpointer the writer leaves the log to it.
	writePages(t, db, 1500)
	if size := logBytes(t, path); size < 1500*4096 {
		t.Fatalf("log is %d bytes after 1,500 one-page commits: a commit checkpointed", size)
	}
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM pages`).Scan(&n); err != nil || n != 1500 {
		t.Fatalf("count = %d, %v; want 1500", n, err)
	}
}

func TestCheckpointerRestartsTheLog(t *testing.T) {
	db, path := openForCheckpoints(t, 100)
	writePages(t, db, 300)
	first := logBytes(t, path)
	round(t, t.Context(), db, true, "round on a log past RestartFrames")
	// Until a commit starts it over, the log keeps its length: a second
	// round must not hold the writer again for it.
	round(t, t.Context(), db, false, "second round")
	// Restarted, the log is written again from its beginning: the file
	// keeps its size (give or take a page of the tree's growth). Left to
	// passive checkpoints it would double.
	writePages(t, db, 300)
	if second := logBytes(t, path); second > first*5/4 {
		t.Fatalf("log grew from %d to %d bytes over a checkpoint round: not restarted", first, second)
	}
	assertIntact(t, db, 600)
}

func TestRestartSyncsTheFileBeforeHoldingTheWriter(t *testing.T) {
	db, _ := openForCheckpoints(t, 100)
	writePages(t, db, 300)
	// The sync runs while commits still go through: a commit made from
	// inside it would wait for ever (and the test time out) if the round
	// held the writer already.
	syncs := 0
	sync := db.ckpt.syncDB
	db.ckpt.syncDB = func() error {
		syncs++
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if _, err := db.Exec(ctx, `INSERT INTO pages (body) VALUES ('during the sync')`); err != nil {
			t.Errorf("commit during the sync: %v; want it through, the writer free", err)
		}
		return sync()
	}
	round(t, t.Context(), db, true, "round on a log past RestartFrames")
	if syncs != 1 {
		t.Fatalf("the restart round synced the file %d times; want once", syncs)
	}
	writePages(t, db, 10)
	round(t, t.Context(), db, false, "round on a short log")
	if syncs != 1 {
		t.Fatalf("a round that did not restart synced the file (%d syncs in all); want none", syncs)
	}
	// A failed sync only saves the writer nothing: the restart goes on.
	writePages(t, db, 300)
	db.ckpt.syncDB = func() error { return os.ErrClosed }
	round(t, t.Context(), db, true, "round with a failing sync")
	if db.ckpt.syncFailures != 1 {
		t.Fatalf("%d failed syncs counted, want 1", db.ckpt.syncFailures)
	}
	assertIntact(t, db, 611)
}

func TestCheckpointerBesideAReader(t *testing.T) {
	db, path := openForCheckpoints(t, 100)
	writePages(t, db, 300)
	// A reader in the middle of a read holds the log: the restart cannot
	// happen now, and the round must neither wait for the reader nor fail.
	rtx, err := db.readers.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rtx.QueryRowContext(t.Context(), `SELECT count(*) FROM pages`).Scan(&n); err != nil || n != 300 {
		t.Fatalf("reader count = %d, %v; want 300", n, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	round(t, ctx, db, false, "round beside a reader")
	writePages(t, db, 10)
	// The reader still sees its snapshot.
	if err := rtx.QueryRowContext(t.Context(), `SELECT count(*) FROM pages`).Scan(&n); err != nil || n != 300 {
		t.Fatalf("reader count after the round = %d, %v; want its snapshot's 300", n, err)
	}
	if err := rtx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// A failed restart is tried again once the log has grown by another
	// RestartFrames, not at every round.
	round(t, t.Context(), db, false, "round right after a failed restart")
	// With the reader gone, a commit starts the log over by itself (the
	// round copied it all): the round sees a short log and is back to the
	// plain threshold.
	writePages(t, db, 10)
	round(t, t.Context(), db, false, "round on a log a commit started over")
	writePages(t, db, 150) // past the plain threshold, not the raised one
	grown := logBytes(t, path)
	round(t, t.Context(), db, true, "round past the plain threshold")
	writePages(t, db, 300)
	if after := logBytes(t, path); after > grown*5/4 {
		t.Fatalf("log grew from %d to %d bytes after the reader left: not restarted", grown, after)
	}
	assertIntact(t, db, 770)
}

func TestCheckpointerSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reopen.db")
	db := openPages(t, Config{Path: path, CheckpointInterval: time.Millisecond, RestartFrames: 10})
	writePages(t, db, 200) // the checkpointer runs rounds meanwhile
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	assertIntact(t, db, 200)
}

func assertIntact(t *testing.T, db *DB, rows int) {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM pages`).Scan(&n); err != nil || n != rows {
		t.Fatalf("count = %d, %v; want %d", n, err, rows)
	}
	var ok string
	if err := db.QueryRow(t.Context(), `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check = %q, %v", ok, err)
	}
}

func TestCheckpointerBoundsTheLogUnderLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "load.db")
	const restart = 256
	db := openPages(t, Config{Path: path, CheckpointInterval: time.Millisecond, RestartFrames: restart})
	// Writers commit without pause and readers read without pause, so the
	// log is seldom wholly copied at the moment of a commit: the restart
	// step keeps it from growing with every page written. (The tests above
	// check the step itself deterministically; this one, the bound under
	// load.)
	ctx, cancel := context.WithCancel(t.Context())
	var readers, writers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for ctx.Err() == nil {
				var n int
				_ = db.QueryRow(ctx, `SELECT max(id) FROM pages`).Scan(&n)
			}
		})
	}
	const writes = 8000
	body := strings.Repeat("p", 4000)
	var written atomic.Int64
	for range 2 {
		writers.Go(func() {
			for written.Add(1) <= writes {
				if _, err := db.Exec(t.Context(), `INSERT INTO pages (body) VALUES ($1)`, body); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	writers.Wait()
	cancel()
	readers.Wait()
	// Without restarts the log would hold every page of every commit (a
	// commit writes about three); with them it holds what commits wrote
	// between two restarts, which a slow disk lengthens. A third of the
	// whole is a bound only a missing restart breaks.
	if db.ckpt.restarts.Load() == 0 {
		t.Fatal("no round restarted the log")
	}
	if size, bound := logBytes(t, path), int64(writes*4096); size > bound {
		t.Fatalf("log is %d bytes after %d one-page commits; want at most %d", size, writes, bound)
	}
	assertIntact(t, db, writes)
}
