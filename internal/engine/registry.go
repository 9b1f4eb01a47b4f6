package engine

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Evaluator is a custom evaluator: Go code, registered by name, that scores
// working memory in [0,1]. Engines name evaluators in transition triggers,
// heuristics, obligations and task triggers. An evaluator must be pure: read
// the memory, never change it.
type Evaluator func(*WorkingMemory) float64

// ErrDuplicate is returned when a name is registered twice.
var ErrDuplicate = errors.New("already registered")

// Registry holds what engines may reference by name but cannot define in
// YAML: custom evaluators, background task handlers and technique ids.
// Register everything before loading engines; after that the registry is
// only read, and reads are safe from any goroutine.
type Registry struct {
	mu         sync.RWMutex
	evaluators map[string]Evaluator
	handlers   map[string]string
	techniques map[string]bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		evaluators: map[string]Evaluator{},
		handlers:   map[string]string{},
		techniques: map[string]bool{},
	}
}

// RegisterEvaluator adds a custom evaluator.
func (r *Registry) RegisterEvaluator(name string, fn Evaluator) error {
	if name == "" || fn == nil {
		return errors.New("register evaluator: name and function are required")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.evaluators[name]; ok {
		return fmt.Errorf("register evaluator %q: %w", name, ErrDuplicate)
	}
	r.evaluators[name] = fn
	return nil
}

// Evaluator returns a registered evaluator.
func (r *Registry) Evaluator(name string) (Evaluator, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.evaluators[name]
	return fn, ok
}

// Evaluate runs a registered evaluator and clamps its score to [0,1]; an
// unknown name scores 0 (the validator rejects engines that name one).
func (r *Registry) Evaluate(name string, m *WorkingMemory) float64 {
	fn, ok := r.Evaluator(name)
	if !ok {
		return 0
	}
	return Clamp01(fn(m))
}

// Evaluators returns the registered evaluator names, sorted.
func (r *Registry) Evaluators() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.evaluators)
}

// RegisterTaskHandler declares a background task handler name; the worker
// that runs it lives in the background service.
func (r *Registry) RegisterTaskHandler(name, description string) error {
	if name == "" {
		return errors.New("register task handler: name is required")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[name]; ok {
		return fmt.Errorf("register task handler %q: %w", name, ErrDuplicate)
	}
	r.handlers[name] = description
	return nil
}

// HasTaskHandler reports whether a handler name is registered.
func (r *Registry) HasTaskHandler(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.handlers[name]
	return ok
}

// TaskHandlers returns the registered handler names, sorted.
func (r *Registry) TaskHandlers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.handlers)
}

// RegisterTechniques declares technique ids engines may use.
func (r *Registry) RegisterTechniques(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.techniques[id] = true
	}
}

// HasTechnique reports whether a technique id is known.
func (r *Registry) HasTechnique(id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.techniques[id]
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Clamp01 limits x to [0,1]; NaN becomes 0.
func Clamp01(x float64) float64 {
	switch {
	case x != x: // NaN
		return 0
	case x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}
