package embedded_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/embedded"
	"github.com/praetorhq/praetor/services/memory/graph/graphtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "memory.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tenant() string { return "t-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12] }

func TestConformance(t *testing.T) {
	graphtest.Run(t, graphtest.Harness{
		Open:      func(t *testing.T) (graph.Store, string) { return open(t), tenant() },
		NewTenant: func(*testing.T) string { return tenant() },
		Rounds:    concurrencyRounds,
	})
}
