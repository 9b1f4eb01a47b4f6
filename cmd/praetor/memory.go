package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/memory"
	"github.com/praetorhq/praetor/services/memory/analysis"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/mcpserver"
	"github.com/praetorhq/praetor/services/memory/write"
)

func memoryCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	fs := ff.NewFlagSet("memory").SetParent(parent)
	mf := &memoryFlags{dataDir: "./.praetor", tenant: node.DevTenantID, neo4jUser: "neo4j"}
	mf.register(fs)
	cmd := &ff.Command{
		Name:      "memory",
		Usage:     "praetor memory <get|save-decision|save-pattern|save-fact|hygiene|route|add-project|token|mcp> [FLAGS]",
		ShortHelp: "graph memory: read, save, hygiene, governance tokens, and the MCP server",
		LongHelp: strings.TrimSpace(`
Graph memory keeps decisions, patterns and entity facts of projects, their
focus areas and the tenant's global scope (seed 001).

By default the commands use the praetor dev data of --data-dir: the embedded
graph in memory.db and the SQLite store in praetor.db (migrated as needed).
--neo4j-uri uses Neo4j instead, --database-url PostgreSQL; neither is read
from NEO4J_URI or DATABASE_URL implicitly (PRAETOR_NEO4J_URI and
PRAETOR_DATABASE_URL set them).

Writes need a project memory knows (praetor memory add-project); a write to
the global scope needs a governance token (praetor memory token issue). A
write the graph cannot take now is answered pending_retry and kept in the
database; the memory service of a running node retries it.`),
		Flags: fs,
	}
	cmd.Subcommands = []*ff.Command{
		memoryGetCommand(g, fs, mf),
		memorySaveCommand(g, fs, mf, graph.Decision),
		memorySaveCommand(g, fs, mf, graph.Pattern),
		memorySaveCommand(g, fs, mf, graph.EntityFact),
		memoryHygieneCommand(g, fs, mf),
		memoryRouteCommand(g, fs, mf),
		memoryAddProjectCommand(g, fs, mf),
		memoryTokenCommand(g, fs, mf),
		memoryMCPCommand(g, fs, mf),
	}
	return cmd
}

// memoryFlags choose the memory the commands work on.
type memoryFlags struct {
	dataDir, databaseURL                              string
	neo4jURI, neo4jUser, neo4jPassword, neo4jDatabase string
	tenant                                            string
	migrate, json                                     bool
	writeTimeout                                      time.Duration
}

func (f *memoryFlags) register(fs *ff.FlagSet) {
	fs.StringVar(&f.dataDir, 0, "data-dir", f.dataDir, "praetor dev data directory: its memory.db graph and praetor.db store are used unless --neo4j-uri / --database-url")
	fs.StringVar(&f.databaseURL, 0, "database-url", "", "PostgreSQL URL for governance tokens and pending writes (DATABASE_URL is not read implicitly)")
	fs.StringVar(&f.neo4jURI, 0, "neo4j-uri", "", "Neo4j Bolt URI of the graph, e.g. bolt://127.0.0.1:7687 (NEO4J_URI is not read implicitly)")
	fs.StringVar(&f.neo4jUser, 0, "neo4j-user", f.neo4jUser, "Neo4j user")
	fs.StringVar(&f.neo4jPassword, 0, "neo4j-password", "", "Neo4j password; empty connects without authentication")
	fs.StringVar(&f.neo4jDatabase, 0, "neo4j-database", "", "Neo4j database (default: the server's)")
	fs.StringVar(&f.tenant, 0, "tenant", f.tenant, "tenant whose memory to use")
	fs.BoolVarDefault(&f.migrate, 0, "migrate", false, "apply pending migrations to --database-url first")
	fs.BoolVarDefault(&f.json, 0, "json", false, "print JSON instead of text")
	fs.DurationVar(&f.writeTimeout, 0, "write-timeout", 3*time.Second,
		"how long a save waits for the graph before it is left pending_retry (kept in the database and retried by a running node's memory service)")
}

