package graphtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/write"
)

// RunConcurrency proves dedup race-safe on the adapter: Writers goroutines
// write the same decision (or near-duplicates of it, pairwise title
// similarity 9/11) into one fresh scope at once, Rounds times. Every round
// must end with no duplicate content, one live node, and no node superseded
// twice. A last test has them all revert to a superseded decision at once:
// it is reinstated once.
func RunConcurrency(t *testing.T, h Harness) {
	t.Run("SameDecision", func(t *testing.T) {
		runRounds(t, h, func(round, w int) (string, string) {
			return "Adopt event sourcing for the billing ledger", "auditability and replay"
		}, 1)
	})
	t.Run("NearDuplicates", func(t *testing.T) {
		runRounds(t, h, func(round, w int) (string, string) {
			// Ten title tokens, nine shared by every writer (they differ in a
			// number): Jaccard 9/11.
			return fmt.Sprintf("Adopt event sourcing for the billing ledger service with snapshots every %d minutes", w+1),
				fmt.Sprintf("writer %d of round %d", w, round)
		}, h.Writers)
	})
	t.Run("SameRevert", func(t *testing.T) { runRevertRounds(t, h) })
}

// runRevertRounds: A is superseded by B, then every writer writes A again
// at once. Exactly one reinstates A, the others find it live; B stays
// superseded once, by A. A tenth of Rounds: each round writes two nodes
// before the race.
func runRevertRounds(t *testing.T, h Harness) {
	s, tenant := h.Open(t)
	e := newWrite(t, s, nil, func(c *write.Config) { c.WriteTimeout = 2 * time.Minute })
	const titleA, titleB = "Cache user sessions in Redis", "Cache user sessions in Redis with a TTL"
	for round := range max(1, h.Rounds/10) {
		project := fmt.Sprintf("revert-%d", round)
		ensureProject(t, s, tenant, project)
		req := func(title string) write.Request {
			return write.Request{TenantID: tenant, ProjectID: project, Kind: graph.Decision, Title: title, Rationale: "sessions"}
		}
		a := save(t, e, req(titleA))
		if b := save(t, e, req(titleB)); b.Outcome != dedup.OutcomeSupersede || b.Match == nil || b.Match.ID != a.NodeID {
			t.Fatalf("round %d: setup %+v, want supersede of %s", round, b, a.NodeID)
		}
		receipts := make([]write.Receipt, h.Writers)
		errs := make([]error, h.Writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range h.Writers {
			wg.Go(func() {
				<-start
				receipts[w], errs[w] = e.Save(context.Background(), req(titleA))
			})
		}
		close(start)
		wg.Wait()
		outcomes := map[dedup.Outcome]int{}
		for w, rc := range receipts {
			if errs[w] != nil || rc.Status != write.Saved || rc.NodeID != a.NodeID {
				t.Fatalf("round %d writer %d: %+v, %v; want saved as %s", round, w, rc, errs[w], a.NodeID)
			}
			outcomes[rc.Outcome]++
		}
		if outcomes[dedup.OutcomeSupersede] != 1 || outcomes[dedup.OutcomeDuplicateSkip] != h.Writers-1 {
			t.Errorf("round %d: outcomes %v, want 1 supersede (the reinstatement) and %d duplicate_skip", round, outcomes, h.Writers-1)
		}
		sc := graph.ProjectScope(project)
		if got := liveIDs(t, s, tenant, sc); !slices.Equal(got, []string{a.NodeID}) {
			t.Errorf("round %d: live %v, want only %s", round, got, a.NodeID)
		}
		if n := len(nodesOf(t, s, tenant, sc.Area())); n != 2 {
			t.Errorf("round %d: %d nodes, want 2", round, n)
		}
		checkSupersession(t, s, tenant, sc.Area())
		if t.Failed() {
			return
		}
	}
}

func runRounds(t *testing.T, h Harness, content func(round, writer int) (string, string), wantNodes int) {
	s, tenant := h.Open(t)
	// Thirty-two writers queue on one scope lock; under the race detector
	// on a busy machine the last may wait longer than the default write
	// timeout, and would then (correctly) be pending_retry. This test is
	// about dedup, so it lets every write wait.
	e := newWrite(t, s, nil, func(c *write.Config) { c.WriteTimeout = 2 * time.Minute })
	for round := range h.Rounds {
		project := fmt.Sprintf("race-%d", round)
		ensureProject(t, s, tenant, project)
		receipts := make([]write.Receipt, h.Writers)
		errs := make([]error, h.Writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range h.Writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				title, rationale := content(round, w)
				<-start
				receipts[w], errs[w] = e.Save(context.Background(), write.Request{
					TenantID: tenant, ProjectID: project, Kind: graph.Decision, Title: title, Rationale: rationale,
				})
			}()
		}
		close(start)
		wg.Wait()
		outcomes := map[dedup.Outcome]int{}
		for w := range h.Writers {
			if errs[w] != nil || receipts[w].Status != write.Saved {
				t.Fatalf("round %d writer %d: %+v, %v; want saved", round, w, receipts[w], errs[w])
			}
			outcomes[receipts[w].Outcome]++
		}
		checkRound(t, s, tenant, project, round, wantNodes, outcomes, h.Writers)
		if t.Failed() {
			return
		}
	}
}

func checkRound(t *testing.T, s graph.Store, tenant, project string, round, wantNodes int, outcomes map[dedup.Outcome]int, writers int) {
	t.Helper()
	area := graph.Area{ProjectID: project}
	nodes := nodesOf(t, s, tenant, area)
	edges := read(t, s, tenant, func(ctx context.Context, tx graph.ReadTx) ([]graph.Edge, error) {
		return tx.Edges(ctx, area, graph.Supersedes)
	})
	hashes := map[string]int{}
	live := 0
	for _, n := range nodes {
		hashes[n.ContentHash]++
		if n.Live() {
			live++
		}
	}
	for h, c := range hashes {
		if c > 1 {
			t.Errorf("round %d: content %s stored %d times", round, h[:12], c)
		}
	}
	successors := map[string]int{}
	for _, e := range edges {
		successors[e.To]++
	}
	for id, c := range successors {
		if c > 1 {
			t.Errorf("round %d: node %s has %d successors, want at most 1", round, id, c)
		}
	}
	if len(nodes) != wantNodes || live != 1 || len(edges) != wantNodes-1 {
		t.Errorf("round %d: %d nodes (%d live), %d SUPERSEDES; want %d nodes, 1 live, %d SUPERSEDES",
			round, len(nodes), live, len(edges), wantNodes, wantNodes-1)
	}
	if outcomes[dedup.OutcomeNew] != 1 {
		t.Errorf("round %d: outcomes %v, want exactly one new", round, outcomes)
	}
	if wantNodes == 1 && outcomes[dedup.OutcomeDuplicateSkip] != writers-1 {
		t.Errorf("round %d: outcomes %v, want %d duplicate_skip", round, outcomes, writers-1)
	}
	if wantNodes > 1 && outcomes[dedup.OutcomeSupersede] != writers-1 {
		t.Errorf("round %d: outcomes %v, want %d supersede", round, outcomes, writers-1)
	}
}
