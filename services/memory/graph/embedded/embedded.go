package embedded

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/praetorhq/praetor/internal/datadir"
	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
)

// Config configures the embedded graph store.
type Config struct {
	// Path is the SQLite database file, created if missing. Required.
	Path string
	// BusyTimeout is how long a statement waits for a lock held by another
	// process before failing with graph.ErrUnavailable. Default 10s.
	BusyTimeout time.Duration
	// Logger receives lifecycle messages. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.BusyTimeout = cmp.Or(c.BusyTimeout, 10*time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if strings.TrimSpace(c.Path) == "" {
		return errors.New("embedded graph: Config.Path is required (the SQLite file to keep memory in)")
	}
	return nil
}

// Store is the embedded graph store. It is safe for concurrent use.
type Store struct {
	cfg Config
	// writer has one connection and begins IMMEDIATE transactions: writes
	// queue in Go, in order, instead of spinning on SQLITE_BUSY.
	writer *sql.DB
	// reader has query_only set on every connection: a read transaction
	// cannot write even by mistake.
	reader    *sql.DB
	closeOnce sync.Once
	closeErr  error
}

var _ graph.Store = (*Store)(nil)

// Open opens (creating if needed) the database at cfg.Path and its schema.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Private, as the data directory: the -wal and -shm files take the
	// database's mode.
	if err := datadir.CreatePrivate(cfg.Path); err != nil {
		return nil, fmt.Errorf("embedded graph: create %s: %w", cfg.Path, err)
	}
	base := "file:" + (&url.URL{Path: cfg.Path}).EscapedPath()
	ms := cfg.BusyTimeout.Milliseconds()
	writer, err := sql.Open("sqlite", fmt.Sprintf("%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)", base, ms))
	if err != nil {
		return nil, fmt.Errorf("embedded graph: open %s: %w", cfg.Path, err)
	}
	writer.SetMaxOpenConns(1)
	s := &Store{cfg: cfg, writer: writer}
	if err := s.migrate(ctx); err != nil {
		_ = writer.Close()
		return nil, err
	}
	reader, err := sql.Open("sqlite", fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=query_only(1)", base, ms))
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("embedded graph: open %s for reading: %w", cfg.Path, err)
	}
	reader.SetMaxOpenConns(4)
	s.reader = reader
	cfg.Logger.Debug("embedded graph store open", "path", cfg.Path)
	return s, nil
}

// Close closes the database; a second Close does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.reader.Close(), s.writer.Close())
	})
	return s.closeErr
}

