package neo4j

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/config"

	"github.com/praetorhq/praetor/internal/redact"
	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
)

// Config configures the Neo4j graph store.
type Config struct {
	// URI is the Bolt URI, e.g. bolt://127.0.0.1:7687 or neo4j://host.
	// Required.
	URI string
	// User and Password authenticate; an empty Password connects without
	// authentication (a server with auth disabled).
	User, Password string
	// Database is the database name. Default: the server's default database.
	Database string
	// MaxTransactionRetryTime bounds the driver's own retries of a transaction
	// function on transient errors. Default 3s: the write engine has its own
	// retry loop, so the driver only needs to ride out short blips.
	MaxTransactionRetryTime time.Duration
	// ConnectTimeout bounds opening one connection. Default 2s.
	ConnectTimeout time.Duration
	// AcquireTimeout bounds waiting for a connection from the pool. Default 10s.
	AcquireTimeout time.Duration
	// MaxPoolSize is the connection pool size. Default 100.
	MaxPoolSize int
	// Logger receives lifecycle messages. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.MaxTransactionRetryTime = cmp.Or(c.MaxTransactionRetryTime, 3*time.Second)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, 2*time.Second)
	c.AcquireTimeout = cmp.Or(c.AcquireTimeout, 10*time.Second)
	c.MaxPoolSize = cmp.Or(c.MaxPoolSize, 100)
	c.User = cmp.Or(c.User, "neo4j")
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if c.URI == "" {
		return errors.New("neo4j graph: Config.URI is required (e.g. bolt://127.0.0.1:7687; scripts/neo4j.sh starts one)")
	}
	if c.MaxPoolSize < 1 {
		return fmt.Errorf("neo4j graph: MaxPoolSize is %d; it must be at least 1", c.MaxPoolSize)
	}
	return nil
}

// Store is the Neo4j graph store. It is safe for concurrent use.
type Store struct {
	cfg    Config
	driver neo4j.DriverWithContext
	stats  struct {
		readQueries, readUpdates, writeQueries atomic.Int64
	}
	closed atomic.Bool
}

var _ graph.Store = (*Store)(nil)

// Open connects to Neo4j and creates the schema (constraints, indexes,
// full-text indexes) if it is missing, waits until the indexes are online,
// and recomputes the content hashes an older version stored differently
// (see EnsureSchema). A server that does not answer fails with
// graph.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	auth := neo4j.NoAuth()
	if cfg.Password != "" {
		auth = neo4j.BasicAuth(cfg.User, cfg.Password, "")
	}
	drv, err := neo4j.NewDriverWithContext(cfg.URI, auth, func(c *config.Config) {
		c.MaxTransactionRetryTime = cfg.MaxTransactionRetryTime
		c.SocketConnectTimeout = cfg.ConnectTimeout
		c.ConnectionAcquisitionTimeout = cfg.AcquireTimeout
		c.MaxConnectionPoolSize = cfg.MaxPoolSize
	})
	if err != nil {
		return nil, fmt.Errorf("neo4j graph: driver for %s: %w", redact.URL(cfg.URI), redact.Error(err, cfg.URI))
	}
	s := &Store{cfg: cfg, driver: drv}
	if err := s.EnsureSchema(ctx); err != nil {
		_ = drv.Close(ctx)
		return nil, err
	}
	cfg.Logger.Debug("neo4j graph store open", "uri", redact.URL(cfg.URI))
	return s, nil
}

// Close closes the driver; a second Close does nothing.
func (s *Store) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.driver.Close(ctx)
}

// Driver is the underlying driver, for tools (loaders, benchmarks) that
// need raw Cypher.
func (s *Store) Driver() neo4j.DriverWithContext { return s.driver }

// Stats counts the queries the store ran and the updates Neo4j reported for
// them, from the result summaries.
type Stats struct {
	// ReadQueries is the number of queries run in read transactions.
	ReadQueries int64
	// ReadUpdates sums the update counters (nodes, relationships,
	// properties, labels created, deleted or set) of those queries; it stays
	// zero because read transactions never write.
	ReadUpdates int64
	// WriteQueries is the number of queries run in write transactions.
	WriteQueries int64
}

