package write

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/governance"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/scope"
)

// Status is the write status of a request (the seed's state diagram).
type Status string

// Write statuses.
const (
	InProgress   Status = "in_progress"
	Saved        Status = "saved"
	Partial      Status = "partial"
	PendingRetry Status = "pending_retry"
	Failed       Status = "failed"
	BlockedScope Status = "blocked_scope"
)

// Store is the part of the graph port the engine uses.
type Store interface {
	Read(ctx context.Context, tenant string, fn func(ctx context.Context, tx graph.ReadTx) error) error
	Write(ctx context.Context, tenant string, scope graph.Scope, fn func(ctx context.Context, tx graph.WriteTx) error) error
}

// TokenChecker validates governance tokens (global-scope writes). It returns
// nil for a valid, unexpired token of the tenant.
type TokenChecker interface {
	CheckGovernanceToken(ctx context.Context, tenant, token string) error
}

// Config configures the write engine.
type Config struct {
	// Store is the graph. Required.
	Store Store
	// Tokens checks governance tokens. Required.
	Tokens TokenChecker
	// Dedup is the dedup engine. Default: dedup.New with default thresholds.
	Dedup *dedup.Engine
	// Queue keeps pending writes. Default: NewMemoryQueue() (lost with the
	// process; production passes a durable queue).
	Queue Queue
	// WriteTimeout bounds the write attempt Save waits for. Default 3s.
	WriteTimeout time.Duration
	// RetryBackoff is the wait before the first retry of a pending write; it
	// doubles after each attempt up to RetryMaxBackoff. Defaults 500ms, 30s.
	RetryBackoff, RetryMaxBackoff time.Duration
	// RetryAttempts is how many attempts a pending write gets, the first
	// included, before it fails with "retry exhausted". Default 30
	// (about a quarter of an hour with the default backoff).
	RetryAttempts int
	// MaxTitle, MaxRationale and MaxEntityName are size limits in
	// characters. Defaults 256, 8000, 200.
	MaxTitle, MaxRationale, MaxEntityName int
	// PollInterval is the longest the retry loop waits before looking at the
	// Queue again, so that it picks up pending writes another process left
	// there (a durable queue shared by replicas). Default 1m.
	PollInterval time.Duration
	// OnSettled is called by the retry loop when a pending write ends
	// (saved, failed or blocked_scope), after Queue.Done. It must not block
	// for long.
	OnSettled func(Settlement)
	// Now is the clock of node timestamps. Default time.Now.
	Now func() time.Time
	// NewID returns node ids. Default: UUID version 7.
	NewID func() string
	// Logger receives retries and failures. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives praetor_memory_writes_total{status,outcome} and
	// praetor_memory_pending_writes. Nil registers nothing.
	Registerer prometheus.Registerer
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.WriteTimeout = cmp.Or(c.WriteTimeout, 3*time.Second)
	c.RetryBackoff = cmp.Or(c.RetryBackoff, 500*time.Millisecond)
	c.RetryMaxBackoff = cmp.Or(c.RetryMaxBackoff, 30*time.Second)
	c.RetryAttempts = cmp.Or(c.RetryAttempts, 30)
	c.PollInterval = cmp.Or(c.PollInterval, time.Minute)
	c.MaxTitle = cmp.Or(c.MaxTitle, 256)
	c.MaxRationale = cmp.Or(c.MaxRationale, 8000)
	c.MaxEntityName = cmp.Or(c.MaxEntityName, 200)
	if c.Queue == nil {
		c.Queue = NewMemoryQueue()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("write: Config.Store is required")
	case c.Tokens == nil:
		return errors.New("write: Config.Tokens is required (governance tokens of global writes)")
	case c.WriteTimeout <= 0 || c.RetryBackoff <= 0 || c.RetryMaxBackoff < c.RetryBackoff || c.PollInterval <= 0:
		return errors.New("write: WriteTimeout, RetryBackoff and PollInterval must be positive and RetryMaxBackoff >= RetryBackoff")
	case c.RetryAttempts < 1:
		return fmt.Errorf("write: RetryAttempts is %d; it must be at least 1", c.RetryAttempts)
	case c.MaxTitle < 1 || c.MaxRationale < 1 || c.MaxEntityName < 1:
		return errors.New("write: size limits must be positive")
	}
	return nil
}

