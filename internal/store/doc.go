// Package store is Praetor's relational store port: a small SQL interface with
// two adapters, PostgreSQL through pgx (package store/postgres, production) and
// embedded SQLite (package store/sqlite, the default of praetor dev), both
// passing one conformance suite (package store/storetest).
//
// Queries are written once for both adapters, in the SQL both understand:
//
//   - placeholders are $1, $2, ... (numbered, each adapter binds by number:
//     $2 may come before $1 and $1 may repeat);
//   - ids and tenant ids are TEXT; times are time.Time values, written and read
//     back in UTC with microsecond precision (TIMESTAMPTZ columns in
//     PostgreSQL, TIMESTAMP in SQLite, whose driver parses a column into
//     time.Time only when its declared type says so). Pass times as arguments;
//     never use now(), CURRENT_TIMESTAMP or column defaults for them, which
//     the two dialects write differently and time-injected code cannot see;
//   - JSON is passed as a string and scanned into []byte or string (JSONB in
//     PostgreSQL, TEXT in SQLite: a []byte argument would be stored there as
//     a BLOB, which SQLite's JSON functions take for its binary JSONB);
//     bytes are []byte (BYTEA, BLOB); booleans are bool; a column of
//     kilobytes rewritten often (working memory, outbox data) is written as
//     a store.Large and read into *store.Large only, since the SQLite
//     adapter keeps such a value compressed;
//   - upserts use ON CONFLICT ... DO NOTHING / DO UPDATE SET x = excluded.x,
//     and RETURNING is available; lists are IN ($2, $3, ...), not = ANY($2);
//   - what only one dialect has (row locks, advisory locks) is guarded by
//     DB.Dialect.
//
// Transactions behave alike on both adapters: SERIALIZABLE in PostgreSQL and
// one writer at a time in SQLite, so a read-modify-write inside Tx never loses
// an update. PostgreSQL reports the conflicts that SQLite avoids by waiting as
// serialization failures, which Tx retries: fn may run more than once and must
// have no effect outside the transaction. Inside fn use only the tx it is
// given; on SQLite the database's own methods would wait for the writer that
// fn holds.
//
// Every table carries tenant_id and every query on tenant data filters by it.
// The functions over a Querier in this package (tenants, API tokens, inbox,
// outbox) run alike on a DB or inside a caller's transaction, so a handler can
// record its inbox row, its state change and its outbox messages in one Tx.
//
// # Migrations
//
// Schema changes are versioned SQL files under migrations/postgres/ and
// migrations/sqlite/, embedded in the binary and applied by Migrate (praetor
// migrate, and praetor dev at start) with goose. To add one, drop a file
// named NNNNN_what.sql with the next free number into both folders, same
// number and name, each in its own dialect:
//
//	-- +goose Up
//	CREATE TABLE sessions (
//	    tenant_id TEXT NOT NULL,
//	    id TEXT NOT NULL,
//	    ...
//	    PRIMARY KEY (tenant_id, id)
//	);
//
// Migrations are forward-only: no Down section, and a file never changes once
// merged (write a new one instead). Each file runs in one transaction and its
// version is recorded in goose_db_version, so Migrate applies only what is
// missing and re-running it is a no-op. A version that appears below the
// newest applied one (two branches merged out of order) is applied too rather
// than refused. TestMigrationFolders checks that both folders hold the same
// versions.
package store