// Stats returns the counters since Open.
func (s *Store) Stats() Stats {
	return Stats{
		ReadQueries:  s.stats.readQueries.Load(),
		ReadUpdates:  s.stats.readUpdates.Load(),
		WriteQueries: s.stats.writeQueries.Load(),
	}
}

// schema is applied by EnsureSchema; every statement is idempotent.
var schema = []string{
	`CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (n:Memory) REQUIRE n.id IS UNIQUE`,
	// The content key is scope uid (tenant|scope key) | kind | content hash.
	`CREATE CONSTRAINT memory_content_key IF NOT EXISTS FOR (n:Memory) REQUIRE n.content_key IS UNIQUE`,
	`CREATE CONSTRAINT scope_uid IF NOT EXISTS FOR (s:Scope) REQUIRE s.uid IS UNIQUE`,
	`CREATE INDEX memory_scope_created IF NOT EXISTS FOR (n:Memory) ON (n.scope_uid, n.created_at)`,
	// With memory_scope_created, the order of Live (see liveCypher).
	`CREATE INDEX memory_scope_validated IF NOT EXISTS FOR (n:Memory) ON (n.scope_uid, n.last_validated_at)`,
	`CREATE INDEX memory_area_kind IF NOT EXISTS FOR (n:Memory) ON (n.area_uid, n.kind)`,
	`CREATE INDEX memory_tenant IF NOT EXISTS FOR (n:Memory) ON (n.tenant_id)`,
	`CREATE INDEX scope_tenant IF NOT EXISTS FOR (s:Scope) ON (s.tenant_id)`,
	// ft_scope is a single-token hash of the scope uid, present only while
	// the node is live: a full-text query can then ask for one scope's live
	// nodes in Lucene itself, instead of filtering other tenants' hits.
	`CREATE FULLTEXT INDEX decision_fulltext IF NOT EXISTS FOR (n:Decision) ON EACH [n.title, n.rationale, n.ft_scope]`,
	`CREATE FULLTEXT INDEX pattern_fulltext IF NOT EXISTS FOR (n:Pattern) ON EACH [n.title, n.rationale, n.ft_scope]`,
}

// EnsureSchema creates the constraints and indexes that are missing, waits
// for them to be online, and brings the content hashes and entity keys of
// the nodes up to date (rehash). Open calls it; every step is idempotent,
// and cheap when there is nothing to do.
func (s *Store) EnsureSchema(ctx context.Context) error {
	for _, stmt := range schema {
		if err := s.ensure(ctx, stmt); err != nil {
			return classify("schema", err)
		}
	}
	if _, err := neo4j.ExecuteQuery(ctx, s.driver, `CALL db.awaitIndexes(300)`, nil, neo4j.EagerResultTransformer, s.queryConfig()); err != nil {
		return classify("await indexes", err)
	}
	n, err := s.rehash(ctx, "")
	if err != nil {
		return err
	}
	if n > 0 {
		s.cfg.Logger.Info("neo4j graph: content hashes recomputed", "uri", redact.URL(s.cfg.URI), "nodes", n)
	}
	return nil
}

// signRunes are graph.SignRunes, one string each, for the Cypher of rehash.
var signRunes = strings.Split(graph.SignRunes, "")

const (
	// rehashScopes finds the scopes (of one tenant, or of all when $tenant
	// is empty) written since rehash last checked them, or by a version
	// that does not keep rehashed_seq, and marks them checked. The SET
	// takes their write locks: no node is added to them until rehash
	// commits.
	rehashScopes = `MATCH (s:Scope) WHERE ($tenant = '' OR s.tenant_id = $tenant)
		  AND coalesce(s.rehashed_seq, -1) <> coalesce(s.write_seq, 0)
		SET s.rehashed_seq = coalesce(s.write_seq, 0)
		RETURN s.uid AS uid`
	// rehashCandidates finds the memory nodes of those scopes with a sign
	// in their title, rationale or entity name (by the index on scope_uid
	// and created_at).
	rehashCandidates = `MATCH (n:Memory) WHERE n.scope_uid IN $scopes AND n.created_at IS NOT NULL AND n.kind IS NOT NULL
		  AND any(c IN $signs WHERE n.title CONTAINS c OR n.rationale CONTAINS c OR coalesce(n.entity_name, '') CONTAINS c)
		RETURN n.id AS id, n.tenant_id AS tenant, n.scope_uid AS scope, n.kind AS kind, n.title AS title,
			n.rationale AS rationale, n.entity_name AS entity_name, n.content_key AS content_key, n.entity_key AS entity_key`
)

