package graph

import (
	"context"
	"errors"
	"time"
)

// Store is the graph memory port. Every method works inside one tenant, and
// every query an adapter runs filters by it: a tenant never sees another's
// nodes, and ids of other tenants behave as absent.
type Store interface {
	// Read runs fn in one read transaction (Neo4j ExecuteRead). The
	// transaction cannot write: adapters open it read-only, so a write
	// attempted through it fails instead of happening. fn may be run more
	// than once when the transaction hits a transient error.
	Read(ctx context.Context, tenant string, fn func(ctx context.Context, tx ReadTx) error) error

	// Write runs fn in one write transaction on scope (Neo4j ExecuteWrite),
	// after taking the write lock of the scope's node: writers of one scope
	// run one at a time, so what fn reads stays true until it commits. The
	// global scope's node is created on first use; a project or focus scope
	// whose node does not exist fails with ErrScopeNotFound. fn may be run
	// more than once when the transaction hits a transient error, so it must
	// keep no state across runs.
	Write(ctx context.Context, tenant string, scope Scope, fn func(ctx context.Context, tx WriteTx) error) error

	// EnsureProject creates the project's node if it does not exist.
	EnsureProject(ctx context.Context, tenant, projectID string) error
	// EnsureFocusArea creates a focus area of an existing project (else
	// ErrScopeNotFound) if it does not exist.
	EnsureFocusArea(ctx context.Context, tenant, projectID, focus string) error
	// Link adds a relationship between two nodes of the tenant; adding an
	// existing one changes nothing. Both ends must exist (else ErrNotFound).
	// Supersedes is only written through WriteTx.Supersede.
	Link(ctx context.Context, tenant string, rel Rel, fromID, toID string) error
	// MarkHygiene records that a hygiene report of area was produced at at.
	MarkHygiene(ctx context.Context, tenant string, area Area, at time.Time) error
}

// ReadTx reads the graph of one tenant inside a read transaction.
type ReadTx interface {
	// Scope reports whether the project and its focus area exist, and the
	// project's last hygiene time. An empty focus reports FocusExists false.
	Scope(ctx context.Context, projectID, focus string) (ScopeInfo, error)
	// Live returns up to limit live (not superseded) nodes of scope, the
	// most recently confirmed first: by LastValidatedAt, or CreatedAt when
	// it is zero (nodes of the same instant in an order of the adapter's
	// choosing). A reinstated node ranks by its reinstatement.
	Live(ctx context.Context, scope Scope, limit int) ([]Node, error)
	// Conflicts returns the ConflictsWith pairs whose both ends are among
	// ids, each pair once, A < B.
	Conflicts(ctx context.Context, ids []string) ([]Pair, error)
	// Node returns one node, or ErrNotFound.
	Node(ctx context.Context, id string) (Node, error)
	// Nodes returns every node of area, live or superseded, ordered by
	// CreatedAt then id.
	Nodes(ctx context.Context, area Area) ([]Node, error)
	// Edges returns every rel relationship between nodes of area, ordered.
	Edges(ctx context.Context, area Area, rel Rel) ([]Edge, error)

	// LastHygiene returns when area last had a hygiene report (zero if never).
	LastHygiene(ctx context.Context, area Area) (time.Time, error)
	// Titles calls fn for every live decision and pattern of area.
	Titles(ctx context.Context, area Area, fn func(TitleRow) error) error
	// Outdated returns the decisions of area last confirmed (LastValidatedAt,
	// or CreatedAt when it is zero) before cutoff that have no outgoing
	// Supersedes relationship.
	Outdated(ctx context.Context, area Area, cutoff time.Time) ([]string, error)
	// StalePatterns returns the patterns of area last validated (or, never
	// validated, created) before cutoff.
	StalePatterns(ctx context.Context, area Area, cutoff time.Time) ([]string, error)
	// EntityGroups returns the entity names (compared after
	// NormalizeEntity) held by more than one live entity fact of area.
	EntityGroups(ctx context.Context, area Area) ([]EntityGroup, error)
	// Unresolved returns the nodes of area whose status is pending_retry or
	// failed.
	Unresolved(ctx context.Context, area Area) ([]string, error)
}

// WriteTx writes to one locked scope of one tenant inside a write
// transaction. Its reads see only that scope.
type WriteTx interface {
	// Scope is the scope this transaction holds the lock of.
	Scope() Scope
	// ByContentHash returns the node of this scope and kind with the content
	// hash, live or superseded, and whether there is one.
	ByContentHash(ctx context.Context, kind Kind, hash string) (Node, bool, error)
	// Candidates returns up to limit live nodes of this scope and kind,
	// best full-text match of text first. Text is free text: no character in
	// it is query syntax (see SearchTerms).
	Candidates(ctx context.Context, kind Kind, text string, limit int) ([]Candidate, error)
	// Create adds n to this scope. A node with the same content hash in the
	// scope fails with ErrDuplicateContent (the uniqueness constraint).
	Create(ctx context.Context, n Node) error
	// Supersede records that newID replaces oldID: a Supersedes relationship
	// from newID to oldID, and oldID leaves the live set. An oldID that is
	// not live fails with ErrNotLive.
	Supersede(ctx context.Context, newID, oldID string) error
	// Reinstate brings the superseded node id back: content that was
	// replaced and is asserted again is the current content again, in its
	// own node, so that its id and history stay one. The head of id's chain
	// (the live node reached by following SupersededBy, see ChainHead)
	// leaves the live set, superseded by id; id is live again and searchable
	// as Create made it; the Supersedes relationships into id are removed
	// (they no longer hold, and the supersession filter would still hide
	// id), and a Supersedes relationship from id to the head, marked
	// Edge.Reinstated, is added. at, the time of the write that asserted the
	// content again, becomes id's LastValidatedAt: its CreatedAt stays when
	// it was first made, and Live ranks it as confirmed at at. It returns
	// the head as it is afterwards. An id that is no node of this scope
	// fails with ErrNotFound, a live one or a zero at with ErrInvalid, a
	// chain with no live head within MaxChainHops with ErrNoLiveHead.
	Reinstate(ctx context.Context, id string, at time.Time) (head Node, err error)
}

// Errors of the port. Adapters wrap them, so test with errors.Is.
var (
	// ErrInvalid marks input that breaks a rule of the port; the message
	// names the field and the rule.
	ErrInvalid = errors.New("graph: invalid input")
	// ErrNotFound: a node that must exist does not (or is another tenant's).
	ErrNotFound = errors.New("graph: not found")
	// ErrScopeNotFound: the project or focus area of a write does not exist.
	ErrScopeNotFound = errors.New("graph: scope not found")
	// ErrDuplicateContent: a node with the same content key exists.
	ErrDuplicateContent = errors.New("graph: duplicate content")
	// ErrNotLive: a superseded node cannot be superseded again.
	ErrNotLive = errors.New("graph: node already superseded")
	// ErrNoLiveHead: following SupersededBy from a superseded node reaches
	// no live node (a cycle, a node missing from the scope, or a chain
	// longer than MaxChainHops), so there is nothing it could replace.
	ErrNoLiveHead = errors.New("graph: supersession chain has no live head")
	// ErrUnavailable marks a transient failure: the graph did not answer,
	// or the transaction was rolled back by a transient condition.
	// Retrying later may succeed.
	ErrUnavailable = errors.New("graph: unavailable")
)

// IsTransient reports whether err is worth retrying: ErrUnavailable, or a
// deadline that expired while waiting on the graph.
func IsTransient(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}