// open assembles memory from the flags; close stops it and closes the stores.
// With graphLater a graph that does not answer now stands in as
// unavailable, for commands that keep their promise without it: a save is
// then kept pending_retry, and tokens live in the database. Reads need it.
func (f *memoryFlags) open(ctx context.Context, g *globals, graphLater bool) (*memory.Memory, func(), error) {
	if !contracts.ValidToken(f.tenant) {
		return nil, nil, settingErr("tenant", "%q must be 1-128 of [A-Za-z0-9_-]", f.tenant)
	}
	if f.writeTimeout <= 0 {
		return nil, nil, settingErr("write-timeout", "%s must be positive", f.writeTimeout)
	}
	log, err := g.logger("text")
	if err != nil {
		return nil, nil, err
	}
	dev := f.databaseURL == ""
	db, err := node.OpenStore(ctx, dev, f.dataDir, f.databaseURL)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*memory.Memory, func(), error) {
		_ = db.Close()
		return nil, nil, err
	}
	if dev || f.migrate {
		if _, err := store.Migrate(ctx, db); err != nil {
			return fail(fmt.Errorf("migrate: %w", err))
		}
	} else if err := requireMigrated(ctx, db); err != nil {
		return fail(err)
	}
	if dev && f.tenant == node.DevTenantID {
		// praetor dev creates its tenant at start; a tool may come first.
		err := store.CreateTenant(ctx, db, store.Tenant{ID: node.DevTenantID, Name: "Local development"})
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return fail(err)
		}
	}
	// A mistyped --tenant would otherwise start a memory of its own.
	if _, err := store.GetTenant(ctx, db, f.tenant); errors.Is(err, store.ErrNotFound) {
		// praetor tenant reads DATABASE_URL; an empty --database-url keeps it
		// on the dev store.
		where := "--data-dir " + f.dataDir + ` --database-url ""`
		if !dev {
			where = "--database-url URL (the URL given here)"
		}
		return fail(settingErr("tenant", "tenant %s does not exist: add it with praetor tenant add --tenant %s %s, or correct --tenant",
			f.tenant, f.tenant, where))
	} else if err != nil {
		return fail(fmt.Errorf("get tenant %s: %w", f.tenant, err))
	}
	gs := memory.GraphSettings{Dir: f.dataDir}
	if f.neo4jURI != "" {
		gs = memory.GraphSettings{Neo4jURI: f.neo4jURI, Neo4jUser: f.neo4jUser, Neo4jPassword: f.neo4jPassword, Neo4jDatabase: f.neo4jDatabase,
			URISetting: "--neo4j-uri or PRAETOR_NEO4J_URI"}
	}
	gr, closeGraph, err := memory.OpenGraph(ctx, gs, log)
	switch {
	case err != nil && graphLater && graph.IsTransient(err):
		log.Warn("memory graph unavailable", "graph", gs.Where(), "err", err)
		gr, closeGraph = memory.UnavailableGraph{Err: err}, func(context.Context) error { return nil }
	case err != nil:
		return fail(fmt.Errorf("open %s: %w", gs.Where(), err))
	}
	m, err := memory.New(memory.Config{Graph: gr, DB: db, Encoder: catalogEncoder{}, Logger: log, Version: buildVersion(),
		Write: write.Config{WriteTimeout: f.writeTimeout}, StoreFlags: memory.StoreFlags(gs, f.databaseURL, f.dataDir)})
	if err != nil {
		_ = closeGraph(ctx)
		return fail(err)
	}
	return m, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = m.Stop(sctx)
		_ = closeGraph(sctx)
		_ = db.Close()
	}, nil
}

func requireMigrated(ctx context.Context, db store.DB) error {
	status, err := store.Status(ctx, db)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	if err := store.CheckNotNewer(status); err != nil {
		return err
	}
	for _, s := range status {
		if !s.Applied {
			return fmt.Errorf("%s lacks migration %s: %s", storeName(ctx, db), s.Name, migrateHint(db))
		}
	}
	return nil
}

