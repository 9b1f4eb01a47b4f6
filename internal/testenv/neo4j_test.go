package testenv

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
)

func TestUniqueTenant(t *testing.T) {
	t.Parallel()
	token := regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	tests := []struct{ name, wantPrefix string }{
		{"TestX", "t-TestX-"},
		{"TestX/sub case:1", "t-TestX_sub_case_1-"},
		{strings.Repeat("é", 100), "t-" + strings.Repeat("_", 40) + "-"},
	}
	for _, tt := range tests {
		a, b := uniqueTenant(tt.name), uniqueTenant(tt.name)
		if !token.MatchString(a) {
			t.Errorf("uniqueTenant(%q) = %q, not a valid subject token", tt.name, a)
		}
		if !strings.HasPrefix(a, tt.wantPrefix) {
			t.Errorf("uniqueTenant(%q) = %q, want prefix %q", tt.name, a, tt.wantPrefix)
		}
		if a == b {
			t.Errorf("uniqueTenant(%q) twice = %q both times, want different ids", tt.name, a)
		}
	}
}

// TestNeo4jTenantCleanup proves that a test's tenant is wiped when the test
// ends and that other tenants are left alone.
func TestNeo4jTenantCleanup(t *testing.T) {
	uri, user, password := Neo4j(t)
	ctx := context.Background()
	drv, err := neo4jDriver(uri, user, password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(ctx) })
	count := func(tenant string) int64 {
		t.Helper()
		res, err := neo4j.ExecuteQuery(ctx, drv, `MATCH (n:TestenvProbe {tenant_id: $t}) RETURN count(n) AS c`,
			map[string]any{"t": tenant}, neo4j.EagerResultTransformer)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := res.Records[0].Get("c")
		return c.(int64)
	}
	create := func(tenant string) {
		t.Helper()
		_, err := neo4j.ExecuteQuery(ctx, drv,
			`UNWIND range(1, 3) AS i CREATE (a:TestenvProbe {tenant_id: $t})-[:NEXT]->(:TestenvProbe {tenant_id: $t})`,
			map[string]any{"t": tenant}, neo4j.EagerResultTransformer)
		if err != nil {
			t.Fatal(err)
		}
	}

	keep := Neo4jTenant(t)
	create(keep)
	var inner string
	t.Run("sub", func(t *testing.T) {
		inner = Neo4jTenant(t)
		create(inner)
		if got := count(inner); got != 6 {
			t.Fatalf("nodes of tenant %s = %d, want 6", inner, got)
		}
	})
	if got := count(inner); got != 0 {
		t.Errorf("after the subtest, nodes of tenant %s = %d, want 0", inner, got)
	}
	if got := count(keep); got != 6 {
		t.Errorf("nodes of the outer tenant %s = %d, want 6 (untouched)", keep, got)
	}
}
