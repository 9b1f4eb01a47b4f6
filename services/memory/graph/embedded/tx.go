package embedded

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/praetorhq/praetor/services/memory/graph"
)

// readTx implements graph.ReadTx on a SQLite transaction.
type readTx struct {
	tx     *sql.Tx
	tenant string
}

const nodeCols = `id, kind, level, project_id, focus, title, rationale, entity_name, content_hash, status,
	created_at, last_validated_at, coalesce(superseded_by, '')`

func scanNode(sc interface{ Scan(...any) error }) (graph.Node, error) {
	var (
		n                    graph.Node
		kind, level, status  string
		created              int64
		validated            sql.NullInt64
		projectID, focus     string
		title, rationale, en string
	)
	if err := sc.Scan(&n.ID, &kind, &level, &projectID, &focus, &title, &rationale, &en, &n.ContentHash, &status,
		&created, &validated, &n.SupersededBy); err != nil {
		return graph.Node{}, err
	}
	n.Kind, n.Status = graph.Kind(kind), graph.Status(status)
	n.Scope = graph.Scope{Level: graph.Level(level), ProjectID: projectID, Focus: focus}
	n.Title, n.Rationale, n.EntityName = title, rationale, en
	n.CreatedAt = time.Unix(0, created).UTC()
	if validated.Valid {
		n.LastValidatedAt = time.Unix(0, validated.Int64).UTC()
	}
	return n, nil
}

func (r *readTx) nodes(ctx context.Context, query string, args ...any) ([]graph.Node, error) {
	rows, err := r.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify("query nodes", err)
	}
	defer rows.Close()
	var out []graph.Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, classify("scan node", err)
		}
		out = append(out, n)
	}
	return out, classify("read nodes", rows.Err())
}

func (r *readTx) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := r.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify("query ids", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, classify("scan id", err)
		}
		out = append(out, id)
	}
	return out, classify("read ids", rows.Err())
}

func (r *readTx) Scope(ctx context.Context, projectID, focus string) (graph.ScopeInfo, error) {
	var info graph.ScopeInfo
	if projectID == "" {
		return info, nil
	}
	var hyg sql.NullInt64
	err := r.tx.QueryRowContext(ctx, `SELECT last_hygiene_at FROM mem_scopes WHERE uid = ? AND tenant_id = ?`,
		scopeUID(r.tenant, graph.ProjectScope(projectID)), r.tenant).Scan(&hyg)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return info, nil
	case err != nil:
		return info, classify("find project", err)
	}
	info.ProjectExists = true
	if hyg.Valid {
		info.LastHygieneAt = time.Unix(0, hyg.Int64).UTC()
	}
	if focus == "" {
		return info, nil
	}
	var one int
	err = r.tx.QueryRowContext(ctx, `SELECT 1 FROM mem_scopes WHERE uid = ? AND tenant_id = ?`,
		scopeUID(r.tenant, graph.FocusScope(projectID, focus)), r.tenant).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return info, classify("find focus area", err)
	default:
		info.FocusExists = true
	}
	return info, nil
}

func (r *readTx) Live(ctx context.Context, scope graph.Scope, limit int) ([]graph.Node, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	return r.nodes(ctx, liveQuery, r.tenant, scopeUID(r.tenant, scope), limit)
}

// liveQuery reads the live nodes of a scope, the most recently confirmed
// first, along the index mem_nodes_live_confirmed.
const liveQuery = `SELECT ` + nodeCols + ` FROM mem_nodes n
	WHERE tenant_id = ? AND scope_uid = ? AND superseded_by IS NULL
	  AND NOT EXISTS (SELECT 1 FROM mem_edges e WHERE e.to_id = n.id AND e.rel = 'SUPERSEDES')
	ORDER BY coalesce(last_validated_at, created_at) DESC, id DESC LIMIT ?`

