package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/peterbourgon/ff/v4"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/store"
)

// minInboxAge is the youngest inbox row prune may delete: past a
// redelivery's horizon (the duplicate window, MaxDeliver retries with their
// backoff) by far, whatever the settings.
const minInboxAge = 24 * time.Hour

// inboxCommand manages the services' inboxes: the rows that make a
// redelivered event a no-op, kept until an operator prunes them.
func inboxCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	var databaseURL, dataDir string
	var olderThan time.Duration
	fs := ff.NewFlagSet("inbox").SetParent(parent)
	fs.StringVar(&databaseURL, 0, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL); empty: the SQLite store of --data-dir")
	fs.StringVar(&dataDir, 0, "data-dir", "./.praetor", "directory of the praetor dev data (used without --database-url)")
	pruneFS := ff.NewFlagSet("prune").SetParent(fs)
	pruneFS.DurationVar(&olderThan, 0, "older-than", 30*24*time.Hour, "delete the rows of events handled longer ago than this (at least 24h)")
	cmd := &ff.Command{
		Name:      "inbox",
		Usage:     "praetor inbox prune [--older-than DURATION] [--database-url URL | --data-dir DIR]",
		ShortHelp: "the services' inboxes: prune the rows of events handled long ago",
		LongHelp: "Every handled event leaves an inbox row, so that its redelivery has no second effect; they\n" +
			"are kept until pruned. An event that comes again after its row is gone is handled again: keep\n" +
			"rows well past the streams' duplicate window, the consumers' retries, and the age of any\n" +
			"dead letter you may still redrive (praetor dlq list).",
		Flags: fs,
	}
	cmd.Subcommands = []*ff.Command{{
		Name: "prune", Usage: "praetor inbox prune [--older-than DURATION]", ShortHelp: "delete the inbox rows of events handled long ago",
		Flags: pruneFS,
		Exec: func(ctx context.Context, args []string) error {
			if err := noArgs("inbox prune", args); err != nil {
				return err
			}
			if olderThan < minInboxAge {
				return settingErr("older-than", "%s is too recent: an event handled since may still be redelivered; give %s or more",
					olderThan, minInboxAge)
			}
			db, err := node.OpenStore(ctx, databaseURL == "", dataDir, databaseURL)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := requireMigrated(ctx, db); err != nil {
				return err
			}
			before := time.Now().Add(-olderThan).UTC()
			n, err := store.PruneInbox(ctx, db, before)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "pruned %d inbox %s of events handled before %s\n", n, plural(int(n), "row", "rows"),
				before.Format(time.RFC3339))
			return nil
		},
	}}
	return cmd
}
