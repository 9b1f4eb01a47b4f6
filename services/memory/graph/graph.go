package graph

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind is what a memory node records.
type Kind string

// The kinds of memory nodes.
const (
	// Decision is a choice with its rationale; deduplicated by content hash
	// and by title similarity.
	Decision Kind = "decision"
	// Pattern is a reusable practice; deduplicated by content hash only.
	Pattern Kind = "pattern"
	// EntityFact is a fact about a named entity; deduplicated by content hash
	// only, and merged by hygiene when one entity has several nodes.
	EntityFact Kind = "entity_fact"
)

// Kinds lists every kind, in a fixed order.
var Kinds = []Kind{Decision, Pattern, EntityFact}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return k == Decision || k == Pattern || k == EntityFact }

// Level is how wide a scope is.
type Level string

// Scope levels, narrowest first.
const (
	LevelFocus   Level = "focus"
	LevelProject Level = "project"
	LevelGlobal  Level = "global"
)

// Limits of identifiers, so that keys and indexes stay small.
const (
	// MaxFocusLen is the longest focus-area name, in characters.
	MaxFocusLen = 200
)

var token = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidToken reports whether s can be a tenant or project id: 1 to 128
// characters of [A-Za-z0-9_-], the same rule as event subject tokens.
func ValidToken(s string) bool { return token.MatchString(s) }

// Scope is where a memory node lives: a focus area of a project, a project,
// or the tenant's global scope.
type Scope struct {
	Level     Level  `json:"level"`
	ProjectID string `json:"project_id,omitempty"` // empty for LevelGlobal
	Focus     string `json:"focus,omitempty"`      // set for LevelFocus only
}

// GlobalScope is the tenant-wide scope.
func GlobalScope() Scope { return Scope{Level: LevelGlobal} }

// ProjectScope is the scope of one project.
func ProjectScope(projectID string) Scope { return Scope{Level: LevelProject, ProjectID: projectID} }

// FocusScope is the scope of one focus area of a project.
func FocusScope(projectID, focus string) Scope {
	return Scope{Level: LevelFocus, ProjectID: projectID, Focus: focus}
}

// Validate reports the first thing wrong with s.
func (s Scope) Validate() error {
	switch s.Level {
	case LevelGlobal:
		if s.ProjectID != "" || s.Focus != "" {
			return fmt.Errorf("%w: global scope takes no project or focus", ErrInvalid)
		}
	case LevelProject:
		if !ValidToken(s.ProjectID) {
			return fmt.Errorf("%w: project id %q must be 1-128 characters of [A-Za-z0-9_-]", ErrInvalid, s.ProjectID)
		}
		if s.Focus != "" {
			return fmt.Errorf("%w: project scope takes no focus", ErrInvalid)
		}
	case LevelFocus:
		if !ValidToken(s.ProjectID) {
			return fmt.Errorf("%w: project id %q must be 1-128 characters of [A-Za-z0-9_-]", ErrInvalid, s.ProjectID)
		}
		if err := ValidateFocus(s.Focus); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: scope level %q must be focus, project or global", ErrInvalid, s.Level)
	}
	return nil
}

// ValidateFocus checks a focus-area name: not blank, at most MaxFocusLen
// characters, no control characters.
func ValidateFocus(focus string) error {
	if strings.TrimSpace(focus) == "" {
		return fmt.Errorf("%w: focus must not be blank", ErrInvalid)
	}
	if n := utf8.RuneCountInString(focus); n > MaxFocusLen {
		return fmt.Errorf("%w: focus is %d characters; the limit is %d", ErrInvalid, n, MaxFocusLen)
	}
	if !utf8.ValidString(focus) || strings.IndexFunc(focus, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: focus %q must be UTF-8 text without control characters", ErrInvalid, focus)
	}
	return nil
}

// Key identifies the scope within a tenant: "g", "p/<project>" or
// "f/<project>/<focus, path-escaped>". Project ids cannot hold '/', and the
// focus is escaped, so distinct scopes have distinct keys.
func (s Scope) Key() string {
	switch s.Level {
	case LevelGlobal:
		return "g"
	case LevelProject:
		return "p/" + s.ProjectID
	case LevelFocus:
		return "f/" + s.ProjectID + "/" + url.PathEscape(s.Focus)
	default:
		return "" // not a scope (the zero Scope, or an invalid level)
	}
}

// Area is the scope group that hygiene inspects: the global scope, or a
// project with all its focus areas.
func (s Scope) Area() Area { return Area{ProjectID: s.ProjectID} }

func (s Scope) String() string { return s.Key() }

// Area is a project together with its focus areas, or (with an empty
// ProjectID) the tenant's global scope.
type Area struct {
	ProjectID string
}

// GlobalArea is the area of the global scope.
func GlobalArea() Area { return Area{} }

// Global reports whether a is the global area.
func (a Area) Global() bool { return a.ProjectID == "" }

// Key identifies the area within a tenant: "g" or "p/<project>".
func (a Area) Key() string {
	if a.Global() {
		return "g"
	}
	return "p/" + a.ProjectID
}