// storeName names the store a tool opened: without --database-url it is
// the SQLite file of --data-dir, which a user who meant PostgreSQL (and
// forgot DATABASE_URL) would not guess from "the database".
func storeName(ctx context.Context, db store.DB) string {
	if db.Dialect() != store.SQLite {
		return "the PostgreSQL database of --database-url (DATABASE_URL)"
	}
	var file string
	if err := db.QueryRow(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil || file == "" {
		return "the SQLite store of --data-dir (no --database-url or DATABASE_URL was given)"
	}
	return "the SQLite store " + file + " of --data-dir (no --database-url or DATABASE_URL was given)"
}

// migrateHint says how to migrate the store, or pick the other one.
func migrateHint(db store.DB) string {
	if db.Dialect() != store.SQLite {
		return "run `praetor migrate --database-url URL` (or pass --migrate)"
	}
	return "it is no praetor dev's yet: run `praetor migrate --data-dir DIR` (or pass --migrate), or give --database-url (DATABASE_URL) " +
		"to use a PostgreSQL database instead"
}

// catalogEncoder routes and encodes catalog events without a connection:
// settlements of pending writes go to the outbox, which a node's relay
// publishes.
type catalogEncoder struct{}

func (catalogEncoder) Encode(_ context.Context, ev event.Event) (*nats.Msg, error) {
	subject, err := contracts.Subject(ev)
	if err != nil {
		return nil, err
	}
	return events.Encode(subject, ev)
}

func (f *memoryFlags) printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func memoryGetCommand(g *globals, parent *ff.FlagSet, mf *memoryFlags) *ff.Command {
	var project, focus string
	fs := ff.NewFlagSet("get").SetParent(parent)
	fs.StringVar(&project, 0, "project", "", "project to read (required)")
	fs.StringVar(&focus, 0, "focus", "", "focus area of the project, read first")
	return &ff.Command{
		Name:      "get",
		Usage:     "praetor memory get --project ID [--focus F] [--json]",
		ShortHelp: "print a project's context bundle: focus, project and global memory, by priority",
		Flags:     fs,
		Exec: func(ctx context.Context, _ []string) error {
			if project == "" {
				return settingErr("project", "required: the project to read")
			}
			m, closeAll, err := mf.open(ctx, g, false)
			if err != nil {
				return err
			}
			defer closeAll()
			b, err := m.Retrieval.Retrieve(ctx, mf.tenant, project, focus)
			if err != nil {
				return err
			}
			out := mcpserver.BundleOutput(b)
			if mf.json {
				return mf.printJSON(g.stdout, out)
			}
			state := out.ScopeState
			if out.FocusDropped {
				state += "; focus area " + focus + " does not exist"
			}
			fmt.Fprintf(g.stdout, "%s (%s)\n", out.Status, state)
			if out.HygieneDue {
				fmt.Fprintf(g.stdout, "hygiene is due: praetor memory hygiene --project %s\n", project)
			}
			if out.Detail != "" {
				fmt.Fprintln(g.stdout, out.Detail)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			for _, n := range out.Nodes {
				fmt.Fprintln(tw, nodeRow(n))
				if n.Rationale != "" {
					fmt.Fprintf(tw, "\t\t\t\t  %s\n", strings.Join(strings.Fields(n.Rationale), " "))
				}
			}
			_ = tw.Flush()
			for _, c := range out.Conflicts {
				fmt.Fprintf(g.stdout, "conflict: %s %q contradicts %s %q\n", c.A, c.ATitle, c.B, c.BTitle)
			}
			if b.Status == "failed" {
				return errors.New("memory get: retrieval failed")
			}
			return nil
		},
	}
}

func memorySaveCommand(g *globals, parent *ff.FlagSet, mf *memoryFlags, kind graph.Kind) *ff.Command {
	var project, focus, scope, token, requestID, title, body, entity string
	var confirmed bool
	name := map[graph.Kind]string{graph.Decision: "save-decision", graph.Pattern: "save-pattern", graph.EntityFact: "save-fact"}[kind]
	// flags names the flag of each write field, for the errors of a save.
	flags := map[string]string{"title": "title", "rationale": "rationale", "request_id": "request-id", "level": "scope"}
	fs := ff.NewFlagSet(name).SetParent(parent)
	fs.StringVar(&project, 0, "project", "", "project the write goes to (for --scope global: the project it comes from)")
	fs.StringVar(&focus, 0, "focus", "", "focus area of the project")
	fs.StringVar(&scope, 0, "scope", "", "focus, project or global; empty: the focus area when it exists, else the project")
	fs.StringVar(&token, 0, "governance-token", "", "governance token for --scope global (PRAETOR_GOVERNANCE_TOKEN)")
	fs.StringVar(&requestID, 0, "request-id", "", "your id for this write")
	var usage, short string
	switch kind {
	case graph.Decision:
		fs.StringVar(&title, 0, "title", "", "the decision, one line (required)")
		fs.StringVar(&body, 0, "rationale", "", "why it was decided")
		fs.BoolVarDefault(&confirmed, 0, "confirmed", false, "write even though a similar decision waits for manual review")
		usage, short = "praetor memory save-decision --project ID --title T [--rationale R] [--focus F] [--scope S] [--confirmed]",
			"save a decision: deduplicated, superseding a near-identical one"
	case graph.Pattern:
		fs.StringVar(&title, 0, "name", "", "the pattern's name, one line (required)")
		fs.StringVar(&body, 0, "description", "", "what the pattern is and when it applies")
		flags["title"], flags["rationale"] = "name", "description"
		usage, short = "praetor memory save-pattern --project ID --name N [--description D] [--focus F] [--scope S]",
			"save a reusable pattern"
	default:
		fs.StringVar(&entity, 0, "entity", "", "the entity the fact is about (required)")
		fs.StringVar(&title, 0, "fact", "", "the fact, one line (required)")
		fs.StringVar(&body, 0, "source", "", "where the fact comes from")
		flags["title"], flags["rationale"], flags["entity_name"] = "fact", "source", "entity"
		usage, short = "praetor memory save-fact --project ID --entity E --fact F [--source S] [--focus F] [--scope S]",
			"save a fact about an entity"
	}
	return &ff.Command{
		Name:      name,
		Usage:     usage,
		ShortHelp: short,
		LongHelp: "Prints the write status (saved, pending_retry, failed, blocked_scope) and the dedup outcome;\n" +
			"exits 1 when the write failed or was blocked.",
		Flags: fs,
		Exec: func(ctx context.Context, _ []string) error {
			switch scope {
			case "", string(graph.LevelFocus), string(graph.LevelProject), string(graph.LevelGlobal):
			default:
				return settingErr("scope", "%q must be focus, project, global or empty", scope)
			}
			switch {
			case project == "":
				return settingErr("project", "required: the project the write goes to (for --scope global: the project it comes from)")
			case !graph.ValidToken(project):
				return settingErr("project", "%q must be 1-128 of [A-Za-z0-9_-]", project)
			}
			if focus != "" {
				if err := graph.ValidateFocus(focus); err != nil {
					return settingErr("focus", "%v", err)
				}
			}
			m, closeAll, err := mf.open(ctx, g, true)
			if err != nil {
				return err
			}
			defer closeAll()
			req := write.Request{RequestID: requestID, TenantID: mf.tenant, ProjectID: project, Focus: focus,
				Level: graph.Level(scope), Kind: kind, Title: title, Rationale: body, EntityName: entity,
				GovernanceToken: token, Confirmed: confirmed}
			rc, err := m.Writes.Save(ctx, req)
			var bad *write.InputError
			if errors.As(err, &bad) {
				if flag, ok := flags[bad.Field]; ok {
					return fmt.Errorf("%w (see praetor memory %s --help)", settingErr(flag, "%s", bad.Rule), name)
				}
				return fmt.Errorf("%w (see praetor memory %s --help)", err, name)
			}
			if err != nil && rc.Status == "" {
				return err
			}
			out := mcpserver.ReceiptOutput(rc)
			out.Detail = cmpOr(write.Unregistered(req, rc, write.Fix{Flags: mf.sameMemory(), ProjectArg: "--project", FocusScopeArg: "--scope focus"}), out.Detail)
			if mf.json {
				if err := mf.printJSON(g.stdout, out); err != nil {
					return err
				}
			} else {
				printReceipt(g.stdout, out)
			}
			switch rc.Status {
			case write.Failed, write.BlockedScope:
				return &codedError{code: 1, err: errors.New("memory write " + string(rc.Status))}
			}
			return err
		},
	}
}

// sameMemory are the flags that choose the memory these flags chose, for a
// command to suggest; a PostgreSQL URL, which may hold a password, is not
// repeated.
func (f *memoryFlags) sameMemory() string {
	var b strings.Builder
	if f.tenant != node.DevTenantID {
		b.WriteString(" --tenant " + f.tenant)
	}
	if f.neo4jURI != "" {
		b.WriteString(" --neo4j-uri " + f.neo4jURI)
	}
	if f.databaseURL != "" {
		b.WriteString(" --database-url URL")
	}
	if f.neo4jURI == "" || f.databaseURL == "" {
		b.WriteString(" --data-dir " + f.dataDir)
	}
	return b.String()
}

func printReceipt(w io.Writer, out mcpserver.SaveOutput) {
	line := out.Status
	if out.Outcome != "" {
		line += " (" + out.Outcome + ")"
	}
	if out.NodeID != "" {
		line += " node " + out.NodeID
	}
	if out.Scope != "" {
		line += " in " + out.Scope
	}
	fmt.Fprintln(w, line)
	if out.Match != nil {
		fmt.Fprintf(w, "compared with %s %q (similarity %.2f)\n", out.Match.ID, out.Match.Title, out.Match.Score)
	}
	if out.Detail != "" {
		fmt.Fprintln(w, out.Detail)
	}
	if out.Status == string(write.PendingRetry) {
		fmt.Fprintln(w, "the write is kept in the database; the memory service of a running node (praetor dev, or praetor serve --services memory) retries it")
	}
}

func memoryHygieneCommand(g *globals, parent *ff.FlagSet, mf *memoryFlags) *ff.Command {
	var project string
	var global bool
	fs := ff.NewFlagSet("hygiene").SetParent(parent)
	fs.StringVar(&project, 0, "project", "", "project to inspect, with its focus areas")
	fs.BoolVarDefault(&global, 0, "global", false, "inspect the tenant's global scope instead")
	return &ff.Command{
		Name:      "hygiene",
		Usage:     "praetor memory hygiene --project ID | --global [--json]",
		ShortHelp: "report memory quality problems (read-only): duplicates, outdated, obsolete, merges, unresolved saves",
		Flags:     fs,
		Exec: func(ctx context.Context, _ []string) error {
			switch {
			case global && project != "":
				return settingErr("project", "give --project ID or --global, not both")
			case !global && project == "":
				return settingErr("project", "give --project ID or --global: the project to inspect, or the global scope")
			}
			m, closeAll, err := mf.open(ctx, g, false)
			if err != nil {
				return err
			}
			defer closeAll()
			rep, err := m.Hygiene.Run(ctx, mf.tenant, graph.Area{ProjectID: project})
			if rep == nil {
				if errors.Is(err, graph.ErrScopeNotFound) {
					return fmt.Errorf("%w (praetor memory add-project --project %s registers it)", err, project)
				}
				return err
			}
			out := mcpserver.ReportOutput(rep)
			if mf.json {
				if perr := mf.printJSON(g.stdout, out); perr != nil {
					return perr
				}
				return err
			}
			fmt.Fprintf(g.stdout, "hygiene of %s at %s: %d decisions and patterns scanned, %d candidates\n",
				out.Area, out.GeneratedAt.Format(time.RFC3339), out.Scanned, rep.Candidates())
			for _, d := range out.Duplicates {
				fmt.Fprintf(g.stdout, "duplicate\t%s %s (%s, %.2f)\n", d.A, d.B, d.Kind, d.Score)
			}
			if out.DuplicatesOmitted > 0 {
				fmt.Fprintf(g.stdout, "duplicate\t... %d more pairs\n", out.DuplicatesOmitted)
			}
			for _, id := range out.Outdated {
				fmt.Fprintf(g.stdout, "outdated decision\t%s\n", id)
			}
			for _, id := range out.ObsoletePatterns {
				fmt.Fprintf(g.stdout, "obsolete pattern\t%s\n", id)
			}
			for _, mg := range out.EntityMerges {
				fmt.Fprintf(g.stdout, "merge %q\t%s into %s\n", mg.EntityName, strings.Join(mg.From, " "), mg.Into)
			}
			for _, id := range out.Unresolved {
				fmt.Fprintf(g.stdout, "unresolved save\t%s\n", id)
			}
			for _, list := range slices.Sorted(maps.Keys(out.Omitted)) {
				fmt.Fprintf(g.stdout, "%s\t... %d more\n", list, out.Omitted[list])
			}
			return err
		},
	}
}

func memoryRouteCommand(g *globals, parent *ff.FlagSet, mf *memoryFlags) *ff.Command {
	var task string
	fs := ff.NewFlagSet("route").SetParent(parent)
	fs.StringVar(&task, 0, "task", "", "the task, in words (or as arguments)")
	return &ff.Command{
		Name:      "route",
		Usage:     "praetor memory route --task TEXT | praetor memory route TEXT...",
		ShortHelp: "choose the reasoning mode for a task: sequential, debate or socratic",
		Flags:     fs,
		Exec: func(_ context.Context, args []string) error {
			text := strings.TrimSpace(strings.Join(append([]string{task}, args...), " "))
			if text == "" {
				return settingErr("task", "required: describe the task")
			}
			res := analysis.Route(text)
			if mf.json {
				return mf.printJSON(g.stdout, res)
			}
			fmt.Fprintf(g.stdout, "%s\n%s\n", res.Mode, res.Rationale)
			for i, s := range res.SuggestedSteps {
				fmt.Fprintf(g.stdout, "%d. %s\n", i+1, s)
			}
			return nil
		},
	}
}

func memoryAddProjectCommand(g *globals, parent *ff.FlagSet, mf *memoryFlags) *ff.Command {
	var project string
	var focus []string
	fs := ff.NewFlagSet("add-project").SetParent(parent)
	fs.StringVar(&project, 0, "project", "", "project id to register (required)")
	fs.StringListVar(&focus, 0, "focus", "focus area to register in the project, repeatable")
	return &ff.Command{
		Name:      "add-project",
		Usage:     "praetor memory add-project --project ID [--focus F ...]",
		ShortHelp: "register a project (and focus areas) so that memory accepts writes to it",
		LongHelp: "Memory writes only to projects it knows: the scope gate answers blocked_scope for any other,\n" +
			"so that a mistyped project id cannot start a memory of its own. Registering twice changes nothing.",
		Flags: fs,
		Exec: func(ctx context.Context, _ []string) error {
			if !graph.ValidToken(project) {
				return settingErr("project", "%q must be 1-128 of [A-Za-z0-9_-]", project)
			}
			for _, f := range focus {
				if err := graph.ValidateFocus(f); err != nil {
					return settingErr("focus", "%v", err)
				}
			}
			m, closeAll, err := mf.open(ctx, g, false)
			if err != nil {
				return err
			}
			defer closeAll()
			if err := m.Graph.EnsureProject(ctx, mf.tenant, project); err != nil {
				return err
			}
			for _, f := range focus {
				if err := m.Graph.EnsureFocusArea(ctx, mf.tenant, project, f); err != nil {
					return err
				}
			}
			fmt.Fprintf(g.stdout, "project %s of tenant %s registered", project, mf.tenant)
			if len(focus) > 0 {
				fmt.Fprintf(g.stdout, " with focus areas %s", strings.Join(focus, ", "))
			}
			fmt.Fprintln(g.stdout)
			return nil
		},
	}
}

func memoryTokenCommand(g *globals, parent *ff.FlagSet, mf *memoryFlags) *ff.Command {
	fs := ff.NewFlagSet("token").SetParent(parent)
	cmd := &ff.Command{
		Name:      "token",
		Usage:     "praetor memory token <issue|revoke|list> [FLAGS]",
		ShortHelp: "governance tokens: the credential of writes to a tenant's global memory",
		LongHelp: "A token is shown once, when issued; only its SHA-256 is stored. Events carry a proof made\n" +
			"with it (contracts.SignMemoryWrite), never the token.",
		Flags: fs,
	}
	var name string
	var ttl time.Duration
	issueFS := ff.NewFlagSet("issue").SetParent(fs)
	issueFS.StringVar(&name, 0, "name", "", "who or what uses the token (required)")
	issueFS.DurationVar(&ttl, 0, "ttl", 30*24*time.Hour, "how long the token is valid")
	listFS := ff.NewFlagSet("list").SetParent(fs)
	revokeFS := ff.NewFlagSet("revoke").SetParent(fs)
	cmd.Subcommands = []*ff.Command{
		{
			Name: "issue", Usage: "praetor memory token issue --name N [--ttl 720h]", ShortHelp: "issue a governance token and print it once",
			Flags: issueFS,
			Exec: func(ctx context.Context, _ []string) error {
				m, closeAll, err := mf.open(ctx, g, true)
				if err != nil {
					return err
				}
				defer closeAll()
				token, tok, err := m.Tokens.Issue(ctx, mf.tenant, name, ttl)
				if err != nil {
					return err
				}
				if mf.json {
					return mf.printJSON(g.stdout, map[string]any{"token": token, "id": tok.ID, "tenant_id": tok.TenantID,
						"name": tok.Name, "expires_at": tok.ExpiresAt})
				}
				fmt.Fprintln(g.stdout, token)
				fmt.Fprintf(g.stderr, "governance token %s of tenant %s, valid until %s; it is not shown again\n",
					tok.ID, tok.TenantID, tok.ExpiresAt.Format(time.RFC3339))
				return nil
			},
		},
		{
			Name: "revoke", Usage: "praetor memory token revoke ID", ShortHelp: "revoke a governance token by its id",
			Flags: revokeFS,
			Exec: func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{fmt.Sprintf("praetor memory token revoke takes one token id, got %d arguments "+
						"(praetor memory token list shows the ids)", len(args))}
				}
				id := args[0]
				if tid, ok := contracts.GovernanceTokenID(id); ok {
					id = tid // the whole token works too
				}
				m, closeAll, err := mf.open(ctx, g, true)
				if err != nil {
					return err
				}
				defer closeAll()
				if err := m.Tokens.Revoke(ctx, mf.tenant, id); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "governance token %s revoked\n", id)
				return nil
			},
		},
		{
			Name: "list", Usage: "praetor memory token list", ShortHelp: "list the tenant's governance tokens (never the tokens themselves)",
			Flags: listFS,
			Exec: func(ctx context.Context, _ []string) error {
				m, closeAll, err := mf.open(ctx, g, true)
				if err != nil {
					return err
				}
				defer closeAll()
				toks, err := m.Tokens.List(ctx, mf.tenant)
				if err != nil {
					return err
				}
				if mf.json {
					return mf.printJSON(g.stdout, toks)
				}
				now := time.Now()
				for _, k := range toks {
					fmt.Fprintln(g.stdout, k.Describe(now))
				}
				return nil
			},
		},
	}
	return cmd
}