// Request is one memory write.
type Request struct {
	// RequestID correlates the receipt and the settlement with the request
	// (e.g. the memory.write.requested event id). Default: the node id.
	RequestID string `json:"request_id,omitempty"`
	TenantID  string `json:"tenant_id"`
	ProjectID string `json:"project_id"`
	Focus     string `json:"focus,omitempty"`
	// Level is the target scope level; empty means the narrowest resolved
	// one (the focus area when resolved_focus, else the project).
	Level graph.Level `json:"level,omitempty"`
	Kind  graph.Kind  `json:"kind"`
	// Title is the decision, pattern name or fact. Required, one line.
	Title      string `json:"title"`
	Rationale  string `json:"rationale,omitempty"`
	EntityName string `json:"entity_name,omitempty"`
	// GovernanceToken authorizes a global-scope write. It is checked once,
	// when the request is accepted, and never stored.
	GovernanceToken string `json:"-"`
	// Authorize, when set, is the governance gate of a global-scope write
	// instead of GovernanceToken and Config.Tokens: a caller that holds a
	// proof of authorization rather than the token itself (the memory
	// service, for a memory.write.requested event) checks it here. Like the
	// token it runs once, when the request is accepted, and is never stored.
	Authorize func(ctx context.Context) error `json:"-"`
	// Confirmed writes a decision even when a near-duplicate waits for
	// manual review (a person has looked at the candidate).
	Confirmed bool `json:"confirmed,omitempty"`
}

// Receipt is the outcome of a write, as returned to the caller.
type Receipt struct {
	RequestID string `json:"request_id"`
	Status    Status `json:"status"`
	// Outcome is the dedup outcome, when dedup ran.
	Outcome dedup.Outcome `json:"outcome,omitempty"`
	// NodeID is the node holding the content: the new node, the existing
	// duplicate, or the existing node a supersede reinstated (the same
	// content, superseded before). For pending_retry, the id the node will
	// have.
	NodeID string `json:"node_id,omitempty"`
	// Match is the existing node dedup compared with: the duplicate, the
	// superseded node, or the candidate waiting for manual review.
	Match *dedup.Match `json:"match,omitempty"`
	// Scope is where the write went (when the gate let it through).
	Scope graph.Scope `json:"scope"`
	// ScopeState is the resolution state of the request's scope.
	ScopeState scope.State `json:"scope_state,omitempty"`
	// Detail explains a status other than saved, and a saved write that
	// created no node: a duplicate_skip, or a supersede that reinstated an
	// existing node.
	Detail string `json:"detail,omitempty"`
}

// Settlement reports the end of a pending write.
type Settlement struct {
	Request Request
	Receipt Receipt
	// Attempts is how many attempts the write took, the first included.
	Attempts int
}

// InputError is a malformed request: the field and the rule it breaks.
type InputError struct {
	Field string
	Rule  string
}

func (e *InputError) Error() string { return "memory write: " + e.Field + ": " + e.Rule }

// Unwrap makes errors.Is(err, graph.ErrInvalid) true.
func (e *InputError) Unwrap() error { return graph.ErrInvalid }

// Engine is the write engine. Save and SaveBatch are safe for concurrent
// use; Start and Stop run the retry loop.
type Engine struct {
	cfg   Config
	scope *scope.Engine
	dedup *dedup.Engine

	writes  *prometheus.CounterVec
	pending prometheus.Gauge

	wake chan struct{}
	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

// New returns a write engine; call Start to run its retry loop.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := cfg.Dedup
	if d == nil {
		var err error
		if d, err = dedup.New(dedup.Config{}); err != nil {
			return nil, err
		}
	}
	e := &Engine{
		cfg:   cfg,
		scope: scope.New(cfg.Store),
		dedup: d,
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "praetor_memory_writes_total",
			Help: "Memory write attempts by status and dedup outcome.",
		}, []string{"status", "outcome"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "praetor_memory_pending_writes",
			Help: "Memory writes waiting for a retry.",
		}),
		wake: make(chan struct{}, 1),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{e.writes, e.pending} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("write: register metrics: %w", err)
			}
		}
	}
	return e, nil
}