// schema is applied at every Open; every statement is idempotent, and
// creates what an older file lacks or drops what it no longer needs.
var schema = []string{
	// Scope nodes: projects, focus areas and the global scope of each tenant.
	// uid is tenant_id|scope key.
	`CREATE TABLE IF NOT EXISTS mem_scopes (
		uid TEXT PRIMARY KEY,
		tenant_id TEXT NOT NULL,
		scope_key TEXT NOT NULL,
		level TEXT NOT NULL,
		project_id TEXT NOT NULL,
		focus TEXT NOT NULL,
		last_hygiene_at INTEGER,
		write_seq INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL
	)`,
	// Memory nodes. The content key is (scope_uid, kind, content_hash);
	// scope_uid and area_uid start with the tenant id.
	`CREATE TABLE IF NOT EXISTS mem_nodes (
		seq INTEGER PRIMARY KEY,
		id TEXT NOT NULL UNIQUE,
		tenant_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		level TEXT NOT NULL,
		project_id TEXT NOT NULL,
		focus TEXT NOT NULL,
		scope_uid TEXT NOT NULL,
		area_uid TEXT NOT NULL,
		title TEXT NOT NULL,
		rationale TEXT NOT NULL,
		entity_name TEXT NOT NULL,
		entity_key TEXT NOT NULL,
		content_hash TEXT NOT NULL,
		status TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		last_validated_at INTEGER,
		superseded_by TEXT,
		fts_scope TEXT NOT NULL DEFAULT '',
		CONSTRAINT mem_nodes_content_key UNIQUE (scope_uid, kind, content_hash)
	)`,
	// The live nodes of a scope by the time they were last confirmed, the
	// order of readTx.Live (on the same expression, or SQLite cannot use
	// it). It replaces mem_nodes_live, on created_at alone.
	`CREATE INDEX IF NOT EXISTS mem_nodes_live_confirmed ON mem_nodes (scope_uid, coalesce(last_validated_at, created_at))
		WHERE superseded_by IS NULL`,
	`DROP INDEX IF EXISTS mem_nodes_live`,
	`CREATE INDEX IF NOT EXISTS mem_nodes_area ON mem_nodes (area_uid, kind)`,
	`CREATE TABLE IF NOT EXISTS mem_edges (
		tenant_id TEXT NOT NULL,
		rel TEXT NOT NULL,
		from_id TEXT NOT NULL,
		to_id TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		reinstated INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (rel, from_id, to_id)
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS mem_edges_to ON mem_edges (to_id, rel)`,
	// Named values of the store about its own data: rehashed_seq (see
	// rehash).
	`CREATE TABLE IF NOT EXISTS mem_meta (
		name TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) WITHOUT ROWID`,
	// Full-text index of titles and rationales (external content: the text
	// lives once, in mem_nodes), kept in step by triggers. fts_scope is one
	// token naming the tenant, scope and kind of a live decision or pattern
	// (empty once superseded), so a MATCH reaches only the candidates of one
	// scope instead of ranking every tenant's matches and filtering after.
	`CREATE VIRTUAL TABLE IF NOT EXISTS mem_fts USING fts5(
		title, rationale, fts_scope, content='mem_nodes', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
	)`,
	`CREATE TRIGGER IF NOT EXISTS mem_nodes_fts_insert AFTER INSERT ON mem_nodes BEGIN
		INSERT INTO mem_fts (rowid, title, rationale, fts_scope) VALUES (new.seq, new.title, new.rationale, new.fts_scope);
	END`,
	`CREATE TRIGGER IF NOT EXISTS mem_nodes_fts_delete AFTER DELETE ON mem_nodes BEGIN
		INSERT INTO mem_fts (mem_fts, rowid, title, rationale, fts_scope) VALUES ('delete', old.seq, old.title, old.rationale, old.fts_scope);
	END`,
	`CREATE TRIGGER IF NOT EXISTS mem_nodes_fts_update AFTER UPDATE OF title, rationale, fts_scope ON mem_nodes BEGIN
		INSERT INTO mem_fts (mem_fts, rowid, title, rationale, fts_scope) VALUES ('delete', old.seq, old.title, old.rationale, old.fts_scope);
		INSERT INTO mem_fts (rowid, title, rationale, fts_scope) VALUES (new.seq, new.title, new.rationale, new.fts_scope);
	END`,
}

// addedColumns are columns added to the tables of schema after databases
// were created without them. The CREATE TABLE of schema has them, for new
// databases; migrate adds them to older ones, since SQLite has no ADD
// COLUMN IF NOT EXISTS.
var addedColumns = []struct{ table, column, decl string }{
	// A SUPERSEDES written by WriteTx.Reinstate (graph.Edge.Reinstated).
	{"mem_edges", "reinstated", "INTEGER NOT NULL DEFAULT 0"},
}

// migrate brings the file up to date, in one transaction: the tables,
// indexes and triggers of schema, the addedColumns, and the content hashes
// and entity keys of rehash.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return classify("begin schema", err)
	}
	defer tx.Rollback()
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("embedded graph: schema: %w", err)
		}
	}
	for _, c := range addedColumns {
		var has int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&has); err != nil {
			return fmt.Errorf("embedded graph: schema: columns of %s: %w", c.table, err)
		}
		if has > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+c.decl); err != nil {
			return fmt.Errorf("embedded graph: schema: add %s.%s: %w", c.table, c.column, err)
		}
	}
	n, err := rehash(ctx, tx)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return classify("commit schema", err)
	}
	if n > 0 {
		s.cfg.Logger.Info("embedded graph: content hashes recomputed", "path", s.cfg.Path, "nodes", n)
	}
	return nil
}

// signGlob matches the text that holds one of graph.SignRunes.
var signGlob = "*[" + graph.SignRunes + "]*"

