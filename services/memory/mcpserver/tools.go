package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/praetorhq/praetor/services/memory/analysis"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/hygiene"
	"github.com/praetorhq/praetor/services/memory/retrieval"
	"github.com/praetorhq/praetor/services/memory/write"
)

// Retriever builds context bundles; *retrieval.Engine is one.
type Retriever interface {
	Retrieve(ctx context.Context, tenant, projectID, focus string) (retrieval.Bundle, error)
}

// Writer saves memory; *write.Engine is one.
type Writer interface {
	Save(ctx context.Context, r write.Request) (write.Receipt, error)
}

// Hygienist runs hygiene reports; *hygiene.Engine is one.
type Hygienist interface {
	Run(ctx context.Context, tenant string, area graph.Area) (*hygiene.Report, error)
}

// Config configures the server.
type Config struct {
	// Retrieval, Writes and Hygiene are the engines. Required.
	Retrieval Retriever
	Writes    Writer
	Hygiene   Hygienist
	// Version is reported to clients. Default "dev".
	Version string
	// StoreFlags are the flags of praetor memory add-project that choose
	// the stores this memory is on (" --database-url postgres://u:xxxxx@h/db
	// --neo4j-uri bolt://h:7687", " --data-dir DIR"; see
	// memory.StoreFlags), repeated in the detail of a save blocked for want
	// of a registration: without them the command goes to the SQLite store
	// of ./.praetor, not this one. Default: none.
	StoreFlags string
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if c.Retrieval == nil || c.Writes == nil || c.Hygiene == nil {
		return errors.New("mcpserver: Config.Retrieval, Writes and Hygiene are required")
	}
	return nil
}

// Server holds the memory tools.
type Server struct {
	cfg Config
}

// New returns a server of the memory tools.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg}, nil
}

// Tool names.
const (
	ToolGetContext     = "get_context"
	ToolSaveDecision   = "save_decision"
	ToolSavePattern    = "save_pattern"
	ToolSaveEntityFact = "save_entity_fact"
	ToolRouteAnalysis  = "route_analysis"
	ToolRunHygiene     = "run_hygiene"
)

// MCP returns an MCP server with the memory tools. A call acts for the
// tenant of its request's bearer token when it has one (streamable HTTP),
// else for tenant; with tenant empty such a call is refused.
func (s *Server) MCP(tenant string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "praetor-memory", Title: "Praetor graph memory", Version: s.cfg.Version},
		&mcp.ServerOptions{Instructions: instructions})
	t := &tools{s: s, tenant: tenant}
	mcp.AddTool(srv, &mcp.Tool{Name: ToolGetContext, Description: "Read what memory holds for a project: the live " +
		"decisions, patterns and entity facts of its focus area (up to 10), the project (up to 10) and the tenant's " +
		"global scope (up to 5), most recently saved or confirmed first within each (content saved again after it was " +
		"superseded counts from then, not from its created_at). Superseded nodes never appear. Status conflicted names " +
		"contradicting pairs; hygiene_due says the project's hygiene report is missing or older than 30 days.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getContext)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolSaveDecision, Description: "Save a decision with its rationale. " +
		"An identical live one is skipped (duplicate_skip); an identical one that was superseded is reinstated, " +
		"replacing the decision that replaced it (supersede, node_id the reinstated node, match the replaced one); a " +
		"very similar live decision is superseded (supersede); a somewhat similar one blocks the write for review " +
		"(manual_review, status failed, candidate in match: resend with confirmed true to write anyway). " + saveNotes},
		t.saveDecision)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolSavePattern, Description: "Save a reusable pattern (name and description); " +
		"an identical one is skipped. " + saveNotes}, t.savePattern)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolSaveEntityFact, Description: "Save a fact about a named entity (a system, " +
		"team, customer ...); an identical one is skipped. " + saveNotes}, t.saveEntityFact)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolRouteAnalysis, Description: "Choose the reasoning mode for a task: debate for " +
		"trade-offs and comparisons, socratic for unclear requirements and discovery, sequential for strategic or " +
		"multi-factor planning and by default; with the rationale and suggested steps.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.routeAnalysis)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolRunHygiene, Description: "Report memory quality problems of a project (with " +
		"its focus areas) or of the global scope: near-duplicate titles, decisions older than 180 days never " +
		"superseded, patterns not validated for 90 days, entities held by several facts (merge proposals), and saves " +
		"left pending or failed. Read-only: it changes nothing but the project's last hygiene time."}, t.runHygiene)
	return srv
}

