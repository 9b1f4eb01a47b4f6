package neo4j

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/praetorhq/praetor/services/memory/graph"
)

// readTx implements graph.ReadTx on a managed transaction.
type readTx struct {
	tx     neo4j.ManagedTransaction
	tenant string
	s      *Store
	write  bool // inside a write transaction (stats only)
}

// nodeProjection is what every node read returns.
const nodeProjection = `n {.id, .kind, .level, .project_id, .focus, .title, .rationale, .entity_name,
	.content_hash, .status, .created_at, .last_validated_at, .superseded_by}`

// run runs one query and streams its records to fn, then reads the summary
// for the stats.
func (r *readTx) run(ctx context.Context, cypher string, params map[string]any, fn func(*neo4j.Record) error) error {
	params["tenant"] = r.tenant
	res, err := r.tx.Run(ctx, cypher, params)
	if err != nil {
		return err
	}
	for res.Next(ctx) {
		if err := fn(res.Record()); err != nil {
			return err
		}
	}
	if err := res.Err(); err != nil {
		return err
	}
	sum, err := res.Consume(ctx)
	if err != nil {
		return err
	}
	if r.write {
		r.s.stats.writeQueries.Add(1)
		return nil
	}
	r.s.stats.readQueries.Add(1)
	c := sum.Counters()
	if n := c.NodesCreated() + c.NodesDeleted() + c.RelationshipsCreated() + c.RelationshipsDeleted() +
		c.PropertiesSet() + c.LabelsAdded() + c.LabelsRemoved(); n > 0 || c.ContainsUpdates() {
		r.s.stats.readUpdates.Add(int64(max(n, 1)))
	}
	return nil
}

