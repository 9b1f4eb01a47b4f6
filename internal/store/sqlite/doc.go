// Package sqlite is the embedded SQLite adapter of the store port, on the
// pure-Go modernc.org/sqlite driver (no cgo). It is the default of praetor
// dev: one file under the data directory, nothing to install.
//
// The file is in WAL mode with foreign keys on. One connection writes: every
// Exec and every transaction run on it, one at a time, and transactions begin
// with BEGIN IMMEDIATE, so writers in this process queue instead of failing
// and writers in other processes wait up to the busy timeout instead of
// deadlocking. Queries outside transactions run on a pool of read-only
// connections, which WAL lets read while the writer writes. Inside Tx use
// only the tx given to fn: the DB's own Exec would wait for the writer that
// fn holds.
//
// The writer never checkpoints the log inside a commit: a connection of its
// own does, beside it, every Config.CheckpointInterval, and starts the log
// over once it is long, holding the writer only for the last few pages (see
// checkpointer). Transactions then no longer queue behind a commit that
// copies a thousand pages and syncs both files.
//
// Each connection keeps its statements prepared, by query text
// (Config.CachedStatements of them, the least recently used closed first), so
// a statement that runs again is not parsed again.
//
// The driver binds $1, $2, ... by number, as PostgreSQL does (the conformance
// suite checks it). Times are written as fixed-width UTC text with
// microseconds, so they sort and compare as times, and read back as time.Time
// in UTC.
package sqlite