// rehash recomputes the content hash (dedup.ContentHash), content key and
// entity key (graph.NormalizeEntity) of the nodes whose stored ones are not
// the current definitions, in one transaction, and returns how many it
// changed. The definitions changed once, when the signs that end a name
// began to count ("C++" is not "C"): a node stored before, with '+' or '#'
// in its title, rationale or entity name, may have the hash and keys of its
// content without the signs.
//
// It checks only the scopes whose nodes may have such hashes. A scope's
// rehashed_seq is the write_seq (the count of its write transactions) up to
// which its nodes are known to be current; the lock of every write keeps it
// level with write_seq when it was, and scopes are created with it. A
// scope without it (older than this code) or behind write_seq (written by
// an older version since) is checked: its nodes with a sign are read, and
// those whose values differ are written. A database that is up to date
// costs one pass over the Scope nodes, a second run changes nothing, and
// nodes that a replica of an older version writes during a rolling upgrade
// are checked at the next start. (Over every Memory node at every start,
// the CONTAINS filter would cost about a second per 100,000 nodes.)
// Replicas starting at once queue on the scope locks and write the same
// values.
//
// Two nodes cannot come to share a content key: the signs only add to the
// words of the old form, so content that is the same with them was the same
// without them, and the old key kept it once per scope and kind. Should the
// database hold such a pair anyway (hashes written by something else than
// ContentHash), rehash fails with graph.ErrDuplicateContent naming both, and
// changes nothing.
//
// tenant limits the work to one tenant when not empty (tests, which share a
// server); Open does all.
func (s *Store) rehash(ctx context.Context, tenant string) (int, error) {
	sess := s.session(ctx, neo4j.AccessModeWrite)
	defer sess.Close(ctx)
	changed, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		res, err := tx.Run(ctx, rehashScopes, map[string]any{"tenant": tenant})
		if err != nil {
			return 0, err
		}
		recs, err := res.Collect(ctx)
		if err != nil || len(recs) == 0 {
			return 0, err
		}
		scopes := make([]any, len(recs))
		for i, r := range recs {
			scopes[i] = r.Values[0]
		}
		res, err = tx.Run(ctx, rehashCandidates, map[string]any{"scopes": scopes, "signs": signRunes})
		if err != nil {
			return 0, err
		}
		var todo, moving []any
		byKey := map[string]string{} // new content key -> node id
		for res.Next(ctx) {
			m := res.Record().AsMap()
			str := func(k string) string { v, _ := m[k].(string); return v }
			id, kind, name := str("id"), graph.Kind(str("kind")), str("entity_name")
			hash := dedup.ContentHash(kind, name, str("title"), str("rationale"))
			key := contentKey(str("scope"), kind, hash)
			var entityKey any // only entity facts have one
			if kind == graph.EntityFact {
				entityKey = graph.NormalizeEntity(name)
			}
			if other, dup := byKey[key]; dup {
				return 0, sameContent(kind, id, other, str("tenant"), key)
			}
			byKey[key] = id
			if key == str("content_key") && entityKey == m["entity_key"] {
				continue
			}
			todo = append(todo, map[string]any{"id": id, "tenant": str("tenant"), "kind": string(kind),
				"hash": hash, "key": key, "entity_key": entityKey})
			moving = append(moving, id)
		}
		if err := res.Err(); err != nil {
			return 0, err
		}
		if len(todo) == 0 {
			return 0, nil
		}
		// A node without signs (the candidates were checked above) that
		// holds a new key.
		res, err = tx.Run(ctx, `UNWIND $rows AS r
			MATCH (m:Memory {content_key: r.key}) WHERE NOT m.id IN $moving
			RETURN r.id AS id, m.id AS other, r.kind AS kind, r.tenant AS tenant, r.key AS key LIMIT 1`,
			map[string]any{"rows": todo, "moving": moving})
		if err != nil {
			return 0, err
		}
		if res.Next(ctx) {
			m := res.Record().AsMap()
			str := func(k string) string { v, _ := m[k].(string); return v }
			return 0, sameContent(graph.Kind(str("kind")), str("id"), str("other"), str("tenant"), str("key"))
		}
		if err := res.Err(); err != nil {
			return 0, err
		}
		res, err = tx.Run(ctx, `UNWIND $rows AS r
			MATCH (n:Memory {id: r.id}) WHERE n.tenant_id = r.tenant
			SET n.content_hash = r.hash, n.content_key = r.key, n.entity_key = r.entity_key`,
			map[string]any{"rows": todo})
		if err != nil {
			return 0, err
		}
		if _, err := res.Consume(ctx); err != nil {
			return 0, err
		}
		return len(todo), nil
	})
	if err != nil {
		return 0, classify("rehash", err)
	}
	return changed.(int), nil
}

