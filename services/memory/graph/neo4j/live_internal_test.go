package neo4j

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/praetorhq/praetor/internal/testenv"
)

// Live reads a scope's live nodes from the two indexes of liveCypher in
// the order they return them: a seek of the scope in each, stopped after a
// handful of entries, whatever the planner estimates. Without the hints
// the planner chose a seek of the tenant's nodes and a sort of them all, or
// a descending scan of every scope's entries from the top, filtered; in a
// scope under another of 300 nodes either reads hundreds of entries.
func TestLiveSeeksItsScopeInOrder(t *testing.T) {
	ctx := context.Background()
	uri, user, password := testenv.Neo4j(t)
	s, err := Open(ctx, Config{URI: uri, User: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	tenant := testenv.Neo4jTenant(t)
	scope := tenant + "|p/m"
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var rows []any
	for i := range 300 {
		r := map[string]any{"id": fmt.Sprint(i), "at": base.Add(time.Duration(i) * time.Minute)}
		if i%3 == 0 {
			r["validated"] = base.Add(time.Duration(i) * time.Minute)
		}
		rows = append(rows, r)
	}
	// The scope read, and one after it in the order of the indexes.
	for _, sc := range []string{scope, tenant + "|p/z"} {
		_, err := neo4j.ExecuteQuery(ctx, s.driver, `UNWIND $rows AS r
			CREATE (:Memory:Decision {id: $scope + '/' + r.id, tenant_id: $tenant, scope_uid: $scope, kind: 'decision',
				created_at: r.at, last_validated_at: r.validated})`,
			map[string]any{"rows": rows, "tenant": tenant, "scope": sc}, neo4j.EagerResultTransformer)
		if err != nil {
			t.Fatal(err)
		}
	}
	const limit = 10
	res, err := neo4j.ExecuteQuery(ctx, s.driver, "PROFILE "+liveCypher,
		map[string]any{"scope": scope, "tenant": tenant, "limit": int64(limit)}, neo4j.EagerResultTransformer)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != limit {
		t.Fatalf("Live returned %d records, want %d", len(res.Records), limit)
	}
	var seeks []string
	var read int64
	var walk func(p neo4j.ProfiledPlan)
	walk = func(p neo4j.ProfiledPlan) {
		op, _, _ := strings.Cut(p.Operator(), "@")
		detail := fmt.Sprint(p.Arguments()["Details"])
		switch {
		case strings.Contains(op, "Scan"):
			t.Errorf("%s %s: want no scan", op, detail)
		case strings.Contains(op, "Seek"):
			seeks = append(seeks, detail)
			read += p.Records()
		}
		for _, c := range p.Children() { // ProfiledPlan's children are right; Plan's all alias the last
			walk(c)
		}
	}
	walk(res.Summary.Profile())
	if len(seeks) != 2 || !strings.Contains(seeks[0]+seeks[1], "(scope_uid, created_at) WHERE scope_uid = $scope") ||
		!strings.Contains(seeks[0]+seeks[1], "(scope_uid, last_validated_at) WHERE scope_uid = $scope") {
		t.Errorf("index seeks = %q, want one of the scope in each of (scope_uid, created_at) and (scope_uid, last_validated_at)", seeks)
	}
	if read > 2*(limit+1) {
		t.Errorf("the seeks read %d entries for %d nodes, want at most %d: the indexes should give the order", read, limit, 2*(limit+1))
	}
}
