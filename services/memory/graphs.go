package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/redact"
	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/graph/embedded"
	neo4jstore "github.com/praetorhq/praetor/services/memory/graph/neo4j"
)

// Environment variables of the Neo4j graph (praetor serve).
const (
	EnvNeo4jURI      = "NEO4J_URI"
	EnvNeo4jUser     = "NEO4J_USER"
	EnvNeo4jPassword = "NEO4J_PASSWORD"
	EnvNeo4jDatabase = "NEO4J_DATABASE"
)

// GraphFile is the embedded graph's file in a praetor dev data directory.
const GraphFile = "memory.db"

// GraphSettings choose the graph: the embedded one in a directory (praetor
// dev), or Neo4j.
type GraphSettings struct {
	// Dir, when set, keeps the graph embedded in Dir/memory.db; the Neo4j
	// fields are then ignored.
	Dir string
	// Neo4jURI is the Bolt URI of Neo4j (NEO4J_URI), used without Dir.
	Neo4jURI string
	// Neo4jUser and Neo4jPassword authenticate (NEO4J_USER, NEO4J_PASSWORD);
	// an empty password connects without authentication.
	Neo4jUser, Neo4jPassword string
	// Neo4jDatabase is the database (NEO4J_DATABASE); empty: the default.
	Neo4jDatabase string
	// URISetting names the setting Neo4jURI came from, for the error when
	// Neo4j does not answer. Default NEO4J_URI.
	URISetting string
}

// SettingError names the setting that is wrong and what to do about it.
type SettingError struct {
	Variable string
	Problem  string
}

func (e *SettingError) Error() string { return "memory: " + e.Variable + ": " + e.Problem }

// StoreFlags are the flags of a praetor memory command that choose a
// memory's stores: its graph gs, and its relational store at databaseURL,
// or under dataDir when databaseURL is empty. The URLs' secrets are masked
// (redact.URL), for the flags to be shown; the one who runs the command
// puts them back.
func StoreFlags(gs GraphSettings, databaseURL, dataDir string) string {
	var b strings.Builder
	if gs.Neo4jURI != "" {
		b.WriteString(" --neo4j-uri " + redact.URL(gs.Neo4jURI))
	}
	if databaseURL != "" {
		b.WriteString(" --database-url " + redact.URL(databaseURL))
	}
	if gs.Neo4jURI == "" || databaseURL == "" {
		b.WriteString(" --data-dir " + cmp.Or(dataDir, gs.Dir))
	}
	return b.String()
}

// GraphSettingsFromEnv returns the graph of a node: embedded under dataDir
// in dev, else Neo4j from NEO4J_URI (with NEO4J_USER, NEO4J_PASSWORD,
// NEO4J_DATABASE), whose absence is a *SettingError naming it.
func GraphSettingsFromEnv(dev bool, dataDir string, lookup func(string) (string, bool)) (GraphSettings, error) {
	if dev {
		if dataDir == "" {
			return GraphSettings{}, &SettingError{Variable: "data-dir", Problem: "empty: praetor dev keeps the memory graph in <data-dir>/" + GraphFile}
		}
		return GraphSettings{Dir: dataDir}, nil
	}
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	s := GraphSettings{Neo4jURI: get(EnvNeo4jURI), Neo4jUser: get(EnvNeo4jUser), Neo4jPassword: get(EnvNeo4jPassword),
		Neo4jDatabase: get(EnvNeo4jDatabase)}
	if s.Neo4jURI == "" {
		return GraphSettings{}, &SettingError{Variable: EnvNeo4jURI, Problem: "not set: the memory service keeps its graph in Neo4j; " +
			"set NEO4J_URI (e.g. bolt://neo4j:7687, with NEO4J_USER and NEO4J_PASSWORD), or run praetor dev for the embedded graph"}
	}
	return s, nil
}

// Where says which graph the settings choose, for logs and messages.
func (s GraphSettings) Where() string {
	if s.Dir != "" {
		return "embedded graph " + filepath.Join(s.Dir, GraphFile)
	}
	return "Neo4j " + s.Neo4jURI
}

// OpenGraph opens the graph of s and returns it with its closer. Neo4j
// must answer: its schema is created at open.
func OpenGraph(ctx context.Context, s GraphSettings, log *slog.Logger) (graph.Store, func(context.Context) error, error) {
	if s.Dir != "" {
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("memory: graph directory: %w", err)
		}
		g, err := embedded.Open(ctx, embedded.Config{Path: filepath.Join(s.Dir, GraphFile), Logger: log})
		if err != nil {
			return nil, nil, err
		}
		return g, func(context.Context) error { return g.Close() }, nil
	}
	g, err := neo4jstore.Open(ctx, neo4jstore.Config{URI: s.Neo4jURI, User: s.Neo4jUser, Password: s.Neo4jPassword,
		Database: s.Neo4jDatabase, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("%w (check %s)", err, cmp.Or(s.URISetting, EnvNeo4jURI))
	}
	return g, g.Close, nil
}

// UnavailableGraph is a graph that did not answer at open: every call
// fails with Err, which wraps graph.ErrUnavailable, so that a save through
// it is kept pending_retry for the memory service of a running node, as
// any save the graph cannot take now. Reads fail with Err.
type UnavailableGraph struct {
	Err error
}

var _ graph.Store = UnavailableGraph{}

func (u UnavailableGraph) err() error {
	if errors.Is(u.Err, graph.ErrUnavailable) {
		return u.Err
	}
	return fmt.Errorf("%w: %w", graph.ErrUnavailable, u.Err)
}

// Read fails with u.Err.
func (u UnavailableGraph) Read(context.Context, string, func(context.Context, graph.ReadTx) error) error {
	return u.err()
}

// Write fails with u.Err.
func (u UnavailableGraph) Write(context.Context, string, graph.Scope, func(context.Context, graph.WriteTx) error) error {
	return u.err()
}

// EnsureProject fails with u.Err.
func (u UnavailableGraph) EnsureProject(context.Context, string, string) error { return u.err() }

// EnsureFocusArea fails with u.Err.
func (u UnavailableGraph) EnsureFocusArea(context.Context, string, string, string) error {
	return u.err()
}

// Link fails with u.Err.
func (u UnavailableGraph) Link(context.Context, string, graph.Rel, string, string) error {
	return u.err()
}

// MarkHygiene fails with u.Err.
func (u UnavailableGraph) MarkHygiene(context.Context, string, graph.Area, time.Time) error {
	return u.err()
}