// Validate checks a request against the rules of a write, returning an
// *InputError for the first one it breaks.
func (e *Engine) Validate(r Request) error {
	bad := func(field, rule string, args ...any) error {
		return &InputError{Field: field, Rule: fmt.Sprintf(rule, args...)}
	}
	switch {
	case !graph.ValidToken(r.TenantID):
		return bad("tenant_id", "%q must be 1-128 characters of [A-Za-z0-9_-]", r.TenantID)
	case !r.Kind.Valid():
		return bad("kind", "%q must be decision, pattern or entity_fact", r.Kind)
	case len(r.RequestID) > 256:
		return bad("request_id", "is %d bytes; the limit is 256", len(r.RequestID))
	}
	switch r.Level {
	case "", graph.LevelFocus, graph.LevelProject, graph.LevelGlobal:
	default:
		return bad("level", "%q must be focus, project, global or empty", r.Level)
	}
	if err := scope.Validate(r.ProjectID, r.Focus); err != nil {
		return bad("project_id/focus", "%v", err)
	}
	if err := text("title", r.Title, e.cfg.MaxTitle, true, false); err != nil {
		return err
	}
	if err := text("rationale", r.Rationale, e.cfg.MaxRationale, false, true); err != nil {
		return err
	}
	if r.Kind == graph.EntityFact {
		if err := text("entity_name", r.EntityName, e.cfg.MaxEntityName, true, false); err != nil {
			return err
		}
		if graph.NormalizeEntity(r.EntityName) == "" {
			return bad("entity_name", "must contain a letter or digit")
		}
	} else if r.EntityName != "" {
		return bad("entity_name", "is only for entity_fact writes")
	}
	if len(graph.Words(r.Title)) == 0 {
		return bad("title", "must contain a letter or digit")
	}
	return nil
}

func text(field, s string, limit int, required, multiline bool) error {
	if !utf8.ValidString(s) {
		return &InputError{Field: field, Rule: "is not valid UTF-8"}
	}
	if required && strings.TrimSpace(s) == "" {
		return &InputError{Field: field, Rule: "is required"}
	}
	if n := utf8.RuneCountInString(s); n > limit {
		return &InputError{Field: field, Rule: fmt.Sprintf("is %d characters; the limit is %d (shorten it, or move detail to the rationale)", n, limit)}
	}
	bad := strings.IndexFunc(s, func(r rune) bool {
		if multiline && (r == '\n' || r == '\t' || r == '\r') {
			return false
		}
		return unicode.IsControl(r)
	})
	if bad >= 0 {
		what := "control characters"
		if !multiline {
			what = "line breaks or control characters"
		}
		return &InputError{Field: field, Rule: "must not contain " + what}
	}
	return nil
}

// Pending is a write waiting for a retry, as kept in the Queue. It holds
// everything the retry needs and no secret: the governance token was
// checked when the request was accepted.
type Pending struct {
	Request   Request   `json:"request"`
	NodeID    string    `json:"node_id"`
	CreatedAt time.Time `json:"created_at"`
	// GovernanceOK records that the governance gate passed.
	GovernanceOK bool      `json:"governance_ok,omitempty"`
	Attempts     int       `json:"attempts"`
	NextAt       time.Time `json:"next_at"`
	LastError    string    `json:"last_error,omitempty"`
}

// nodeSpace is the UUID namespace of the node ids derived from request ids.
var nodeSpace = uuid.MustParse("8d0e3f0a-8f5e-5c4b-9a57-2b6f5d1c7e41")

// Save runs one write: scope gate, governance gate, dedup and write. It
// returns at the latest after Config.WriteTimeout, with pending_retry when
// the graph did not answer in time. The error is non-nil only for a
// malformed request (*InputError), a queue that refused a pending write, or
// a governance gate that could not be checked (ErrGateUnavailable).
func (e *Engine) Save(ctx context.Context, r Request) (Receipt, error) {
	if err := e.Validate(r); err != nil {
		return Receipt{}, err
	}
	p := &Pending{Request: r, NodeID: e.cfg.NewID(), CreatedAt: e.cfg.Now().UTC()}
	if r.RequestID != "" {
		// The same request made again (an event redelivered after a crash)
		// gets the same node id, from the request id and what it asks: it
		// finds its own node, which dedup leaves as it is even if a later
		// write superseded it, rather than reinstating it over that write.
		// A request id used again for other content (callers name their
		// requests as they like) is another write, with a node of its own.
		p.NodeID = uuid.NewSHA1(nodeSpace, []byte(strings.Join([]string{r.TenantID, r.RequestID, string(r.Kind),
			string(r.Level), r.ProjectID, r.Focus, dedup.ContentHash(r.Kind, r.EntityName, r.Title, r.Rationale)}, "\x00"))).String()
	}
	p.Request.RequestID = cmp.Or(r.RequestID, p.NodeID)
	p.Request.GovernanceToken, p.Request.Authorize = "", nil
	gate := r.Authorize
	if gate == nil {
		gate = func(ctx context.Context) error {
			return e.cfg.Tokens.CheckGovernanceToken(ctx, r.TenantID, r.GovernanceToken)
		}
	}
	rc, err := e.run(ctx, p, gate)
	if err == nil {
		e.count(rc)
		return rc, nil
	}
	if errors.Is(err, ErrGateUnavailable) {
		rc := e.receipt(p, Failed)
		rc.Detail = err.Error() + "; nothing was written: try again"
		e.count(rc)
		return rc, err
	}
	// Transient: the write is queued, and the caller gets its answer now.
	p.Attempts = 1
	p.LastError = err.Error()
	p.NextAt = time.Now().Add(e.backoff(1))
	if qerr := e.cfg.Queue.Put(context.WithoutCancel(ctx), *p); qerr != nil {
		rc := e.receipt(p, Failed)
		rc.Detail = fmt.Sprintf("graph unavailable (%v) and the retry queue refused the write: %v", err, qerr)
		e.count(rc)
		return rc, fmt.Errorf("write: queue pending write: %w", qerr)
	}
	e.pending.Inc()
	e.poke()
	rc = e.receipt(p, PendingRetry)
	rc.Detail = "graph unavailable; the write will be retried: " + err.Error()
	e.count(rc)
	e.cfg.Logger.Warn("memory write pending retry", "tenant", r.TenantID, "request", p.Request.RequestID, "err", err)
	return rc, nil
}

