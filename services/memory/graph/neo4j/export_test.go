package neo4j

import "context"

// RehashTenant runs the migration of EnsureSchema on one tenant's nodes
// only: tests share a server, and a failing migration must not stop the
// other tests' stores from opening.
func (s *Store) RehashTenant(ctx context.Context, tenant string) (int, error) {
	return s.rehash(ctx, tenant)
}