func memoryMCPCommand(g *globals, parent *ff.FlagSet, mf *memoryFlags) *ff.Command {
	fs := ff.NewFlagSet("mcp").SetParent(parent)
	return &ff.Command{
		Name:      "mcp",
		Usage:     "praetor memory mcp [--tenant T] [--data-dir DIR | --neo4j-uri URI --database-url URL]",
		ShortHelp: "serve the memory tools over MCP on stdin and stdout, for an agent",
		LongHelp: strings.TrimSpace(`
Tools: get_context, save_decision, save_pattern, save_entity_fact,
route_analysis, run_hygiene; every call acts for --tenant. Logs go to stderr.
It runs until stdin closes, answering every request read before, or a
signal arrives, retrying pending writes meanwhile. A node running the memory service serves the same tools over
streamable HTTP at /mcp.`),
		Flags: fs,
		Exec: func(ctx context.Context, _ []string) error {
			m, closeAll, err := mf.open(ctx, g, false)
			if err != nil {
				return err
			}
			defer closeAll()
			tools, err := m.MCP()
			if err != nil {
				return err
			}
			if err := m.Start(ctx); err != nil {
				return err
			}
			err = tools.MCP(mf.tenant).Run(ctx, &mcpserver.LineTransport{In: os.Stdin, Out: g.stdout})
			if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
				return nil
			}
			return fmt.Errorf("memory mcp: %w", err)
		},
	}
}

// nodeRow is a node's line of `memory get`: scope, kind, id, the date it
// was last confirmed (the order of the bundle within a scope and kind) and
// its title, with its creation date after a node confirmed since.
func nodeRow(n mcpserver.NodeOutput) string {
	const day = "2006-01-02"
	title := n.Title
	if n.EntityName != "" {
		title = n.EntityName + ": " + title
	}
	if n.ConfirmedAt != nil {
		title += " (confirmed again; created " + n.CreatedAt.UTC().Format(day) + ")"
	}
	return strings.Join([]string{n.Scope, n.Kind, n.ID, n.Confirmed().UTC().Format(day), title}, "\t")
}