const instructions = `Praetor graph memory: decisions, patterns and entity facts of projects, their focus areas, and the tenant's global scope.
Read with get_context before deciding; save with save_decision, save_pattern or save_entity_fact.
Writes need a project that exists (scope resolved): a save to an unknown project answers status blocked_scope, with the praetor memory add-project command that registers it (no tool does).
A save answers at once: status pending_retry means the graph was unavailable and the write will be retried in the background.`

const saveNotes = "The answer's status is saved, pending_retry (the graph is unavailable; retried in the background), " +
	"failed or blocked_scope (the project, or the focus area asked for, does not exist). scope chooses where: " +
	"focus, project, or global; empty means the focus area when it exists, else the project. A global save needs " +
	"governance_token, and project_id names the project it comes from."

type tools struct {
	s      *Server
	tenant string
}

// tenantOf is the tenant a call acts for.
func (t *tools) tenantOf(req *mcp.CallToolRequest) (string, error) {
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return req.Extra.TokenInfo.UserID, nil
	}
	if t.tenant == "" {
		return "", errors.New("unauthenticated: send Authorization: Bearer <API token>")
	}
	return t.tenant, nil
}

// ScopeInput says where a read or write goes.
type ScopeInput struct {
	ProjectID string `json:"project_id" jsonschema:"the project; it must exist for writes (for a global save: the project the save comes from)"`
	Focus     string `json:"focus,omitempty" jsonschema:"a focus area of the project"`
}

// GetContextInput is the input of get_context.
type GetContextInput struct {
	ScopeInput
}

