package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/praetorhq/praetor/services/orchestrator/definition"
)

// Source says where a run's definition comes from — its workflow file, the
// registry that replaced the workflow's own, the project directory — so
// that resuming the run (maybe in another process) loads it again. Stores
// keep it beside the run, as JSON.
type Source struct {
	Workflow   string `json:"workflow"`
	Registry   string `json:"registry,omitempty"`
	ProjectDir string `json:"project_dir,omitempty"`
}

// SourceOf records the files of a load, as absolute paths.
func SourceOf(opts definition.LoadOptions) (Source, error) {
	var s Source
	var err error
	if s.Workflow, err = abs(opts.Workflow); err != nil {
		return Source{}, err
	}
	if s.Registry, err = abs(opts.Registry); err != nil {
		return Source{}, err
	}
	if s.ProjectDir, err = abs(opts.ProjectDir); err != nil {
		return Source{}, err
	}
	return s, nil
}

func abs(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("orchestrator: path %s: %w", p, err)
	}
	return a, nil
}

// LoadOptions are the options that load the definition again.
func (s Source) LoadOptions() definition.LoadOptions {
	return definition.LoadOptions{Workflow: s.Workflow, Registry: s.Registry, ProjectDir: s.ProjectDir}
}

// Encode returns the source's JSON.
func (s Source) Encode() []byte {
	b, _ := json.Marshal(s)
	return b
}

// DecodeSource reads a source's JSON.
func DecodeSource(raw []byte) (Source, error) {
	if len(raw) == 0 {
		return Source{}, errors.New("orchestrator: the run has no recorded source")
	}
	var s Source
	if err := json.Unmarshal(raw, &s); err != nil {
		return Source{}, fmt.Errorf("orchestrator: run source: %w", err)
	}
	if s.Workflow == "" {
		return Source{}, errors.New("orchestrator: the run's source names no workflow file")
	}
	return s, nil
}
