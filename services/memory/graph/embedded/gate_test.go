package embedded_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/services/memory/governance"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/write"
)

// tokensThat answers every governance check with err.
type tokensThat struct{ err error }

func (t tokensThat) CheckGovernanceToken(context.Context, string, string) error { return t.err }

// A global write whose token cannot be checked (the relational store does
// not answer) is not settled as failed: Save says so (ErrGateUnavailable),
// and its caller tries again (the event path redelivers the event); a
// token refused is a failed write. Found by helper-53: the first used to be
// failed for good, the write lost though the token was valid.
func TestAGovernanceGateThatCannotBeCheckedIsNotAFailure(t *testing.T) {
	s := open(t)
	ten := tenant()
	ctx := context.Background()
	if err := s.EnsureProject(ctx, ten, "p1"); err != nil {
		t.Fatal(err)
	}
	req := write.Request{TenantID: ten, ProjectID: "p1", Level: graph.LevelGlobal, Kind: graph.Decision,
		Title: "Use UTC everywhere", GovernanceToken: "gov_aaaaaaaaaaaaaaaa_secret"}
	down, err := write.New(write.Config{Store: s, Tokens: tokensThat{errors.New("check governance token: dial tcp 127.0.0.1:5432: connect: connection refused")}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := down.Save(ctx, req)
	if !errors.Is(err, write.ErrGateUnavailable) || !strings.Contains(rc.Detail, "try again") {
		t.Fatalf("token store down: %s (%s), %v; want ErrGateUnavailable", rc.Status, rc.Detail, err)
	}
	refused, err := write.New(write.Config{Store: s, Tokens: tokensThat{governance.ErrTokenExpired}})
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := refused.Save(ctx, req); err != nil || rc.Status != write.Failed || !strings.Contains(rc.Detail, "expired") {
		t.Fatalf("token refused: %s (%s), %v; want failed", rc.Status, rc.Detail, err)
	}
}