// BatchReceipt is the outcome of SaveBatch.
type BatchReceipt struct {
	// Status is saved when every write saved, partial when some saved and
	// some failed or were blocked, pending_retry when the rest are pending,
	// otherwise failed (or blocked_scope when every write was blocked).
	Status Status    `json:"status"`
	Items  []Receipt `json:"items"`
}

// SaveBatch saves each request in order. A malformed request fails the
// whole batch before anything is written, with an error naming its index.
func (e *Engine) SaveBatch(ctx context.Context, rs []Request) (BatchReceipt, error) {
	for i, r := range rs {
		if err := e.Validate(r); err != nil {
			return BatchReceipt{}, fmt.Errorf("request %d: %w", i, err)
		}
	}
	b := BatchReceipt{Items: make([]Receipt, 0, len(rs))}
	for _, r := range rs {
		rc, err := e.Save(ctx, r)
		if err != nil && rc.Status == "" {
			return BatchReceipt{}, err
		}
		b.Items = append(b.Items, rc)
	}
	b.Status = BatchStatus(b.Items)
	return b, nil
}

// BatchStatus folds item statuses into the status of a batch.
func BatchStatus(items []Receipt) Status {
	var saved, pending, failed, blocked int
	for _, it := range items {
		switch it.Status {
		case Saved:
			saved++
		case PendingRetry:
			pending++
		case BlockedScope:
			blocked++
		default:
			failed++
		}
	}
	switch {
	case saved == len(items):
		return Saved
	case saved > 0 && failed+blocked > 0:
		return Partial
	case pending > 0:
		return PendingRetry
	case blocked == len(items):
		return BlockedScope
	default:
		return Failed
	}
}

func (e *Engine) receipt(p *Pending, st Status) Receipt {
	return Receipt{RequestID: p.Request.RequestID, Status: st, NodeID: p.NodeID}
}

// ErrGateUnavailable is Save's error when the governance gate could not
// be checked (its store did not answer): nothing was written, nor queued,
// since a queued write carries no credential to check later. The caller
// tries again: the event path redelivers the event, which carries its proof.
var ErrGateUnavailable = errors.New("write: the governance token could not be checked")

// gateFailed settles a write whose gate refused it: failed when the
// credential is refused (missing, invalid, expired), else not settled.
func gateFailed(rc Receipt, err error) (Receipt, error) {
	if errors.Is(err, governance.ErrTokenMissing) || errors.Is(err, governance.ErrTokenInvalid) ||
		errors.Is(err, governance.ErrTokenExpired) || errors.Is(err, errNoCredential) {
		rc.Status, rc.Detail = Failed, "governance gate: "+err.Error()
		return rc, nil
	}
	return rc, fmt.Errorf("%w: %w", ErrGateUnavailable, err)
}

// errNoCredential is the governance gate of a retried write that was not
// checked when accepted; it cannot happen (a global write is checked before
// it is queued), but a retry never carries a credential to check.
var errNoCredential = errors.New("governance token missing: a retried write carries no credential")

