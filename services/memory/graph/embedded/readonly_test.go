package embedded

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPoolIsReadOnly proves that read transactions cannot write: their
// connections are query_only.
func TestReadPoolIsReadOnly(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "ro.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.reader.ExecContext(ctx, `INSERT INTO mem_scopes (uid, tenant_id, scope_key, level, project_id, focus, created_at)
		VALUES ('t|g', 't', 'g', 'global', '', '', 0)`)
	if err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("write through the read pool: err = %v, want SQLite to refuse it", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