func (r *readTx) nodes(ctx context.Context, cypher string, params map[string]any) ([]graph.Node, error) {
	var out []graph.Node
	err := r.run(ctx, cypher, params, func(rec *neo4j.Record) error {
		n, err := toNode(rec.Values[0])
		if err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	return out, err
}

func (r *readTx) ids(ctx context.Context, cypher string, params map[string]any) ([]string, error) {
	out := []string{}
	err := r.run(ctx, cypher, params, func(rec *neo4j.Record) error {
		id, _ := rec.Values[0].(string)
		out = append(out, id)
		return nil
	})
	return out, err
}

func toNode(v any) (graph.Node, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return graph.Node{}, fmt.Errorf("neo4j graph: node projection is %T, want a map", v)
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	tm := func(k string) time.Time {
		switch t := m[k].(type) {
		case time.Time:
			return t.UTC()
		case neo4j.LocalDateTime:
			return t.Time().UTC()
		}
		return time.Time{}
	}
	return graph.Node{
		ID:   str("id"),
		Kind: graph.Kind(str("kind")),
		Scope: graph.Scope{
			Level: graph.Level(str("level")), ProjectID: str("project_id"), Focus: str("focus"),
		},
		Title:           str("title"),
		Rationale:       str("rationale"),
		EntityName:      str("entity_name"),
		ContentHash:     str("content_hash"),
		Status:          graph.Status(str("status")),
		CreatedAt:       tm("created_at"),
		LastValidatedAt: tm("last_validated_at"),
		SupersededBy:    str("superseded_by"),
	}, nil
}

func (r *readTx) Scope(ctx context.Context, projectID, focus string) (graph.ScopeInfo, error) {
	var info graph.ScopeInfo
	if projectID == "" {
		return info, nil
	}
	fuid := ""
	if focus != "" {
		fuid = scopeUID(r.tenant, graph.FocusScope(projectID, focus))
	}
	err := r.run(ctx, `OPTIONAL MATCH (p:Scope {uid: $puid}) WHERE p.tenant_id = $tenant
		OPTIONAL MATCH (f:Scope {uid: $fuid}) WHERE f.tenant_id = $tenant
		RETURN p IS NOT NULL AS project, p.last_hygiene_at AS hygiene, f IS NOT NULL AS focus`,
		map[string]any{"puid": scopeUID(r.tenant, graph.ProjectScope(projectID)), "fuid": fuid},
		func(rec *neo4j.Record) error {
			info.ProjectExists, _ = rec.Values[0].(bool)
			if t, ok := rec.Values[1].(time.Time); ok {
				info.LastHygieneAt = t.UTC()
			}
			info.FocusExists, _ = rec.Values[2].(bool)
			return nil
		})
	if !info.ProjectExists {
		info.FocusExists = false
	}
	return info, err
}

func (r *readTx) Live(ctx context.Context, scope graph.Scope, limit int) ([]graph.Node, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	return r.nodes(ctx, liveCypher, map[string]any{"scope": scopeUID(r.tenant, scope), "limit": int64(limit)})
}

// liveCypher reads the live nodes of a scope, the most recently confirmed
// first: by coalesce(last_validated_at, created_at). Neo4j indexes no
// expression, and sorting one reads every node of the scope; so each of two
// composite indexes gives the scope's nodes in an order, the filters check
// them until limit pass, a handful of entries a branch, and the answer is
// the top limit of the two branches:
//   - by created_at, the nodes never confirmed or confirmed since they were
//     created: each ranks at least as high by confirmation as by creation,
//     so the limit newest hold every such node of the answer (a node
//     "confirmed" before it was created would take the place of one);
//   - by last_validated_at, the nodes ever confirmed (patterns, reinstated
//     nodes), which rank by it.
//
// The hints make each branch a seek of the scope in its index: left to its
// estimates, the planner may seek the tenant's nodes and sort them, or scan
// an index from its end through every scope after this one. It takes the
// order from the index only when ORDER BY names both of its properties, and
// no tie-breaker can follow without a sort; each ORDER BY comes before the
// projection, which shadows n.
const liveCypher = `CALL {
		MATCH (n:Memory) USING INDEX SEEK n:Memory(scope_uid, created_at)
		WHERE n.scope_uid = $scope AND n.created_at IS NOT NULL AND n.tenant_id = $tenant
		  AND n.superseded_by IS NULL AND NOT EXISTS { (:Memory)-[:SUPERSEDES]->(n) }
		  AND coalesce(n.last_validated_at, n.created_at) >= n.created_at
		WITH n ORDER BY n.scope_uid DESC, n.created_at DESC LIMIT $limit
		RETURN n
	UNION
		MATCH (n:Memory) USING INDEX SEEK n:Memory(scope_uid, last_validated_at)
		WHERE n.scope_uid = $scope AND n.last_validated_at IS NOT NULL AND n.tenant_id = $tenant
		  AND n.superseded_by IS NULL AND NOT EXISTS { (:Memory)-[:SUPERSEDES]->(n) }
		WITH n ORDER BY n.scope_uid DESC, n.last_validated_at DESC LIMIT $limit
		RETURN n
	}
	WITH n ORDER BY coalesce(n.last_validated_at, n.created_at) DESC, n.id DESC LIMIT $limit
	RETURN ` + nodeProjection

func (r *readTx) Conflicts(ctx context.Context, ids []string) ([]graph.Pair, error) {
	if len(ids) < 2 {
		return nil, nil
	}
	var out []graph.Pair
	err := r.run(ctx, `MATCH (a:Memory)-[:CONFLICTS_WITH]-(b:Memory)
		WHERE a.id IN $ids AND b.id IN $ids AND a.id < b.id AND a.tenant_id = $tenant AND b.tenant_id = $tenant
		RETURN DISTINCT a.id AS a, b.id AS b ORDER BY a, b`,
		map[string]any{"ids": ids}, func(rec *neo4j.Record) error {
			a, _ := rec.Values[0].(string)
			b, _ := rec.Values[1].(string)
			out = append(out, graph.Pair{A: a, B: b})
			return nil
		})
	return out, err
}

func (r *readTx) Node(ctx context.Context, id string) (graph.Node, error) {
	ns, err := r.nodes(ctx, `MATCH (n:Memory {id: $id}) WHERE n.tenant_id = $tenant RETURN `+nodeProjection,
		map[string]any{"id": id})
	if err != nil {
		return graph.Node{}, err
	}
	if len(ns) == 0 {
		return graph.Node{}, fmt.Errorf("%w: node %s", graph.ErrNotFound, id)
	}
	return ns[0], nil
}

func (r *readTx) Nodes(ctx context.Context, area graph.Area) ([]graph.Node, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.nodes(ctx, `MATCH (n:Memory) WHERE n.area_uid = $area AND n.kind IS NOT NULL AND n.tenant_id = $tenant
		RETURN `+nodeProjection+` ORDER BY n.created_at, n.id`, map[string]any{"area": areaUID(r.tenant, area)})
}

// relTypes maps the port's relationship types to Cypher; types cannot be
// query parameters, so only these are ever spliced into a query.
var relTypes = map[graph.Rel]string{graph.Supersedes: "SUPERSEDES", graph.ConflictsWith: "CONFLICTS_WITH"}

func (r *readTx) Edges(ctx context.Context, area graph.Area, rel graph.Rel) ([]graph.Edge, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	typ, ok := relTypes[rel]
	if !ok {
		return nil, fmt.Errorf("%w: relationship type %q", graph.ErrInvalid, rel)
	}
	var out []graph.Edge
	err := r.run(ctx, `MATCH (a:Memory)-[r:`+typ+`]->(b:Memory)
		WHERE a.area_uid = $area AND a.kind IS NOT NULL AND a.tenant_id = $tenant AND b.tenant_id = $tenant
		RETURN a.id AS a, b.id AS b, coalesce(r.reinstated, false) AS reinstated ORDER BY a, b`, map[string]any{"area": areaUID(r.tenant, area)},
		func(rec *neo4j.Record) error {
			a, _ := rec.Values[0].(string)
			b, _ := rec.Values[1].(string)
			reinstated, _ := rec.Values[2].(bool)
			out = append(out, graph.Edge{Rel: rel, From: a, To: b, Reinstated: reinstated})
			return nil
		})
	return out, err
}

func (r *readTx) LastHygiene(ctx context.Context, area graph.Area) (time.Time, error) {
	if err := area.Validate(); err != nil {
		return time.Time{}, err
	}
	var at time.Time
	err := r.run(ctx, `MATCH (s:Scope {uid: $uid}) WHERE s.tenant_id = $tenant RETURN s.last_hygiene_at AS at`,
		map[string]any{"uid": scopeUID(r.tenant, areaScope(area))}, func(rec *neo4j.Record) error {
			if t, ok := rec.Values[0].(time.Time); ok {
				at = t.UTC()
			}
			return nil
		})
	return at, err
}

func (r *readTx) Titles(ctx context.Context, area graph.Area, fn func(graph.TitleRow) error) error {
	if err := area.Validate(); err != nil {
		return err
	}
	return r.run(ctx, `MATCH (n:Memory) WHERE n.area_uid = $area AND n.kind IN ['decision', 'pattern']
		  AND n.tenant_id = $tenant AND n.superseded_by IS NULL
		RETURN n.id AS id, n.kind AS kind, n.title AS title`, map[string]any{"area": areaUID(r.tenant, area)},
		func(rec *neo4j.Record) error {
			id, _ := rec.Values[0].(string)
			kind, _ := rec.Values[1].(string)
			title, _ := rec.Values[2].(string)
			return fn(graph.TitleRow{ID: id, Kind: graph.Kind(kind), Title: title})
		})
}

func (r *readTx) Outdated(ctx context.Context, area graph.Area, cutoff time.Time) ([]string, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.ids(ctx, `MATCH (n:Memory) WHERE n.area_uid = $area AND n.kind = 'decision' AND n.tenant_id = $tenant
		  AND coalesce(n.last_validated_at, n.created_at) < $cutoff AND NOT EXISTS { (n)-[:SUPERSEDES]->() }
		RETURN n.id AS id ORDER BY n.created_at, id`,
		map[string]any{"area": areaUID(r.tenant, area), "cutoff": cutoff.UTC()})
}

func (r *readTx) StalePatterns(ctx context.Context, area graph.Area, cutoff time.Time) ([]string, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.ids(ctx, `MATCH (n:Memory) WHERE n.area_uid = $area AND n.kind = 'pattern' AND n.tenant_id = $tenant
		  AND coalesce(n.last_validated_at, n.created_at) < $cutoff
		RETURN n.id AS id ORDER BY n.created_at, id`,
		map[string]any{"area": areaUID(r.tenant, area), "cutoff": cutoff.UTC()})
}

func (r *readTx) EntityGroups(ctx context.Context, area graph.Area) ([]graph.EntityGroup, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	var out []graph.EntityGroup
	err := r.run(ctx, `MATCH (n:Memory) WHERE n.area_uid = $area AND n.kind = 'entity_fact' AND n.tenant_id = $tenant
		  AND n.superseded_by IS NULL
		WITH n ORDER BY n.created_at, n.id
		WITH n.entity_key AS key, collect(n) AS ns WHERE size(ns) > 1
		RETURN ns[0].entity_name AS name, [x IN ns | x.id] AS ids ORDER BY key`,
		map[string]any{"area": areaUID(r.tenant, area)}, func(rec *neo4j.Record) error {
			name, _ := rec.Values[0].(string)
			raw, _ := rec.Values[1].([]any)
			g := graph.EntityGroup{EntityName: name}
			for _, v := range raw {
				id, _ := v.(string)
				g.IDs = append(g.IDs, id)
			}
			out = append(out, g)
			return nil
		})
	return out, err
}

func (r *readTx) Unresolved(ctx context.Context, area graph.Area) ([]string, error) {
	if err := area.Validate(); err != nil {
		return nil, err
	}
	return r.ids(ctx, `MATCH (n:Memory) WHERE n.area_uid = $area AND n.kind IS NOT NULL AND n.tenant_id = $tenant
		  AND n.status IN ['pending_retry', 'failed']
		RETURN n.id AS id ORDER BY n.created_at, id`, map[string]any{"area": areaUID(r.tenant, area)})
}

// writeTx implements graph.WriteTx inside ExecuteWrite.
type writeTx struct {
	readTx
	scope graph.Scope
	uid   string
}

func (w *writeTx) lock(ctx context.Context) error {
	cypher := lockScopeCypher
	if w.scope.Level == graph.LevelGlobal {
		cypher = lockGlobalCypher
	}
	found := false
	err := w.run(ctx, cypher, map[string]any{"uid": w.uid}, func(*neo4j.Record) error { found = true; return nil })
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %s scope %s of tenant %s", graph.ErrScopeNotFound, w.scope.Level, w.scope.Key(), w.tenant)
	}
	return nil
}

func (w *writeTx) Scope() graph.Scope { return w.scope }

func contentKey(scopeUID string, kind graph.Kind, hash string) string {
	return scopeUID + "|" + string(kind) + "|" + hash
}

func (w *writeTx) ByContentHash(ctx context.Context, kind graph.Kind, hash string) (graph.Node, bool, error) {
	ns, err := w.nodes(ctx, `MATCH (n:Memory {content_key: $key}) WHERE n.tenant_id = $tenant RETURN `+nodeProjection,
		map[string]any{"key": contentKey(w.uid, kind, hash)})
	if err != nil || len(ns) == 0 {
		return graph.Node{}, false, err
	}
	return ns[0], true, nil
}

// ftIndex is the full-text index of each kind that has one.
var ftIndex = map[graph.Kind]string{graph.Decision: "decision_fulltext", graph.Pattern: "pattern_fulltext"}

// luceneSpecial are the characters Lucene's classic query parser gives a
// meaning to ('&' and '|' only doubled, escaped alone too for simplicity).
const luceneSpecial = `\+-!():^[]"{}~*?|&/`

// EscapeLucene escapes every Lucene query-syntax character of s with a
// backslash, and lower-cases the words AND, OR and NOT so they are terms
// rather than operators. The result matches s literally.
func EscapeLucene(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(luceneSpecial, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	out := strings.Fields(b.String())
	for i, w := range out {
		switch w {
		case "AND", "OR", "NOT":
			out[i] = strings.ToLower(w)
		}
	}
	return strings.Join(out, " ")
}

// luceneQuery asks for the live nodes of one scope (ft_scope is required)
// matching any term of text.
func luceneQuery(scopeToken, text string) string {
	terms := graph.SearchTerms(text, 0)
	if len(terms) == 0 {
		return ""
	}
	for i, t := range terms {
		terms[i] = EscapeLucene(t)
	}
	return "+ft_scope:" + scopeToken + " +(" + strings.Join(terms, " ") + ")"
}

func (w *writeTx) Candidates(ctx context.Context, kind graph.Kind, text string, limit int) ([]graph.Candidate, error) {
	index, ok := ftIndex[kind]
	if !ok {
		return nil, fmt.Errorf("%w: %s nodes have no full-text index", graph.ErrInvalid, kind)
	}
	q := luceneQuery(ftScope(w.uid), text)
	if q == "" || limit <= 0 {
		return nil, nil
	}
	var out []graph.Candidate
	err := w.run(ctx, `CALL db.index.fulltext.queryNodes($index, $q) YIELD node
		WHERE node.tenant_id = $tenant AND node.scope_uid = $scope AND node.superseded_by IS NULL
		RETURN node.id AS id, node.title AS title LIMIT $limit`,
		map[string]any{"index": index, "q": q, "scope": w.uid, "limit": int64(limit)},
		func(rec *neo4j.Record) error {
			id, _ := rec.Values[0].(string)
			title, _ := rec.Values[1].(string)
			out = append(out, graph.Candidate{ID: id, Title: title})
			return nil
		})
	return out, err
}

// kindLabels are the labels of each kind; labels cannot be parameters.
var kindLabels = map[graph.Kind]string{graph.Decision: "Memory:Decision", graph.Pattern: "Memory:Pattern", graph.EntityFact: "Memory:EntityFact"}

func (w *writeTx) Create(ctx context.Context, n graph.Node) error {
	if err := graph.CheckNode(n, w.scope); err != nil {
		return err
	}
	props := map[string]any{
		"id": n.ID, "tenant_id": w.tenant, "kind": string(n.Kind),
		"level": string(n.Scope.Level), "project_id": n.Scope.ProjectID, "focus": n.Scope.Focus,
		"scope_uid": w.uid, "area_uid": areaUID(w.tenant, n.Scope.Area()),
		"title": n.Title, "rationale": n.Rationale,
		"content_hash": n.ContentHash, "content_key": contentKey(w.uid, n.Kind, n.ContentHash),
		"status": string(cmpStatus(n.Status)), "created_at": n.CreatedAt.UTC(),
	}
	if ft := liveFTScope(w.uid, n.Kind); ft != nil {
		props["ft_scope"] = ft
	}
	if n.Kind == graph.EntityFact {
		props["entity_name"] = n.EntityName
		props["entity_key"] = graph.NormalizeEntity(n.EntityName)
	}
	if !n.LastValidatedAt.IsZero() {
		props["last_validated_at"] = n.LastValidatedAt.UTC()
	}
	err := w.run(ctx, `CREATE (n:`+kindLabels[n.Kind]+`) SET n = $props`, map[string]any{"props": props},
		func(*neo4j.Record) error { return nil })
	var dbErr *neo4j.Neo4jError
	if errors.As(err, &dbErr) && dbErr.Code == codeConstraintFailed {
		if strings.Contains(dbErr.Msg, "`id`") {
			return fmt.Errorf("%w: node id %s exists: %w", graph.ErrInvalid, n.ID, err)
		}
		return fmt.Errorf("create %s: %w: %w", n.ID, graph.ErrDuplicateContent, err)
	}
	return err
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
	params := func() map[string]any { return map[string]any{"new": newID, "old": oldID, "scope": w.uid} }
	// Both queries run under the scope lock, so the check stays true.
	var hasNew, hasOld, live bool
	err := w.run(ctx, `OPTIONAL MATCH (new:Memory {id: $new}) WHERE new.tenant_id = $tenant AND new.scope_uid = $scope
		OPTIONAL MATCH (old:Memory {id: $old}) WHERE old.tenant_id = $tenant AND old.scope_uid = $scope
		RETURN new IS NOT NULL, old IS NOT NULL, old.superseded_by IS NULL`, params(),
		func(rec *neo4j.Record) error {
			hasNew, _ = rec.Values[0].(bool)
			hasOld, _ = rec.Values[1].(bool)
			live, _ = rec.Values[2].(bool)
			return nil
		})
	switch {
	case err != nil:
		return err
	case !hasNew:
		return fmt.Errorf("%w: node %s in scope %s", graph.ErrNotFound, newID, w.scope)
	case !hasOld:
		return fmt.Errorf("%w: node %s in scope %s", graph.ErrNotFound, oldID, w.scope)
	case !live:
		return fmt.Errorf("%w: %s", graph.ErrNotLive, oldID)
	}
	return w.run(ctx, `MATCH (new:Memory {id: $new}) WHERE new.tenant_id = $tenant
		MATCH (old:Memory {id: $old}) WHERE old.tenant_id = $tenant
		SET old.superseded_by = new.id
		REMOVE old.ft_scope
		CREATE (new)-[:SUPERSEDES {tenant_id: $tenant, created_at: datetime()}]->(old)`, params(),
		func(*neo4j.Record) error { return nil })
}

// liveFTScope is the ft_scope of a live node of kind: its scope's token for
// the kinds with a full-text index, nil (no property) for the others.
func liveFTScope(uid string, kind graph.Kind) any {
	if _, ok := ftIndex[kind]; ok {
		return ftScope(uid)
	}
	return nil
}

func (w *writeTx) Reinstate(ctx context.Context, id string, at time.Time) (graph.Node, error) {
	if at.IsZero() {
		return graph.Node{}, fmt.Errorf("%w: reinstating %s needs the time of its write", graph.ErrInvalid, id)
	}
	old, head, err := graph.ChainHead(ctx, id, w.scopeNode)
	if err != nil {
		return graph.Node{}, err
	}
	// The relationships into old go: what superseded it no longer does, and
	// left, they would still hide it from Live. Setting ft_scope to null
	// (an entity fact) removes it.
	err = w.run(ctx, `MATCH (old:Memory {id: $old}) WHERE old.tenant_id = $tenant AND old.scope_uid = $scope
		MATCH (head:Memory {id: $head}) WHERE head.tenant_id = $tenant AND head.scope_uid = $scope
		OPTIONAL MATCH (:Memory)-[prior:SUPERSEDES]->(old)
		DELETE prior
		WITH DISTINCT old, head
		SET old.superseded_by = null, old.ft_scope = $ft, old.last_validated_at = $at, head.superseded_by = old.id
		REMOVE head.ft_scope
		MERGE (old)-[r:SUPERSEDES]->(head)
		SET r.tenant_id = $tenant, r.created_at = datetime(), r.reinstated = true`,
		map[string]any{"old": old.ID, "head": head.ID, "scope": w.uid, "ft": liveFTScope(w.uid, old.Kind), "at": at.UTC()},
		func(*neo4j.Record) error { return nil })
	if err != nil {
		return graph.Node{}, err
	}
	head.SupersededBy = old.ID
	return head, nil
}

// scopeNode reads the node id of this transaction's scope, and reports
// whether there is one.
func (w *writeTx) scopeNode(ctx context.Context, id string) (graph.Node, bool, error) {
	ns, err := w.nodes(ctx, `MATCH (n:Memory {id: $id}) WHERE n.tenant_id = $tenant AND n.scope_uid = $scope RETURN `+nodeProjection,
		map[string]any{"id": id, "scope": w.uid})
	if err != nil || len(ns) == 0 {
		return graph.Node{}, false, err
	}
	return ns[0], true, nil
}