// NodeOutput is a memory node as the tools show it.
type NodeOutput struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Scope      string    `json:"scope" jsonschema:"where the node lives: focus, project or global"`
	Title      string    `json:"title"`
	Rationale  string    `json:"rationale,omitempty"`
	EntityName string    `json:"entity_name,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// ConfirmedAt is when a later write of the same content last confirmed
	// the node (it was reinstated); retrieval orders by it, else by
	// CreatedAt.
	ConfirmedAt *time.Time `json:"confirmed_at,omitempty" jsonschema:"when a later write of the same content last confirmed the node; nodes are ordered by it, else by created_at"`
}

// Confirmed is when the node was last confirmed: ConfirmedAt, else
// CreatedAt.
func (n NodeOutput) Confirmed() time.Time {
	if n.ConfirmedAt != nil {
		return *n.ConfirmedAt
	}
	return n.CreatedAt
}

// ConflictOutput is a CONFLICTS_WITH pair among the nodes returned.
type ConflictOutput struct {
	A      string `json:"a"`
	ATitle string `json:"a_title"`
	B      string `json:"b"`
	BTitle string `json:"b_title"`
}

// ContextOutput is the context bundle.
type ContextOutput struct {
	Status     string `json:"status" jsonschema:"succeeded, conflicted, empty or failed"`
	ScopeState string `json:"scope_state,omitempty" jsonschema:"unresolved, uncertain, resolved_project or resolved_focus"`
	// FocusDropped: the focus area asked for does not exist; the project was read.
	FocusDropped bool             `json:"focus_dropped,omitempty"`
	HygieneDue   bool             `json:"hygiene_due"`
	Nodes        []NodeOutput     `json:"nodes"`
	Conflicts    []ConflictOutput `json:"conflicts,omitempty"`
	Detail       string           `json:"detail,omitempty"`
}

func (t *tools) getContext(ctx context.Context, req *mcp.CallToolRequest, in GetContextInput) (*mcp.CallToolResult, ContextOutput, error) {
	tenant, err := t.tenantOf(req)
	if err != nil {
		return nil, ContextOutput{}, err
	}
	b, err := t.s.cfg.Retrieval.Retrieve(ctx, tenant, in.ProjectID, in.Focus)
	if err != nil {
		return nil, ContextOutput{}, err
	}
	return nil, BundleOutput(b), nil
}

// BundleOutput is the tool form of a context bundle.
func BundleOutput(b retrieval.Bundle) ContextOutput {
	out := ContextOutput{Status: string(b.Status), ScopeState: string(b.Scope.State), FocusDropped: b.Scope.FocusDropped,
		HygieneDue: b.HygieneDue, Nodes: make([]NodeOutput, 0, len(b.Nodes)), Detail: b.Detail}
	for _, n := range b.Nodes {
		node := NodeOutput{ID: n.ID, Kind: string(n.Kind), Scope: string(n.Scope.Level), Title: n.Title,
			Rationale: n.Rationale, EntityName: n.EntityName, CreatedAt: n.CreatedAt}
		if n.LastValidatedAt.After(n.CreatedAt) {
			at := n.LastValidatedAt
			node.ConfirmedAt = &at
		}
		out.Nodes = append(out.Nodes, node)
	}
	for _, c := range b.Conflicts {
		out.Conflicts = append(out.Conflicts, ConflictOutput{A: c.A.ID, ATitle: c.A.Title, B: c.B.ID, BTitle: c.B.Title})
	}
	return out
}

// SaveInput is what every save has.
type SaveInput struct {
	ScopeInput
	Scope           string `json:"scope,omitempty" jsonschema:"focus, project or global; empty: the focus area when it exists, else the project"`
	GovernanceToken string `json:"governance_token,omitempty" jsonschema:"required for scope global: a governance token of the tenant (praetor memory token issue)"`
	RequestID       string `json:"request_id,omitempty" jsonschema:"your id for this save, echoed in the answer"`
}

// SaveDecisionInput is the input of save_decision.
type SaveDecisionInput struct {
	SaveInput
	Title     string `json:"title" jsonschema:"the decision, one line"`
	Rationale string `json:"rationale,omitempty" jsonschema:"why it was decided"`
	Confirmed bool   `json:"confirmed,omitempty" jsonschema:"write even though a similar decision waits for manual review"`
}

// SavePatternInput is the input of save_pattern.
type SavePatternInput struct {
	SaveInput
	Name        string `json:"name" jsonschema:"the pattern's name, one line"`
	Description string `json:"description,omitempty" jsonschema:"what the pattern is and when it applies"`
}

// SaveEntityFactInput is the input of save_entity_fact.
type SaveEntityFactInput struct {
	SaveInput
	EntityName string `json:"entity_name" jsonschema:"the entity the fact is about"`
	Fact       string `json:"fact" jsonschema:"the fact, one line"`
	Source     string `json:"source,omitempty" jsonschema:"where the fact comes from"`
}

// MatchOutput is the node dedup compared the save with.
type MatchOutput struct {
	ID    string  `json:"id"`
	Title string  `json:"title"`
	Score float64 `json:"score" jsonschema:"title similarity; 1 for identical content"`
}

// SaveOutput is the answer of a save: the write status is a field.
type SaveOutput struct {
	RequestID string `json:"request_id"`
	Status    string `json:"status" jsonschema:"saved, pending_retry, failed or blocked_scope"`
	Outcome   string `json:"outcome,omitempty" jsonschema:"new, duplicate_skip, supersede or manual_review"`
	// NodeID holds the content (the existing node on duplicate_skip, and on
	// a supersede that reinstated it; the future node on pending_retry).
	NodeID     string       `json:"node_id,omitempty"`
	Match      *MatchOutput `json:"match,omitempty"`
	Scope      string       `json:"scope,omitempty" jsonschema:"where it went: g, p/<project> or f/<project>/<focus>"`
	ScopeState string       `json:"scope_state,omitempty"`
	Detail     string       `json:"detail,omitempty"`
}

// ReceiptOutput is the tool form of a write receipt.
func ReceiptOutput(rc write.Receipt) SaveOutput {
	out := SaveOutput{RequestID: rc.RequestID, Status: string(rc.Status), Outcome: string(rc.Outcome),
		Scope: rc.Scope.Key(), ScopeState: string(rc.ScopeState), Detail: rc.Detail}
	if rc.Status == write.Saved || rc.Status == write.PendingRetry {
		// Otherwise the engine's node id names a node that will not exist.
		out.NodeID = rc.NodeID
	}
	if rc.Match != nil {
		out.Match = &MatchOutput{ID: rc.Match.ID, Title: rc.Match.Title, Score: rc.Match.Score}
	}
	return out
}

// Arguments of the save tools named differently from the write fields
// they set, by tool: an input error names the argument the caller sent.
var (
	patternArgs = map[string]string{"title": "name", "rationale": "description"}
	factArgs    = map[string]string{"title": "fact", "rationale": "source"}
)

func (t *tools) save(ctx context.Context, req *mcp.CallToolRequest, in SaveInput, r write.Request, args map[string]string) (*mcp.CallToolResult, SaveOutput, error) {
	tenant, err := t.tenantOf(req)
	if err != nil {
		return nil, SaveOutput{}, err
	}
	switch in.Scope {
	case "", string(graph.LevelFocus), string(graph.LevelProject), string(graph.LevelGlobal):
	default:
		return nil, SaveOutput{}, fmt.Errorf("scope %q must be focus, project, global or empty", in.Scope)
	}
	r.TenantID, r.ProjectID, r.Focus, r.Level = tenant, in.ProjectID, in.Focus, graph.Level(in.Scope)
	r.GovernanceToken, r.RequestID = in.GovernanceToken, in.RequestID
	rc, err := t.s.cfg.Writes.Save(ctx, r)
	if err != nil {
		var bad *write.InputError
		if errors.As(err, &bad) {
			if arg, ok := args[bad.Field]; ok {
				err = &write.InputError{Field: arg, Rule: bad.Rule}
			}
			return nil, SaveOutput{}, err
		}
		if rc.Status == "" {
			return nil, SaveOutput{}, err
		}
		t.s.cfg.Logger.Error("memory save", "tenant", tenant, "err", err)
	}
	out := ReceiptOutput(rc)
	// The tenant and the stores are named: the command is run outside the
	// session, which may have had the tenant from its bearer token.
	fix := write.Fix{Flags: " --tenant " + tenant + t.s.cfg.StoreFlags, ProjectArg: "project_id", FocusScopeArg: `scope "focus"`}
	if d := write.Unregistered(r, rc, fix); d != "" {
		out.Detail = d
	}
	return nil, out, nil
}

func (t *tools) saveDecision(ctx context.Context, req *mcp.CallToolRequest, in SaveDecisionInput) (*mcp.CallToolResult, SaveOutput, error) {
	return t.save(ctx, req, in.SaveInput, write.Request{Kind: graph.Decision, Title: in.Title, Rationale: in.Rationale, Confirmed: in.Confirmed}, nil)
}

func (t *tools) savePattern(ctx context.Context, req *mcp.CallToolRequest, in SavePatternInput) (*mcp.CallToolResult, SaveOutput, error) {
	return t.save(ctx, req, in.SaveInput, write.Request{Kind: graph.Pattern, Title: in.Name, Rationale: in.Description}, patternArgs)
}

func (t *tools) saveEntityFact(ctx context.Context, req *mcp.CallToolRequest, in SaveEntityFactInput) (*mcp.CallToolResult, SaveOutput, error) {
	return t.save(ctx, req, in.SaveInput, write.Request{Kind: graph.EntityFact, EntityName: in.EntityName, Title: in.Fact, Rationale: in.Source}, factArgs)
}

// RouteAnalysisInput is the input of route_analysis.
type RouteAnalysisInput struct {
	Task string `json:"task" jsonschema:"the task to analyse, in words"`
}

// MaxTaskLen bounds route_analysis input, in bytes.
const MaxTaskLen = 16 << 10

func (t *tools) routeAnalysis(_ context.Context, req *mcp.CallToolRequest, in RouteAnalysisInput) (*mcp.CallToolResult, analysis.Result, error) {
	if _, err := t.tenantOf(req); err != nil {
		return nil, analysis.Result{}, err
	}
	if strings.TrimSpace(in.Task) == "" {
		return nil, analysis.Result{}, errors.New("task is required: describe the task to route")
	}
	if len(in.Task) > MaxTaskLen {
		return nil, analysis.Result{}, fmt.Errorf("task is %d bytes; the limit is %d", len(in.Task), MaxTaskLen)
	}
	return nil, analysis.Route(in.Task), nil
}

// RunHygieneInput is the input of run_hygiene.
type RunHygieneInput struct {
	ProjectID string `json:"project_id,omitempty" jsonschema:"the project to inspect, with its focus areas"`
	Global    bool   `json:"global,omitempty" jsonschema:"inspect the tenant's global scope instead of a project"`
}

// DuplicateOutput is a pair of near-identical titles.
type DuplicateOutput struct {
	A     string  `json:"a"`
	B     string  `json:"b"`
	Kind  string  `json:"kind"`
	Score float64 `json:"score"`
}

// MergeOutput proposes MERGES_INTO from each of From to Into.
type MergeOutput struct {
	EntityName string   `json:"entity_name"`
	Into       string   `json:"into"`
	From       []string `json:"from"`
}

// HygieneOutput is the hygiene report: candidate ids per category.
type HygieneOutput struct {
	Area              string            `json:"area" jsonschema:"g or p/<project>"`
	GeneratedAt       time.Time         `json:"generated_at"`
	Scanned           int               `json:"scanned"`
	Duplicates        []DuplicateOutput `json:"duplicates"`
	DuplicatesOmitted int               `json:"duplicates_omitted,omitempty"`
	Outdated          []string          `json:"outdated_decisions"`
	ObsoletePatterns  []string          `json:"obsolete_patterns"`
	EntityMerges      []MergeOutput     `json:"entity_merges"`
	Unresolved        []string          `json:"unresolved_saves"`
	Omitted           map[string]int    `json:"omitted,omitempty" jsonschema:"per list, the candidates past the report's cap"`
	Recorded          bool              `json:"recorded" jsonschema:"last_hygiene_at was updated"`
}

// ReportOutput is the tool form of a hygiene report.
func ReportOutput(r *hygiene.Report) HygieneOutput {
	out := HygieneOutput{Area: r.Area.Key(), GeneratedAt: r.GeneratedAt, Scanned: r.Scanned,
		Duplicates: []DuplicateOutput{}, DuplicatesOmitted: r.DuplicatesOmitted,
		Outdated: nonNil(r.Outdated), ObsoletePatterns: nonNil(r.ObsoletePatterns), EntityMerges: []MergeOutput{},
		Unresolved: nonNil(r.Unresolved), Omitted: r.Omitted, Recorded: r.Recorded}
	for _, d := range r.Duplicates {
		out.Duplicates = append(out.Duplicates, DuplicateOutput{A: d.A, B: d.B, Kind: string(d.Kind), Score: d.Score})
	}
	for _, m := range r.EntityMerges {
		out.EntityMerges = append(out.EntityMerges, MergeOutput{EntityName: m.EntityName, Into: m.Into, From: m.From})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (t *tools) runHygiene(ctx context.Context, req *mcp.CallToolRequest, in RunHygieneInput) (*mcp.CallToolResult, HygieneOutput, error) {
	tenant, err := t.tenantOf(req)
	if err != nil {
		return nil, HygieneOutput{}, err
	}
	switch {
	case in.Global && in.ProjectID != "":
		return nil, HygieneOutput{}, errors.New("give project_id, or global true, not both")
	case !in.Global && in.ProjectID == "":
		return nil, HygieneOutput{}, errors.New("give project_id, or global true: the project to inspect, or the global scope")
	}
	area := graph.Area{ProjectID: in.ProjectID}
	rep, err := t.s.cfg.Hygiene.Run(ctx, tenant, area)
	if rep == nil {
		return nil, HygieneOutput{}, err
	}
	if err != nil {
		t.s.cfg.Logger.Warn("memory hygiene report not recorded", "tenant", tenant, "area", area.Key(), "err", err)
	}
	return nil, ReportOutput(rep), nil
}