// rehash recomputes the content hash (dedup.ContentHash) and entity key
// (graph.NormalizeEntity) of the nodes whose stored ones are not the
// current definitions, and returns how many it changed. The definitions
// changed once, when the signs that end a name began to count ("C++" is not
// "C"): a node stored before, with '+' or '#' in its title, rationale or
// entity name, may have the hash and key of its content without the signs.
//
// It checks only the nodes added since it last ran: mem_meta's
// rehashed_seq is the highest mem_nodes.seq it has checked (nodes are never
// deleted, so seq only grows). A file that is up to date costs two look-ups
// by key, a second run changes nothing, and nodes that an older version
// writes into the file later are checked at the next Open. Of the new
// nodes, only those with a sign are read, and only those whose values
// differ are written. (The GLOB that finds them costs some microseconds a
// node: over the whole table at every Open, about a second per 100,000
// nodes.)
//
// Two nodes cannot come to share a content key: the signs only add to the
// words of the old form, so content that is the same with them was the same
// without them, and the old hash kept it once per scope and kind. Should the
// file hold such a pair anyway (hashes written by something else than
// ContentHash), rehash fails with graph.ErrDuplicateContent naming both, and
// the transaction changes nothing.
func rehash(ctx context.Context, tx *sql.Tx) (int, error) {
	var checked, last int64
	err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT value FROM mem_meta WHERE name = 'rehashed_seq'), 0),
		coalesce((SELECT max(seq) FROM mem_nodes), 0)`).Scan(&checked, &last)
	if err != nil {
		return 0, classify("rehash: read rehashed_seq", err)
	}
	if last <= checked {
		return 0, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, id, tenant_id, scope_uid, kind, title, rationale, entity_name, entity_key, content_hash
		FROM mem_nodes WHERE seq > ? AND seq <= ? AND (title || rationale || entity_name) GLOB ?`, checked, last, signGlob)
	if err != nil {
		return 0, classify("rehash: find nodes with signs", err)
	}
	type stale struct {
		seq                     int64
		id, tenant, scope, kind string
		hash, key               string // as they are now defined
	}
	var todo []stale
	for rows.Next() {
		var (
			n                                 stale
			title, rationale, name, key, hash string
		)
		if err := rows.Scan(&n.seq, &n.id, &n.tenant, &n.scope, &n.kind, &title, &rationale, &name, &key, &hash); err != nil {
			rows.Close()
			return 0, classify("rehash: scan node", err)
		}
		n.hash = dedup.ContentHash(graph.Kind(n.kind), name, title, rationale)
		n.key = graph.NormalizeEntity(name)
		if n.hash != hash || n.key != key {
			todo = append(todo, n)
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return 0, classify("rehash: read nodes", err)
	}
	rows.Close()
	for _, n := range todo {
		_, err := tx.ExecContext(ctx, `UPDATE mem_nodes SET content_hash = ?, entity_key = ? WHERE seq = ?`, n.hash, n.key, n.seq)
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
			var other string
			_ = tx.QueryRowContext(ctx, `SELECT id FROM mem_nodes WHERE scope_uid = ? AND kind = ? AND content_hash = ?`,
				n.scope, n.kind, n.hash).Scan(&other)
			return 0, fmt.Errorf("embedded graph: rehash: %s %s and %s of tenant %s hold the same content once signs count "+
				"(content hash %s in scope %s); a scope holds each content once, so one of them must go before the file can open: %w: %w",
				n.kind, n.id, cmp.Or(other, "another node"), n.tenant, n.hash, n.scope, graph.ErrDuplicateContent, err)
		}
		if err != nil {
			return 0, classify("rehash: update node "+n.id, err)
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO mem_meta (name, value) VALUES ('rehashed_seq', ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, last)
	if err != nil {
		return 0, classify("rehash: record rehashed_seq", err)
	}
	return len(todo), nil
}

func scopeUID(tenant string, s graph.Scope) string { return tenant + "|" + s.Key() }

// ftsScope is the full-text token of a scope and kind: letters and digits
// only, so the tokenizer keeps it whole.
func ftsScope(scopeUID string, kind graph.Kind) string {
	sum := sha256.Sum256([]byte(scopeUID + "|" + string(kind)))
	return "s" + hex.EncodeToString(sum[:16])
}
func areaUID(tenant string, a graph.Area) string { return tenant + "|" + a.Key() }

// areaScope is the scope node that carries an area's hygiene time.
func areaScope(a graph.Area) graph.Scope {
	if a.Global() {
		return graph.GlobalScope()
	}
	return graph.ProjectScope(a.ProjectID)
}

func checkTenant(tenant string) error {
	if !graph.ValidToken(tenant) {
		return fmt.Errorf("%w: tenant id %q must be 1-128 characters of [A-Za-z0-9_-]", graph.ErrInvalid, tenant)
	}
	return nil
}

// Read implements graph.Store.
func (s *Store) Read(ctx context.Context, tenant string, fn func(context.Context, graph.ReadTx) error) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return classify("begin read", err)
	}
	defer tx.Rollback()
	if err := fn(ctx, &readTx{tx: tx, tenant: tenant}); err != nil {
		return err
	}
	return classify("end read", tx.Commit())
}

