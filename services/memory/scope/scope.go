package scope

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/praetorhq/praetor/services/memory/graph"
)

// State is the resolution state of a scope.
type State string

// Scope states (the seed's state diagram).
const (
	Unresolved      State = "unresolved"
	Uncertain       State = "uncertain"
	ResolvedProject State = "resolved_project"
	ResolvedFocus   State = "resolved_focus"
)

// Resolved reports whether s permits writes.
func (s State) Resolved() bool { return s == ResolvedProject || s == ResolvedFocus }

// Facts are what the graph says about a (project, focus) pair.
type Facts struct {
	ProjectExists bool
	FocusExists   bool
}

// Classify is the state diagram: the state of (projectID, focus) given the
// facts. A focus whose FocusArea does not exist leaves a project resolved
// at project level (the focus is dropped), as does a cleared focus.
func Classify(projectID, focus string, f Facts) State {
	switch {
	case strings.TrimSpace(projectID) == "":
		return Unresolved
	case !f.ProjectExists:
		return Uncertain
	case focus != "" && f.FocusExists:
		return ResolvedFocus
	default:
		return ResolvedProject
	}
}

// Resolution is a resolved scope: the state and what it allows.
type Resolution struct {
	State     State
	ProjectID string
	// Focus is the focus area in effect: empty unless State is ResolvedFocus.
	Focus string
	// FocusDropped is set when a focus was asked for but its FocusArea does
	// not exist, so the resolution fell back to the project.
	FocusDropped bool
	// LastHygieneAt is the project's last hygiene report (zero if never).
	LastHygieneAt time.Time
}

// Resolve builds the Resolution of (projectID, focus) from the facts read
// in the store; it is Classify plus bookkeeping, and pure.
func Resolve(projectID, focus string, info graph.ScopeInfo) Resolution {
	st := Classify(projectID, focus, Facts{ProjectExists: info.ProjectExists, FocusExists: info.FocusExists})
	r := Resolution{State: st, ProjectID: projectID, LastHygieneAt: info.LastHygieneAt}
	if st == ResolvedFocus {
		r.Focus = focus
	}
	if focus != "" && st == ResolvedProject {
		r.FocusDropped = true
	}
	return r
}

// ReadScopes is the read gate: the scopes a retrieval may read, in priority
// order (focus, project, global). Unresolved reads nothing; uncertain reads
// the project scope only.
func (r Resolution) ReadScopes() []graph.Scope {
	switch r.State {
	case Uncertain:
		return []graph.Scope{graph.ProjectScope(r.ProjectID)}
	case ResolvedProject:
		return []graph.Scope{graph.ProjectScope(r.ProjectID), graph.GlobalScope()}
	case ResolvedFocus:
		return []graph.Scope{graph.FocusScope(r.ProjectID, r.Focus), graph.ProjectScope(r.ProjectID), graph.GlobalScope()}
	default:
		return nil
	}
}

// ErrBlocked is wrapped by every write-gate refusal (status blocked_scope).
var ErrBlocked = errors.New("scope: write blocked")

// WriteScope is the write gate: the scope a write to level goes to, or an
// error wrapping ErrBlocked that says why. An empty level means the
// narrowest resolved scope (focus when resolved_focus, else project).
func (r Resolution) WriteScope(level graph.Level) (graph.Scope, error) {
	if !r.State.Resolved() {
		return graph.Scope{}, fmt.Errorf("%w: scope is %s; only resolved_project and resolved_focus scopes accept writes", ErrBlocked, r.State)
	}
	switch level {
	case "":
		if r.State == ResolvedFocus {
			return graph.FocusScope(r.ProjectID, r.Focus), nil
		}
		return graph.ProjectScope(r.ProjectID), nil
	case graph.LevelFocus:
		if r.State != ResolvedFocus {
			return graph.Scope{}, fmt.Errorf("%w: a focus-scope write needs resolved_focus, scope is %s", ErrBlocked, r.State)
		}
		return graph.FocusScope(r.ProjectID, r.Focus), nil
	case graph.LevelProject:
		return graph.ProjectScope(r.ProjectID), nil
	case graph.LevelGlobal:
		return graph.GlobalScope(), nil
	default:
		return graph.Scope{}, fmt.Errorf("%w: scope level %q must be focus, project or global", graph.ErrInvalid, level)
	}
}

// Reader is the part of the graph port the engine uses.
type Reader interface {
	Read(ctx context.Context, tenant string, fn func(ctx context.Context, tx graph.ReadTx) error) error
}

// Engine resolves scopes against the graph. It keeps no state.
type Engine struct {
	store Reader
}

// New returns a scope engine reading through store.
func New(store Reader) *Engine { return &Engine{store: store} }

// Resolve reads the facts of (projectID, focus) and resolves them. An empty
// project id is unresolved without touching the graph.
func (e *Engine) Resolve(ctx context.Context, tenant, projectID, focus string) (Resolution, error) {
	if err := Validate(projectID, focus); err != nil {
		return Resolution{}, err
	}
	if projectID == "" {
		return Resolve("", focus, graph.ScopeInfo{}), nil
	}
	var info graph.ScopeInfo
	err := e.store.Read(ctx, tenant, func(ctx context.Context, tx graph.ReadTx) error {
		var err error
		info, err = tx.Scope(ctx, projectID, focus)
		return err
	})
	if err != nil {
		return Resolution{}, fmt.Errorf("scope: resolve %s: %w", projectID, err)
	}
	return Resolve(projectID, focus, info), nil
}

// Validate checks the shape of a project id and focus: an empty project id
// is allowed (it is the unresolved state), a malformed one is not.
func Validate(projectID, focus string) error {
	if projectID != "" && !graph.ValidToken(projectID) {
		return fmt.Errorf("%w: project_id %q must be 1-128 characters of [A-Za-z0-9_-]", graph.ErrInvalid, projectID)
	}
	if focus != "" {
		if err := graph.ValidateFocus(focus); err != nil {
			return fmt.Errorf("focus: %w", err)
		}
	}
	return nil
}