func (r *readTx) Conflicts(ctx context.Context, ids []string) ([]graph.Pair, error) {
	if len(ids) < 2 {
		return nil, nil
	}
	list, _ := json.Marshal(ids)
	rows, err := r.tx.QueryContext(ctx, `SELECT DISTINCT min(from_id, to_id), max(from_id, to_id) FROM mem_edges
		WHERE tenant_id = ? AND rel = 'CONFLICTS_WITH'
		  AND from_id IN (SELECT value FROM json_each(?)) AND to_id IN (SELECT value FROM json_each(?))
		ORDER BY 1, 2`, r.tenant, string(list), string(list))
	if err != nil {
		return nil, classify("query conflicts", err)
	}
	defer rows.Close()
	var out []graph.Pair
	for rows.Next() {
		var p graph.Pair
		if err := rows.Scan(&p.A, &p.B); err != nil {
			return nil, classify("scan conflict", err)
		}
		out = append(out, p)
	}
	return out, classify("read conflicts", rows.Err())
}

func (r *readTx) Node(ctx context.Context, id string) (graph.Node, error) {
	n, err := scanNode(r.tx.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM mem_nodes WHERE tenant_id = ? AND id = ?`, r.tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return graph.Node{}, fmt.Errorf("%w: node %s", graph.ErrNotFound, id)
	}
	if err != nil {
		return graph.Node{}, classify("read node", err)
	}
	return n, nil
}

func (r *readTx) Nodes(ctx context.Context, area graph.Area) ([]graph.Node, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.nodes(ctx, `SELECT `+nodeCols+` FROM mem_nodes WHERE tenant_id = ? AND area_uid = ? ORDER BY created_at, id`,
		r.tenant, areaUID(r.tenant, area))
}

func (r *readTx) Edges(ctx context.Context, area graph.Area, rel graph.Rel) ([]graph.Edge, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	rows, err := r.tx.QueryContext(ctx, `SELECT e.from_id, e.to_id, e.reinstated FROM mem_edges e JOIN mem_nodes n ON n.id = e.from_id
		WHERE e.tenant_id = ? AND n.tenant_id = ? AND e.rel = ? AND n.area_uid = ? ORDER BY e.from_id, e.to_id`,
		r.tenant, r.tenant, string(rel), areaUID(r.tenant, area))
	if err != nil {
		return nil, classify("query edges", err)
	}
	defer rows.Close()
	var out []graph.Edge
	for rows.Next() {
		e := graph.Edge{Rel: rel}
		if err := rows.Scan(&e.From, &e.To, &e.Reinstated); err != nil {
			return nil, classify("scan edge", err)
		}
		out = append(out, e)
	}
	return out, classify("read edges", rows.Err())
}

func (r *readTx) LastHygiene(ctx context.Context, area graph.Area) (time.Time, error) {
	if err := area.Validate(); err != nil {
		return time.Time{}, err
	}
	var hyg sql.NullInt64
	err := r.tx.QueryRowContext(ctx, `SELECT last_hygiene_at FROM mem_scopes WHERE uid = ? AND tenant_id = ?`,
		scopeUID(r.tenant, areaScope(area)), r.tenant).Scan(&hyg)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, classify("read hygiene time", err)
	}
	if !hyg.Valid {
		return time.Time{}, nil
	}
	return time.Unix(0, hyg.Int64).UTC(), nil
}

func (r *readTx) Titles(ctx context.Context, area graph.Area, fn func(graph.TitleRow) error) error {
	if err := area.Validate(); err != nil {
		return err
	}
	rows, err := r.tx.QueryContext(ctx, `SELECT id, kind, title FROM mem_nodes
		WHERE tenant_id = ? AND area_uid = ? AND kind IN ('decision', 'pattern') AND superseded_by IS NULL`,
		r.tenant, areaUID(r.tenant, area))
	if err != nil {
		return classify("query titles", err)
	}
	defer rows.Close()
	for rows.Next() {
		var row graph.TitleRow
		var kind string
		if err := rows.Scan(&row.ID, &kind, &row.Title); err != nil {
			return classify("scan title", err)
		}
		row.Kind = graph.Kind(kind)
		if err := fn(row); err != nil {
			return err
		}
	}
	return classify("read titles", rows.Err())
}

func (r *readTx) Outdated(ctx context.Context, area graph.Area, cutoff time.Time) ([]string, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.ids(ctx, `SELECT id FROM mem_nodes n
		WHERE tenant_id = ? AND area_uid = ? AND kind = 'decision' AND coalesce(last_validated_at, created_at) < ?
		  AND NOT EXISTS (SELECT 1 FROM mem_edges e WHERE e.from_id = n.id AND e.rel = 'SUPERSEDES')
		ORDER BY created_at, id`, r.tenant, areaUID(r.tenant, area), cutoff.UTC().UnixNano())
}

func (r *readTx) StalePatterns(ctx context.Context, area graph.Area, cutoff time.Time) ([]string, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.ids(ctx, `SELECT id FROM mem_nodes
		WHERE tenant_id = ? AND area_uid = ? AND kind = 'pattern' AND coalesce(last_validated_at, created_at) < ?
		ORDER BY created_at, id`, r.tenant, areaUID(r.tenant, area), cutoff.UTC().UnixNano())
}

func (r *readTx) EntityGroups(ctx context.Context, area graph.Area) ([]graph.EntityGroup, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	rows, err := r.tx.QueryContext(ctx, `SELECT entity_key, entity_name, id FROM mem_nodes
		WHERE tenant_id = ? AND area_uid = ? AND kind = 'entity_fact' AND superseded_by IS NULL
		  AND entity_key IN (SELECT entity_key FROM mem_nodes
		      WHERE tenant_id = ? AND area_uid = ? AND kind = 'entity_fact' AND superseded_by IS NULL
		      GROUP BY entity_key HAVING count(*) > 1)
		ORDER BY entity_key, created_at, id`,
		r.tenant, areaUID(r.tenant, area), r.tenant, areaUID(r.tenant, area))
	if err != nil {
		return nil, classify("query entity groups", err)
	}
	defer rows.Close()
	var out []graph.EntityGroup
	last := ""
	for rows.Next() {
		var key, name, id string
		if err := rows.Scan(&key, &name, &id); err != nil {
			return nil, classify("scan entity group", err)
		}
		if len(out) == 0 || key != last {
			out = append(out, graph.EntityGroup{EntityName: name})
			last = key
		}
		g := &out[len(out)-1]
		g.IDs = append(g.IDs, id)
	}
	return out, classify("read entity groups", rows.Err())
}

func (r *readTx) Unresolved(ctx context.Context, area graph.Area) ([]string, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.ids(ctx, `SELECT id FROM mem_nodes WHERE tenant_id = ? AND area_uid = ? AND status IN ('pending_retry', 'failed')
		ORDER BY created_at, id`, r.tenant, areaUID(r.tenant, area))
}

// writeTx implements graph.WriteTx on an IMMEDIATE SQLite transaction.
type writeTx struct {
	readTx
	scope graph.Scope
	uid   string
}

func (w *writeTx) Scope() graph.Scope { return w.scope }

func (w *writeTx) ByContentHash(ctx context.Context, kind graph.Kind, hash string) (graph.Node, bool, error) {
	n, err := scanNode(w.tx.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM mem_nodes
		WHERE tenant_id = ? AND scope_uid = ? AND kind = ? AND content_hash = ?`, w.tenant, w.uid, string(kind), hash))
	if errors.Is(err, sql.ErrNoRows) {
		return graph.Node{}, false, nil
	}
	if err != nil {
		return graph.Node{}, false, classify("find by content hash", err)
	}
	return n, true, nil
}