// Validate reports whether the project id of a is well formed.
func (a Area) Validate() error {
	if !a.Global() && !ValidToken(a.ProjectID) {
		return fmt.Errorf("%w: project id %q must be 1-128 characters of [A-Za-z0-9_-]", ErrInvalid, a.ProjectID)
	}
	return nil
}

// Status is the save status recorded on a node. Nodes written by the write
// engine are saved; the other values come from writers that record a node
// before its save is confirmed, and hygiene reports them.
type Status string

// Node statuses.
const (
	StatusSaved        Status = "saved"
	StatusPendingRetry Status = "pending_retry"
	StatusFailed       Status = "failed"
)

// Node is one memory record.
type Node struct {
	// ID is unique across tenants (a UUID).
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Scope is where the node lives; fixed at creation.
	Scope Scope `json:"scope"`
	// Title is the short statement: the decision, the pattern's name, or the
	// fact about the entity.
	Title string `json:"title"`
	// Rationale is the why of a decision, the body of a pattern, or the
	// source of a fact.
	Rationale string `json:"rationale,omitempty"`
	// EntityName is the entity an entity fact is about.
	EntityName string `json:"entity_name,omitempty"`
	// ContentHash identifies the normalized content (see dedup.ContentHash);
	// unique per tenant, scope and kind.
	ContentHash string `json:"content_hash"`
	// Status is the save status; empty means StatusSaved.
	Status Status `json:"status,omitempty"`
	// CreatedAt is the decision date for decisions, the creation time
	// otherwise.
	CreatedAt time.Time `json:"created_at"`
	// LastValidatedAt is when the content was last confirmed: a pattern's
	// validation, or the write that reinstated a superseded node (see
	// WriteTx.Reinstate); zero means never since CreatedAt. Retrieval and
	// hygiene date a node by it when set.
	LastValidatedAt time.Time `json:"last_validated_at,omitzero"`
	// SupersededBy is the id of the node that superseded this one, set by the
	// store; empty while the node is live.
	SupersededBy string `json:"superseded_by,omitempty"`
}

// Live reports whether n has not been superseded.
func (n Node) Live() bool { return n.SupersededBy == "" }

// Rel is a relationship type between memory nodes.
type Rel string

// Relationship types.
const (
	// Supersedes points from a node to the node it replaces: a newer node,
	// or a reinstated one (Edge.Reinstated).
	Supersedes Rel = "SUPERSEDES"
	// ConflictsWith joins two nodes that contradict each other (stored with a
	// direction, read without one).
	ConflictsWith Rel = "CONFLICTS_WITH"
)

// Edge is a relationship between two memory nodes.
type Edge struct {
	Rel      Rel
	From, To string
	// Reinstated marks a Supersedes relationship written by
	// WriteTx.Reinstate: From had been superseded and came back, replacing
	// To, so From is usually the older node.
	Reinstated bool
}

// Candidate is a node returned by a full-text search for dedup.
type Candidate struct {
	ID    string
	Title string
}

// ScopeInfo is what the store knows about a (project, focus) pair.
type ScopeInfo struct {
	ProjectExists bool
	FocusExists   bool
	// LastHygieneAt is the project's last successful hygiene report; zero
	// when there was none.
	LastHygieneAt time.Time
}

// TitleRow is the part of a node that duplicate detection reads.
type TitleRow struct {
	ID    string
	Kind  Kind
	Title string
}

// EntityGroup is an entity name held by several live entity-fact nodes.
type EntityGroup struct {
	// EntityName is the name as stored on the oldest node of the group.
	EntityName string
	// IDs are the node ids, oldest first.
	IDs []string
}

// Pair names two nodes, in the order the reader should show them.
type Pair struct {
	A, B string
}

// CheckNode reports the first thing wrong with n as a new node of scope, for
// adapters to call in WriteTx.Create.
func CheckNode(n Node, scope Scope) error {
	switch {
	case n.ID == "":
		return fmt.Errorf("%w: node id is empty", ErrInvalid)
	case !n.Kind.Valid():
		return fmt.Errorf("%w: kind %q must be decision, pattern or entity_fact", ErrInvalid, n.Kind)
	case n.Scope != scope:
		return fmt.Errorf("%w: node scope %s is not the transaction's scope %s", ErrInvalid, n.Scope, scope)
	case n.ContentHash == "":
		return fmt.Errorf("%w: node %s has no content hash", ErrInvalid, n.ID)
	case n.CreatedAt.IsZero():
		return fmt.Errorf("%w: node %s has no creation time", ErrInvalid, n.ID)
	case n.Kind == EntityFact && NormalizeEntity(n.EntityName) == "":
		return fmt.Errorf("%w: entity fact %s has no entity name", ErrInvalid, n.ID)
	case n.SupersededBy != "":
		return fmt.Errorf("%w: a new node cannot be superseded already", ErrInvalid)
	}
	switch n.Status {
	case "", StatusSaved, StatusPendingRetry, StatusFailed:
	default:
		return fmt.Errorf("%w: status %q must be saved, pending_retry or failed", ErrInvalid, n.Status)
	}
	return nil
}