// sameContent is the error of rehash when two nodes would share a content
// key.
func sameContent(kind graph.Kind, id, other, tenant, key string) error {
	return fmt.Errorf("neo4j graph: rehash: %s %s and %s of tenant %s hold the same content once signs count "+
		"(content key %s); a scope holds each content once, so one of them must go before the store can open: %w",
		kind, id, other, tenant, key, graph.ErrDuplicateContent)
}

// ensure runs a schema statement. IF NOT EXISTS does not make two at once
// safe: when another process (a second replica starting, another test)
// creates the same rule between the server's check and its own creation,
// the server answers that an equivalent rule exists. Run again, the
// statement finds it.
func (s *Store) ensure(ctx context.Context, stmt string) error {
	for attempt := 1; ; attempt++ {
		_, err := neo4j.ExecuteQuery(ctx, s.driver, stmt, nil, neo4j.EagerResultTransformer, s.queryConfig())
		if err == nil || attempt == 3 || !schemaRuleExists(err) {
			return err
		}
	}
}

// schemaRuleExists reports whether err is the server finding that a schema
// rule being created exists (EquivalentSchemaRuleAlreadyExists,
// IndexAlreadyExists, ConstraintAlreadyExists, ...).
func schemaRuleExists(err error) bool {
	var dbErr *neo4j.Neo4jError
	return errors.As(err, &dbErr) && strings.HasPrefix(dbErr.Code, "Neo.ClientError.Schema.") &&
		strings.HasSuffix(dbErr.Code, "AlreadyExists")
}

func (s *Store) queryConfig() neo4j.ExecuteQueryConfigurationOption {
	return neo4j.ExecuteQueryWithDatabase(s.cfg.Database)
}

// readFetchSize is how many records a read asks the server for at a time:
// hygiene streams every title of an area, and the driver's default of 1000
// would make that a hundred round trips per 100,000 nodes.
const readFetchSize = 20000

func (s *Store) session(ctx context.Context, mode neo4j.AccessMode) neo4j.SessionWithContext {
	cfg := neo4j.SessionConfig{AccessMode: mode, DatabaseName: s.cfg.Database}
	if mode == neo4j.AccessModeRead {
		cfg.FetchSize = readFetchSize
	}
	return s.driver.NewSession(ctx, cfg)
}

func scopeUID(tenant string, sc graph.Scope) string { return tenant + "|" + sc.Key() }
func areaUID(tenant string, a graph.Area) string    { return tenant + "|" + a.Key() }

// ftScope is the full-text token of a scope: letters and digits only, so
// Lucene's standard analyzer keeps it whole.
func ftScope(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return "s" + hex.EncodeToString(sum[:16])
}

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

// Read implements graph.Store with ExecuteRead: a read-mode session, which
// Neo4j refuses to write in.
func (s *Store) Read(ctx context.Context, tenant string, fn func(context.Context, graph.ReadTx) error) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	sess := s.session(ctx, neo4j.AccessModeRead)
	defer sess.Close(ctx)
	_, err := sess.ExecuteRead(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		return nil, fn(ctx, &readTx{tx: tx, tenant: tenant, s: s})
	})
	return classify("read", err)
}