// ftsQuery quotes every term but the stopwords, so that no character of
// the text is FTS5 syntax, and ORs them (any shared word makes a candidate,
// ranked after) within the live nodes of one scope and kind.
func ftsQuery(scopeToken, text string) string {
	all := graph.SearchTerms(text, 0)
	// Without the stopwords: "the" or "for" match nearly every node of a
	// scope, and the newest maxMatches of those would crowd out an older
	// near-duplicate (a text of stopwords alone keeps them).
	terms := slices.DeleteFunc(slices.Clone(all), graph.Stopword)
	if len(terms) == 0 {
		terms = all
	}
	if len(terms) == 0 {
		return ""
	}
	for i, t := range terms {
		terms[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return `fts_scope : "` + scopeToken + `" AND (` + strings.Join(terms, " OR ") + ")"
}

// maxMatches caps the FTS5 matches Candidates ranks. FTS5's own bm25 needs
// each term's document frequency over the whole index, a scan of every
// tenant's matches per query; ranking the scope's matches here instead
// keeps a write's cost proportional to its scope.
const maxMatches = 500

func (w *writeTx) Candidates(ctx context.Context, kind graph.Kind, text string, limit int) ([]graph.Candidate, error) {
	q := ftsQuery(ftsScope(w.uid, kind), text)
	if q == "" || limit <= 0 {
		return nil, nil
	}
	rows, err := w.tx.QueryContext(ctx, `SELECT n.id, n.title, n.rationale, n.created_at
		FROM (SELECT rowid FROM mem_fts WHERE mem_fts MATCH ? ORDER BY rowid DESC LIMIT ?) f
		JOIN mem_nodes n ON n.seq = f.rowid
		WHERE n.tenant_id = ? AND n.scope_uid = ? AND n.kind = ? AND n.superseded_by IS NULL`,
		q, maxMatches, w.tenant, w.uid, string(kind))
	if err != nil {
		return nil, classify("full-text candidates", err)
	}
	defer rows.Close()
	type scored struct {
		graph.Candidate
		score   int
		created int64
	}
	terms := graph.SearchTerms(text, 0)
	var all []scored
	for rows.Next() {
		var c scored
		var rationale string
		if err := rows.Scan(&c.ID, &c.Title, &rationale, &c.created); err != nil {
			return nil, classify("scan candidate", err)
		}
		c.score = overlap(terms, c.Title)*2 + overlap(terms, rationale)
		all = append(all, c)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read candidates", err)
	}
	// Best match first: shared terms (title counting double), then newest.
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.created, a.created), strings.Compare(a.ID, b.ID))
	})
	out := make([]graph.Candidate, 0, min(limit, len(all)))
	for _, c := range all[:min(limit, len(all))] {
		out = append(out, c.Candidate)
	}
	return out, nil
}