// Write implements graph.Store.
func (s *Store) Write(ctx context.Context, tenant string, scope graph.Scope, fn func(context.Context, graph.WriteTx) error) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	if err := scope.Validate(); err != nil {
		return err
	}
	tx, err := s.writer.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the database write lock
	if err != nil {
		return classify("begin write", err)
	}
	defer tx.Rollback()
	uid := scopeUID(tenant, scope)
	if scope.Level == graph.LevelGlobal {
		if err := ensureScope(ctx, tx, tenant, scope); err != nil {
			return err
		}
	}
	// The scope lock: with one writer at a time it is implied by BEGIN
	// IMMEDIATE, but the touch also proves the scope exists, as in Neo4j.
	res, err := tx.ExecContext(ctx, `UPDATE mem_scopes SET write_seq = write_seq + 1 WHERE uid = ? AND tenant_id = ?`, uid, tenant)
	if err != nil {
		return classify("lock scope", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %s scope %s of tenant %s", graph.ErrScopeNotFound, scope.Level, scope.Key(), tenant)
	}
	if err := fn(ctx, &writeTx{readTx: readTx{tx: tx, tenant: tenant}, scope: scope, uid: uid}); err != nil {
		return err
	}
	return classify("commit", tx.Commit())
}

func ensureScope(ctx context.Context, tx *sql.Tx, tenant string, scope graph.Scope) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO mem_scopes (uid, tenant_id, scope_key, level, project_id, focus, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (uid) DO NOTHING`,
		scopeUID(tenant, scope), tenant, scope.Key(), string(scope.Level), scope.ProjectID, scope.Focus, time.Now().UnixNano())
	return classify("create scope", err)
}

// EnsureProject implements graph.Store.
func (s *Store) EnsureProject(ctx context.Context, tenant, projectID string) error {
	scope := graph.ProjectScope(projectID)
	if err := errors.Join(checkTenant(tenant), scope.Validate()); err != nil {
		return err
	}
	return s.writeFunc(ctx, func(tx *sql.Tx) error { return ensureScope(ctx, tx, tenant, scope) })
}

// EnsureFocusArea implements graph.Store.
func (s *Store) EnsureFocusArea(ctx context.Context, tenant, projectID, focus string) error {
	scope := graph.FocusScope(projectID, focus)
	if err := errors.Join(checkTenant(tenant), scope.Validate()); err != nil {
		return err
	}
	return s.writeFunc(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM mem_scopes WHERE uid = ?`, scopeUID(tenant, graph.ProjectScope(projectID))).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: project %s of tenant %s", graph.ErrScopeNotFound, projectID, tenant)
		}
		if err != nil {
			return classify("find project", err)
		}
		return ensureScope(ctx, tx, tenant, scope)
	})
}

// Link implements graph.Store.
func (s *Store) Link(ctx context.Context, tenant string, rel graph.Rel, fromID, toID string) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	if rel != graph.ConflictsWith {
		return fmt.Errorf("%w: Link writes %s only (SUPERSEDES comes from dedup)", graph.ErrInvalid, graph.ConflictsWith)
	}
	if fromID == toID {
		return fmt.Errorf("%w: a node cannot conflict with itself", graph.ErrInvalid)
	}
	return s.writeFunc(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM mem_nodes WHERE tenant_id = ? AND id IN (?, ?)`, tenant, fromID, toID).Scan(&n); err != nil {
			return classify("find nodes", err)
		}
		if n != 2 {
			return fmt.Errorf("%w: %s or %s is not a node of tenant %s", graph.ErrNotFound, fromID, toID, tenant)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO mem_edges (tenant_id, rel, from_id, to_id, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, tenant, string(rel), fromID, toID, time.Now().UnixNano())
		return classify("link", err)
	})
}

// MarkHygiene implements graph.Store.
func (s *Store) MarkHygiene(ctx context.Context, tenant string, area graph.Area, at time.Time) error {
	if err := errors.Join(checkTenant(tenant), area.Validate()); err != nil {
		return err
	}
	scope := areaScope(area)
	return s.writeFunc(ctx, func(tx *sql.Tx) error {
		if area.Global() {
			if err := ensureScope(ctx, tx, tenant, scope); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE mem_scopes SET last_hygiene_at = ? WHERE uid = ? AND tenant_id = ?`,
			at.UTC().UnixNano(), scopeUID(tenant, scope), tenant)
		if err != nil {
			return classify("mark hygiene", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: project %s of tenant %s", graph.ErrScopeNotFound, area.ProjectID, tenant)
		}
		return nil
	})
}

func (s *Store) writeFunc(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return classify("begin write", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return classify("commit", tx.Commit())
}

// classify wraps err for the port: lock contention, I/O trouble and a
// closed database are transient (graph.ErrUnavailable); the rest is not.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("embedded graph: %s: %w: %w", op, graph.ErrUnavailable, err)
		}
	}
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "database is closed") {
		return fmt.Errorf("embedded graph: %s: %w: %w", op, graph.ErrUnavailable, err)
	}
	return fmt.Errorf("embedded graph: %s: %w", op, err)
}