// run is one attempt of the whole pipeline. A nil error means the write
// settled (the receipt says how); an error means it is worth retrying. gate
// checks the request's governance credential (nil on retries).
func (e *Engine) run(ctx context.Context, p *Pending, gate func(context.Context) error) (Receipt, error) {
	if gate == nil {
		gate = func(context.Context) error { return errNoCredential }
	}
	r := p.Request
	actx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
	defer cancel()
	rc := e.receipt(p, InProgress)

	res, err := e.scope.Resolve(actx, r.TenantID, r.ProjectID, r.Focus)
	if err != nil {
		if !graph.IsTransient(err) && actx.Err() == nil {
			rc.Status, rc.Detail = Failed, err.Error()
			return rc, nil
		}
		// The scope cannot be checked now; check what can be, so that a
		// pending write needs no token later.
		if r.Level == graph.LevelGlobal && !p.GovernanceOK {
			if gerr := gate(ctx); gerr != nil {
				return gateFailed(rc, gerr)
			}
			p.GovernanceOK = true
		}
		return rc, err
	}
	rc.ScopeState = res.State
	sc, err := res.WriteScope(r.Level)
	if err != nil {
		rc.Status, rc.Detail = BlockedScope, err.Error()
		return rc, nil
	}
	rc.Scope = sc
	if sc.Level == graph.LevelGlobal && !p.GovernanceOK {
		if gerr := gate(ctx); gerr != nil {
			return gateFailed(rc, gerr)
		}
		p.GovernanceOK = true
	}

	n := graph.Node{
		ID: p.NodeID, Kind: r.Kind, Scope: sc,
		Title: r.Title, Rationale: r.Rationale, EntityName: r.EntityName,
		ContentHash: dedup.ContentHash(r.Kind, r.EntityName, r.Title, r.Rationale),
		Status:      graph.StatusSaved, CreatedAt: p.CreatedAt,
	}
	if r.Kind == graph.Pattern {
		n.LastValidatedAt = p.CreatedAt
	}
	if r.RequestID != p.NodeID {
		// The request was named (Save derived its node's id from the
		// name), and made again, its node may exist already — in another
		// scope when it now resolves to a focus that came to exist
		// meanwhile: the write was done, once. (An unnamed request's
		// node id is new: nothing to look up.)
		var prior graph.Node
		err := e.cfg.Store.Read(actx, r.TenantID, func(ctx context.Context, tx graph.ReadTx) error {
			var err error
			prior, err = tx.Node(ctx, p.NodeID)
			return err
		})
		switch {
		case err == nil:
			rc.Status, rc.Outcome, rc.NodeID, rc.Scope = Saved, dedup.OutcomeDuplicateSkip, prior.ID, prior.Scope
			rc.Detail = "this request was saved before, as " + prior.ID + " in " + prior.Scope.Key()
			return rc, nil
		case errors.Is(err, graph.ErrNotFound):
		case graph.IsTransient(err) || actx.Err() != nil:
			return rc, err
		default:
			rc.Status, rc.Detail = Failed, "look up the request's node: "+err.Error()
			return rc, nil
		}
	}
	var out dedup.Result
	// A concurrent writer outside the scope lock (another process version,
	// a manual import) can still hit the content-key constraint; the second
	// pass then finds its node by hash.
	for pass := 0; ; pass++ {
		err = e.cfg.Store.Write(actx, r.TenantID, sc, func(ctx context.Context, tx graph.WriteTx) error {
			var err error
			out, err = e.dedup.Run(ctx, tx, n, dedup.Options{Confirmed: r.Confirmed})
			return err
		})
		if errors.Is(err, graph.ErrDuplicateContent) && pass == 0 {
			continue
		}
		break
	}
	switch {
	case err == nil:
	case errors.Is(err, graph.ErrScopeNotFound):
		rc.Status, rc.Detail = BlockedScope, err.Error()
		return rc, nil
	case graph.IsTransient(err) || actx.Err() != nil:
		return rc, err
	default:
		rc.Status, rc.Detail = Failed, err.Error()
		return rc, nil
	}
	rc.Outcome, rc.NodeID, rc.Match = out.Outcome, out.NodeID, out.Match
	rc.Status = Saved
	switch out.Outcome {
	case dedup.OutcomeManualReview:
		rc.Status, rc.NodeID = Failed, ""
		rc.Detail = fmt.Sprintf("near-duplicate of %s %q (title similarity %.2f): nothing was written; review it, then resend with confirmed to write anyway",
			out.Match.ID, out.Match.Title, out.Match.Score)
	case dedup.OutcomeDuplicateSkip:
		rc.Detail = "the same content is already saved as " + out.NodeID
	case dedup.OutcomeSupersede:
		rc.Detail = out.Reason // set when the supersede reinstated an existing node
	}
	return rc, nil
}

func (e *Engine) count(rc Receipt) {
	e.writes.WithLabelValues(string(rc.Status), string(rc.Outcome)).Inc()
}

func (e *Engine) backoff(attempts int) time.Duration {
	d := e.cfg.RetryBackoff
	for i := 1; i < attempts && d < e.cfg.RetryMaxBackoff; i++ {
		d *= 2
	}
	return min(d, e.cfg.RetryMaxBackoff)
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
