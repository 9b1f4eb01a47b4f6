package memory

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/retrieval"
)

// Retriever builds context bundles; *retrieval.Engine is one.
type Retriever interface {
	Retrieve(ctx context.Context, tenant, projectID, focus string) (retrieval.Bundle, error)
}

// MaxBackgroundLine is the longest line Background returns, in characters.
const MaxBackgroundLine = 200

// BackgroundSource gives the runner's context assembler what memory knows
// of a project, as short lines for its background-intelligence section.
type BackgroundSource struct {
	r Retriever
}

// NewBackgroundSource returns the source of r.
func NewBackgroundSource(r Retriever) *BackgroundSource { return &BackgroundSource{r: r} }

// Background returns the project's context bundle as lines, in priority
// order (the project's live nodes, then the global ones), each at most
// MaxBackgroundLine characters, then one line per conflicting pair and one
// when hygiene is due:
//
//	[project decision] Use PostgreSQL: the team knows it
//	[global pattern] Outbox: events commit with the state change
//	[project fact] Billing API: rate limited to 100 requests per second
//	conflict: "Use PostgreSQL" contradicts "Use MySQL"
//
// A project memory does not know yet gives no lines and no error; a graph
// that does not answer (after the retrieval engine's retries) is an error,
// which the runner may log and go on without.
func (b *BackgroundSource) Background(ctx context.Context, tenantID, projectID string) ([]string, error) {
	bundle, err := b.r.Retrieve(ctx, tenantID, projectID, "")
	if err != nil {
		return nil, fmt.Errorf("memory background: %w", err)
	}
	if bundle.Status == retrieval.Failed {
		return nil, fmt.Errorf("memory background: retrieval failed: %s", bundle.Detail)
	}
	var lines []string
	for _, n := range bundle.Nodes {
		lines = append(lines, clip(nodeLine(n), MaxBackgroundLine))
	}
	for _, c := range bundle.Conflicts {
		lines = append(lines, clip(fmt.Sprintf("conflict: %q contradicts %q", c.A.Title, c.B.Title), MaxBackgroundLine))
	}
	if bundle.HygieneDue && len(bundle.Nodes) > 0 {
		lines = append(lines, "memory hygiene is due for this project (praetor memory hygiene)")
	}
	return lines, nil
}

func nodeLine(n graph.Node) string {
	kind := string(n.Kind)
	if n.Kind == graph.EntityFact {
		kind = "fact"
	}
	text := oneLine(n.Title)
	if n.Kind == graph.EntityFact {
		text = oneLine(n.EntityName) + ": " + text
	}
	if r := oneLine(n.Rationale); r != "" && n.Kind != graph.EntityFact {
		text += ": " + r
	}
	return "[" + string(n.Scope.Level) + " " + kind + "] " + text
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens s to at most n characters, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// OpenBackground opens the graph of a node as the memory service does
// (embedded under the data directory in dev, Neo4j from NEO4J_URI in
// serve) and returns a background source reading it, with its closer; for
// a runner that runs without the memory service in its process. Its engine
// registers no metrics. A serve node without NEO4J_URI gets a *SettingError,
// which the caller may treat as "no background memory".
func OpenBackground(ctx context.Context, d node.Deps, lookup func(string) (string, bool)) (*BackgroundSource, func(context.Context) error, error) {
	gs, err := GraphSettingsFromEnv(d.Dev, d.DataDir, lookup)
	if err != nil {
		return nil, nil, err
	}
	g, closeGraph, err := OpenGraph(ctx, gs, d.Logger)
	if err != nil {
		return nil, nil, err
	}
	r, err := retrieval.New(retrieval.Config{Store: g, Logger: d.Logger})
	if err != nil {
		_ = closeGraph(ctx)
		return nil, nil, err
	}
	return NewBackgroundSource(r), closeGraph, nil
}
