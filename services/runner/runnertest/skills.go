package runnertest

import (
	"context"
	"fmt"

	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/llm"
)

// Skills is an llm.Client that answers with the offline skills directly,
// without the offline provider's token accounting: the framework's own
// cost, in benchmarks and round-trip counts.
type Skills struct{}

// Complete implements llm.Client.
func (Skills) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	skill, ok := offlineskill.Skills()[req.Purpose]
	if !ok {
		return nil, fmt.Errorf("no skill for %q", req.Purpose)
	}
	out, err := skill(ctx, req)
	if err != nil {
		return nil, err
	}
	return &llm.Response{Content: out, Provider: "skills"}, nil
}
