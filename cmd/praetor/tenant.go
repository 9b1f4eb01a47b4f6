package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
)

// tenantCommand manages tenants and their API tokens: how a serve
// deployment gets the credentials its gateway accepts (praetor dev makes
// its own local tenant and token at start).
func tenantCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var databaseURL, dataDir, tenant string
	var asJSON, migrate bool
	fs := ff.NewFlagSet("tenant").SetParent(parent)
	fs.StringVar(&databaseURL, 0, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL); empty: the SQLite store of --data-dir")
	fs.StringVar(&dataDir, 0, "data-dir", "./.praetor", "directory of the praetor dev data (used without --database-url)")
	fs.StringVar(&tenant, 0, "tenant", "", "the tenant: 1-128 of [A-Za-z0-9_-] (add, token)")
	fs.BoolVarDefault(&migrate, 0, "migrate", false, "apply pending migrations first")
	fs.BoolVarDefault(&asJSON, 0, "json", false, "print JSON instead of text")
	cmd := &ff.Command{
		Name:      "tenant",
		Usage:     "praetor tenant <add|list|token> [FLAGS]",
		ShortHelp: "tenants and their API tokens (the credentials of the HTTP API)",
		LongHelp: "Every row of data carries its tenant; an API token sees only its tenant's sessions.\n" +
			"A token is printed once, when issued; only its SHA-256 is stored. The database must be\n" +
			"migrated (praetor migrate).",
		Flags: fs,
	}
	// open connects to the store of the flags, migrated.
	open := func(ctx context.Context) (store.DB, error) {
		db, err := node.OpenStore(ctx, databaseURL == "", dataDir, databaseURL)
		if err != nil {
			return nil, err
		}
		if migrate {
			_, err = store.Migrate(ctx, db)
		} else {
			err = requireMigrated(ctx, db)
		}
		if err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	printJSON := func(v any) error {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}

	var name string
	addFS := ff.NewFlagSet("add").SetParent(fs)
	addFS.StringVar(&name, 0, "name", "", "the tenant's name, for people (default: its id)")
	listFS := ff.NewFlagSet("list").SetParent(fs)
	cmd.Subcommands = []*ff.Command{
		{
			Name: "add", Usage: "praetor tenant add --tenant ID [--name NAME]", ShortHelp: "add a tenant",
			Flags: addFS,
			Exec: func(ctx context.Context, args []string) error {
				if err := needTenant(tenant, args); err != nil {
					return err
				}
				db, err := open(ctx)
				if err != nil {
					return err
				}
				defer db.Close()
				t := store.Tenant{ID: tenant, Name: cmpOr(name, tenant)}
				if err := store.CreateTenant(ctx, db, t); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "tenant %s added; praetor tenant token issue --tenant %s --name NAME gives it an API token\n", t.ID, t.ID)
				return nil
			},
		},
		{
			Name: "list", Usage: "praetor tenant list", ShortHelp: "list the tenants",
			Flags: listFS,
			Exec: func(ctx context.Context, args []string) error {
				if err := noArgs("tenant list", args); err != nil {
					return err
				}
				db, err := open(ctx)
				if err != nil {
					return err
				}
				defer db.Close()
				ts, err := store.ListTenants(ctx, db)
				if err != nil {
					return err
				}
				if asJSON {
					type row struct {
						ID        string    `json:"id"`
						Name      string    `json:"name"`
						CreatedAt time.Time `json:"created_at"`
					}
					out := []row{}
					for _, t := range ts {
						out = append(out, row{t.ID, t.Name, t.CreatedAt})
					}
					return printJSON(out)
				}
				w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tCREATED")
				for _, t := range ts {
					fmt.Fprintf(w, "%s\t%s\t%s\n", t.ID, store.PrintableName(t.Name), t.CreatedAt.UTC().Format(time.RFC3339))
				}
				return w.Flush()
			},
		},
		tenantTokenCommand(g, fs, &tenant, open, printJSON, &asJSON),
	}
	return cmd
}