// overlap counts the terms that are words of s.
func overlap(terms []string, s string) int {
	words := map[string]bool{}
	for _, w := range graph.Words(s) {
		words[w] = true
	}
	n := 0
	for _, t := range terms {
		if words[t] {
			n++
		}
	}
	return n
}

func (w *writeTx) Create(ctx context.Context, n graph.Node) error {
	if err := graph.CheckNode(n, w.scope); err != nil {
		return err
	}
	var validated any
	if !n.LastValidatedAt.IsZero() {
		validated = n.LastValidatedAt.UTC().UnixNano()
	}
	_, err := w.tx.ExecContext(ctx, `INSERT INTO mem_nodes (id, tenant_id, kind, level, project_id, focus, scope_uid, area_uid,
		title, rationale, entity_name, entity_key, content_hash, status, created_at, last_validated_at, fts_scope)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID, w.tenant, string(n.Kind), string(n.Scope.Level), n.Scope.ProjectID, n.Scope.Focus, w.uid,
		areaUID(w.tenant, n.Scope.Area()), n.Title, n.Rationale, n.EntityName, graph.NormalizeEntity(n.EntityName),
		n.ContentHash, string(cmpStatus(n.Status)), n.CreatedAt.UTC().UnixNano(), validated, liveFTSScope(w.uid, n.Kind))
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
		if strings.Contains(se.Error(), "mem_nodes.id") {
			return fmt.Errorf("%w: node id %s exists", graph.ErrInvalid, n.ID)
		}
		return fmt.Errorf("embedded graph: create %s: %w: %w", n.ID, graph.ErrDuplicateContent, err)
	}
	return classify("create node", err)
}

func cmpStatus(s graph.Status) graph.Status {
	if s == "" {
		return graph.StatusSaved
	}
	return s
}

func (w *writeTx) Supersede(ctx context.Context, newID, oldID string) error {
	if newID == oldID {
		return fmt.Errorf("%w: a node cannot supersede itself", graph.ErrInvalid)
	}
	if err := w.inScope(ctx, newID); err != nil {
		return err
	}
	res, err := w.tx.ExecContext(ctx, `UPDATE mem_nodes SET superseded_by = ?, fts_scope = ''
		WHERE tenant_id = ? AND scope_uid = ? AND id = ? AND superseded_by IS NULL`, newID, w.tenant, w.uid, oldID)
	if err != nil {
		return classify("supersede", err)
	}
	if rows, _ := res.RowsAffected(); rows == 0 {
		// Not live, or not a node of this scope (as the Neo4j store says).
		if err := w.inScope(ctx, oldID); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", graph.ErrNotLive, oldID)
	}
	_, err = w.tx.ExecContext(ctx, `INSERT INTO mem_edges (tenant_id, rel, from_id, to_id, created_at) VALUES (?, 'SUPERSEDES', ?, ?, ?)`,
		w.tenant, newID, oldID, time.Now().UnixNano())
	return classify("supersede edge", err)
}

// liveFTSScope is the fts_scope of a live node of kind: its scope's token
// for the kinds dedup searches (decisions, patterns), none for the others.
func liveFTSScope(scopeUID string, kind graph.Kind) string {
	if kind == graph.Decision || kind == graph.Pattern {
		return ftsScope(scopeUID, kind)
	}
	return ""
}

func (w *writeTx) Reinstate(ctx context.Context, id string, at time.Time) (graph.Node, error) {
	if at.IsZero() {
		return graph.Node{}, fmt.Errorf("%w: reinstating %s needs the time of its write", graph.ErrInvalid, id)
	}
	old, head, err := graph.ChainHead(ctx, id, w.scopeNode)
	if err != nil {
		return graph.Node{}, err
	}
	for _, step := range []struct {
		op, query string
		args      []any
	}{
		// What superseded old no longer does; left, it would still hide old
		// from Live.
		{"remove the supersession of the reinstated node", `DELETE FROM mem_edges WHERE tenant_id = ? AND rel = 'SUPERSEDES' AND to_id = ?`,
			[]any{w.tenant, old.ID}},
		{"reinstate", `UPDATE mem_nodes SET superseded_by = NULL, fts_scope = ?, last_validated_at = ?
			WHERE tenant_id = ? AND scope_uid = ? AND id = ?`,
			[]any{liveFTSScope(w.uid, old.Kind), at.UTC().UnixNano(), w.tenant, w.uid, old.ID}},
		{"supersede the head", `UPDATE mem_nodes SET superseded_by = ?, fts_scope = '' WHERE tenant_id = ? AND scope_uid = ? AND id = ?`,
			[]any{old.ID, w.tenant, w.uid, head.ID}},
		{"reinstatement edge", `INSERT INTO mem_edges (tenant_id, rel, from_id, to_id, created_at, reinstated) VALUES (?, 'SUPERSEDES', ?, ?, ?, 1)
			ON CONFLICT (rel, from_id, to_id) DO UPDATE SET reinstated = 1, created_at = excluded.created_at`,
			[]any{w.tenant, old.ID, head.ID, time.Now().UnixNano()}},
	} {
		if _, err := w.tx.ExecContext(ctx, step.query, step.args...); err != nil {
			return graph.Node{}, classify(step.op, err)
		}
	}
	head.SupersededBy = old.ID
	return head, nil
}

// scopeNode reads the node id of this transaction's scope, and reports
// whether there is one.
func (w *writeTx) scopeNode(ctx context.Context, id string) (graph.Node, bool, error) {
	n, err := scanNode(w.tx.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM mem_nodes WHERE tenant_id = ? AND scope_uid = ? AND id = ?`,
		w.tenant, w.uid, id))
	if errors.Is(err, sql.ErrNoRows) {
		return graph.Node{}, false, nil
	}
	if err != nil {
		return graph.Node{}, false, classify("read node", err)
	}
	return n, true, nil
}

// inScope returns graph.ErrNotFound when id is no node of this
// transaction's scope.
func (w *writeTx) inScope(ctx context.Context, id string) error {
	var n int
	if err := w.tx.QueryRowContext(ctx, `SELECT count(*) FROM mem_nodes WHERE tenant_id = ? AND scope_uid = ? AND id = ?`,
		w.tenant, w.uid, id).Scan(&n); err != nil {
		return classify("find node", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: node %s in scope %s", graph.ErrNotFound, id, w.scope)
	}
	return nil
}
