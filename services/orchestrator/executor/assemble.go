package executor

import (
	"context"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/services/orchestrator/agent"
	"github.com/praetorhq/praetor/services/orchestrator/definition"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// Artifacts reads outputs; the read side of ArtifactStore.
type Artifacts interface {
	Get(ctx context.Context, ref engine.OutputRef) ([]byte, error)
}

// assemble builds the context of a task from the run state: the task's
// merged constitution, the handover of every completed upstream task (in
// dependency order), the content of each input (project files as they are
// now, upstream outputs as they were stored, checked against their hashes),
// and the task's definition. plan is the index of s's plan, which a run
// builds once; maxBytes bounds each input file.
func assemble(ctx context.Context, b *definition.Bundle, arts Artifacts, s engine.State, plan *engine.PlanIndex, taskID string, maxBytes int64) (agent.Context, error) {
	rt, ok := b.Task(taskID)
	if !ok {
		return agent.Context{}, fmt.Errorf("task %s is not in workflow %s", taskID, b.Workflow.Name)
	}
	c := agent.Context{Instructions: rt.Task.Instructions}
	if c.Instructions == "" {
		c.Instructions = rt.Task.Description
	}
	c.Constitution = rt.Constitution.Render()
	for _, up := range plan.Upstream(taskID) {
		if t := s.Tasks[up]; t.Status == engine.TaskCompleted && len(t.Handover) > 0 {
			c.Handover = append(c.Handover, agent.Handover{TaskID: up, State: t.Handover})
		}
	}
	for _, in := range rt.Inputs {
		switch in.Kind {
		case definition.InputFile:
			content, err := readFile(b.InputPath(in), maxBytes)
			if err != nil {
				return agent.Context{}, fmt.Errorf("input %s: %w", in.Spec, err)
			}
			c.Inputs = append(c.Inputs, agent.Input{Name: in.Spec, Source: "file " + in.File, Content: string(content)})
		case definition.InputOutput:
			art, ok := s.Artifacts[in.Task+":"+in.Output]
			if !ok {
				return agent.Context{}, fmt.Errorf("input %s: task %s has no stored output %s", in.Spec, in.Task, in.Output)
			}
			content, err := arts.Get(ctx, engine.OutputRef{Name: art.Name, Path: art.Path, SHA256: art.SHA256, Size: art.Size})
			if err != nil {
				return agent.Context{}, fmt.Errorf("input %s: %w", in.Spec, err)
			}
			c.Inputs = append(c.Inputs, agent.Input{Name: in.Spec,
				Source: fmt.Sprintf("output %s of task %s", in.Output, in.Task), Content: string(content)})
		}
	}
	def, err := yaml.Marshal(rt.Task)
	if err != nil {
		return agent.Context{}, fmt.Errorf("encode task definition: %w", err)
	}
	c.Definition = string(def)
	return c, nil
}

func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", path, limit)
	}
	return b, nil
}