func tenantTokenCommand(g *globals, parent *ff.FlagSet, tenant *string, open func(context.Context) (store.DB, error),
	printJSON func(any) error, asJSON *bool) *ff.Command {
	fs := ff.NewFlagSet("token").SetParent(parent)
	cmd := &ff.Command{
		Name:      "token",
		Usage:     "praetor tenant token <issue|list|revoke> --tenant ID [FLAGS]",
		ShortHelp: "a tenant's API tokens",
		Flags:     fs,
	}
	var name string
	var ttl time.Duration
	issueFS := ff.NewFlagSet("issue").SetParent(fs)
	issueFS.StringVar(&name, 0, "name", "", "who or what uses the token, e.g. chat-gateway (required)")
	issueFS.DurationVar(&ttl, 0, "ttl", 0, "how long the token is valid (0: until revoked)")

	cmd.Subcommands = []*ff.Command{
		{
			Name: "issue", Usage: "praetor tenant token issue --tenant ID --name NAME [--ttl 720h]", ShortHelp: "issue an API token and print it once, alone on stdout",
			Flags: issueFS,
			Exec: func(ctx context.Context, args []string) error {
				if err := needTenant(*tenant, args); err != nil {
					return err
				}
				if name == "" {
					return settingErr("name", "say who or what uses the token, e.g. --name chat-gateway")
				}
				if ttl < 0 {
					return settingErr("ttl", "%s is negative; give a duration such as 720h, or 0 for none", ttl)
				}
				db, err := open(ctx)
				if err != nil {
					return err
				}
				defer db.Close()
				var expires *time.Time
				if ttl > 0 {
					e := time.Now().Add(ttl)
					expires = &e
				}
				secret, tok, err := store.CreateToken(ctx, db, *tenant, name, expires)
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(map[string]any{"token": secret, "id": tok.ID, "tenant_id": tok.TenantID,
						"name": tok.Name, "expires_at": tok.ExpiresAt})
				}
				fmt.Fprintln(g.stdout, secret)
				until := "until revoked"
				if tok.ExpiresAt != nil {
					until = "until " + tok.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(g.stderr, "API token %s of tenant %s, valid %s; it is not shown again\n", tok.ID, tok.TenantID, until)
				return nil
			},
		},
		{
			Name: "list", Usage: "praetor tenant token list --tenant ID", ShortHelp: "list a tenant's API tokens (never the secrets)",
			Flags: ff.NewFlagSet("list").SetParent(fs),
			Exec: func(ctx context.Context, args []string) error {
				if err := needTenant(*tenant, args); err != nil {
					return err
				}
				db, err := open(ctx)
				if err != nil {
					return err
				}
				defer db.Close()
				if _, err := store.GetTenant(ctx, db, *tenant); err != nil {
					return fmt.Errorf("tenant %s: %w", *tenant, err)
				}
				toks, err := store.ListTokens(ctx, db, *tenant)
				if err != nil {
					return err
				}
				if *asJSON {
					type row struct {
						ID        string     `json:"id"`
						Name      string     `json:"name"`
						CreatedAt time.Time  `json:"created_at"`
						ExpiresAt *time.Time `json:"expires_at,omitempty"`
						RevokedAt *time.Time `json:"revoked_at,omitempty"`
					}
					out := []row{}
					for _, t := range toks {
						out = append(out, row{t.ID, t.Name, t.CreatedAt, t.ExpiresAt, t.RevokedAt})
					}
					return printJSON(out)
				}
				w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tCREATED\tSTATE")
				now := time.Now()
				for _, t := range toks {
					state := "valid"
					switch {
					case t.RevokedAt != nil:
						state = "revoked " + t.RevokedAt.UTC().Format(time.RFC3339)
					case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
						state = "expired " + t.ExpiresAt.UTC().Format(time.RFC3339)
					case t.ExpiresAt != nil:
						state = "valid until " + t.ExpiresAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, store.PrintableName(t.Name), t.CreatedAt.UTC().Format(time.RFC3339), state)
				}
				return w.Flush()
			},
		},
		{
			Name: "revoke", Usage: "praetor tenant token revoke --tenant ID TOKEN_ID", ShortHelp: "revoke an API token: it stops authenticating at once",
			Flags: ff.NewFlagSet("revoke").SetParent(fs),
			Exec: func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return errors.New("give one token id after the flags (praetor tenant token list --tenant ID shows them)")
				}
				if err := needTenant(*tenant, nil); err != nil {
					return err
				}
				db, err := open(ctx)
				if err != nil {
					return err
				}
				defer db.Close()
				if err := store.RevokeToken(ctx, db, *tenant, args[0], time.Now()); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "API token %s of tenant %s revoked\n", args[0], *tenant)
				return nil
			},
		},
	}
	return cmd
}

// needTenant checks --tenant, and that nothing follows the flags (a flag
// after a positional argument would be taken as an argument).
func needTenant(tenant string, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q: give flags only, before any argument", args)
	}
	if !contracts.ValidToken(tenant) {
		return settingErr("tenant", "%q: want 1-128 of [A-Za-z0-9_-]", tenant)
	}
	return nil
}