// Write implements graph.Store with ExecuteWrite. Its first statement sets a
// property of the scope node, which takes that node's exclusive lock until
// the transaction ends: writers of one scope queue there, and everything fn
// reads after it (hash lookup, full-text candidates) stays true until commit.
func (s *Store) Write(ctx context.Context, tenant string, scope graph.Scope, fn func(context.Context, graph.WriteTx) error) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	if err := scope.Validate(); err != nil {
		return err
	}
	uid := scopeUID(tenant, scope)
	sess := s.session(ctx, neo4j.AccessModeWrite)
	defer sess.Close(ctx)
	_, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		w := &writeTx{readTx: readTx{tx: tx, tenant: tenant, s: s, write: true}, scope: scope, uid: uid}
		if err := w.lock(ctx); err != nil {
			return nil, err
		}
		return nil, fn(ctx, w)
	})
	return classify("write", err)
}

// lockCypher takes the scope node's write lock; for the global scope it
// creates the node first (MERGE is safe under the uid uniqueness constraint).
// It counts the write in write_seq, and keeps rehashed_seq level with it
// when it was: this version writes current content hashes (see rehash).
const (
	lockScopeCypher = `MATCH (s:Scope {uid: $uid}) WHERE s.tenant_id = $tenant
		` + countWrite
	lockGlobalCypher = `MERGE (s:Scope {uid: $uid})
		ON CREATE SET s:Global, s.tenant_id = $tenant, s.scope_key = 'g', s.level = 'global', s.project_id = '', s.focus = '',
			s.created_at = datetime(), s.rehashed_seq = 0
		WITH s WHERE s.tenant_id = $tenant
		` + countWrite
	countWrite = `WITH s, coalesce(s.write_seq, 0) AS seq
		SET s.write_seq = seq + 1, s.rehashed_seq = CASE WHEN s.rehashed_seq = seq THEN seq + 1 ELSE s.rehashed_seq END
		RETURN s.uid AS uid`
)

func (s *Store) writeQuery(ctx context.Context, cypher string, params map[string]any) ([]*neo4j.Record, error) {
	sess := s.session(ctx, neo4j.AccessModeWrite)
	defer sess.Close(ctx)
	recs, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		res, err := tx.Run(ctx, cypher, params)
		if err != nil {
			return nil, err
		}
		s.stats.writeQueries.Add(1)
		return res.Collect(ctx)
	})
	if err != nil {
		return nil, err
	}
	return recs.([]*neo4j.Record), nil
}

// EnsureProject implements graph.Store.
func (s *Store) EnsureProject(ctx context.Context, tenant, projectID string) error {
	sc := graph.ProjectScope(projectID)
	if err := errors.Join(checkTenant(tenant), sc.Validate()); err != nil {
		return err
	}
	_, err := s.writeQuery(ctx, `MERGE (p:Scope {uid: $uid})
		ON CREATE SET p:Project, p.tenant_id = $tenant, p.scope_key = $key, p.level = 'project',
			p.project_id = $project, p.focus = '', p.created_at = datetime(), p.rehashed_seq = 0`,
		map[string]any{"uid": scopeUID(tenant, sc), "tenant": tenant, "key": sc.Key(), "project": projectID})
	return classify("ensure project", err)
}

// EnsureFocusArea implements graph.Store.
func (s *Store) EnsureFocusArea(ctx context.Context, tenant, projectID, focus string) error {
	sc := graph.FocusScope(projectID, focus)
	if err := errors.Join(checkTenant(tenant), sc.Validate()); err != nil {
		return err
	}
	recs, err := s.writeQuery(ctx, `MATCH (p:Project {uid: $puid}) WHERE p.tenant_id = $tenant
		MERGE (f:Scope {uid: $uid})
		ON CREATE SET f:FocusArea, f.tenant_id = $tenant, f.scope_key = $key, f.level = 'focus',
			f.project_id = $project, f.focus = $focus, f.created_at = datetime(), f.rehashed_seq = 0
		MERGE (f)-[:FOCUS_OF]->(p)
		RETURN f.uid AS uid`,
		map[string]any{"puid": scopeUID(tenant, graph.ProjectScope(projectID)), "uid": scopeUID(tenant, sc),
			"tenant": tenant, "key": sc.Key(), "project": projectID, "focus": focus})
	if err != nil {
		return classify("ensure focus area", err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("%w: project %s of tenant %s", graph.ErrScopeNotFound, projectID, tenant)
	}
	return nil
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
	recs, err := s.writeQuery(ctx, `MATCH (a:Memory {id: $from}) WHERE a.tenant_id = $tenant
		MATCH (b:Memory {id: $to}) WHERE b.tenant_id = $tenant
		MERGE (a)-[r:CONFLICTS_WITH]->(b) ON CREATE SET r.tenant_id = $tenant, r.created_at = datetime()
		RETURN a.id AS id`, map[string]any{"from": fromID, "to": toID, "tenant": tenant})
	if err != nil {
		return classify("link", err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("%w: %s or %s is not a node of tenant %s", graph.ErrNotFound, fromID, toID, tenant)
	}
	return nil
}

// MarkHygiene implements graph.Store.
func (s *Store) MarkHygiene(ctx context.Context, tenant string, area graph.Area, at time.Time) error {
	if err := errors.Join(checkTenant(tenant), area.Validate()); err != nil {
		return err
	}
	sc := areaScope(area)
	params := map[string]any{"uid": scopeUID(tenant, sc), "tenant": tenant, "at": at.UTC()}
	cypher := `MATCH (s:Scope {uid: $uid}) WHERE s.tenant_id = $tenant SET s.last_hygiene_at = $at RETURN s.uid AS uid`
	if area.Global() {
		cypher = `MERGE (s:Scope {uid: $uid})
			ON CREATE SET s:Global, s.tenant_id = $tenant, s.scope_key = 'g', s.level = 'global', s.project_id = '', s.focus = '',
				s.created_at = datetime(), s.rehashed_seq = 0
			WITH s WHERE s.tenant_id = $tenant SET s.last_hygiene_at = $at RETURN s.uid AS uid`
	}
	recs, err := s.writeQuery(ctx, cypher, params)
	if err != nil {
		return classify("mark hygiene", err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("%w: project %s of tenant %s", graph.ErrScopeNotFound, area.ProjectID, tenant)
	}
	return nil
}

// Neo4j status codes the adapter reacts to.
const codeConstraintFailed = "Neo.ClientError.Schema.ConstraintValidationFailed"

// classify wraps err for the port. Errors of the port pass unchanged;
// connectivity trouble and Neo4j's transient errors become
// graph.ErrUnavailable; a violated uniqueness constraint becomes
// graph.ErrDuplicateContent.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, own := range []error{graph.ErrInvalid, graph.ErrNotFound, graph.ErrScopeNotFound, graph.ErrDuplicateContent, graph.ErrNotLive, graph.ErrNoLiveHead, graph.ErrUnavailable} {
		if errors.Is(err, own) {
			return err
		}
	}
	var (
		conn  *neo4j.ConnectivityError
		limit *neo4j.TransactionExecutionLimit
		dbErr *neo4j.Neo4jError
		netE  net.Error
	)
	switch {
	case errors.As(err, &dbErr) && dbErr.Code == codeConstraintFailed:
		return fmt.Errorf("neo4j graph: %s: %w: %w", op, graph.ErrDuplicateContent, err)
	case errors.As(err, &dbErr) && (dbErr.IsRetriable() || strings.HasPrefix(dbErr.Code, "Neo.TransientError.")):
		return fmt.Errorf("neo4j graph: %s: %w: %w", op, graph.ErrUnavailable, err)
	case errors.As(err, &conn), errors.As(err, &limit), errors.As(err, &netE):
		return fmt.Errorf("neo4j graph: %s: %w: %w", op, graph.ErrUnavailable, err)
	}
	return fmt.Errorf("neo4j graph: %s: %w", op, err)
}
