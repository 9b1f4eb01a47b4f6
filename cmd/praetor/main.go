// Command praetor runs Praetor: every service in one process for
// development (praetor dev), the named services against NATS and PostgreSQL
// in production (praetor serve), and the tools around them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/peterbourgon/ff/v4"
	"github.com/peterbourgon/ff/v4/ffhelp"

	"github.com/praetorhq/praetor/internal/node"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ec exitCoder
	switch {
	case err == nil:
	case errors.Is(err, ff.ErrHelp), errors.Is(err, ff.ErrNoExec):
		os.Exit(0)
	case errors.As(err, &ec) && !strings.Contains(err.Error(), ":"):
		os.Exit(ec.ExitCode()) // the command printed why
	default:
		fmt.Fprintln(os.Stderr, "praetor:", err)
		os.Exit(exitCode(err))
	}
}

// exitCoder lets a command choose its exit status (praetor validate exits 1
// on invalid configuration without an extra error line).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// globals are the settings every command has.
type globals struct {
	logLevel  string
	logFormat string
	stdout    io.Writer
	stderr    io.Writer
}

func (g *globals) logger(defaultFormat string) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, settingErr("log-level", "%q is not one of debug, info, warn, error", g.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format := cmpOr(g.logFormat, defaultFormat); format {
	case "text":
		return slog.New(slog.NewTextHandler(g.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(g.stderr, opts)), nil
	default:
		return nil, settingErr("log-format", "%q is not text or json", format)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	g := &globals{stdout: stdout, stderr: stderr}
	rootFlags := ff.NewFlagSet("praetor")
	rootFlags.StringVar(&g.logLevel, 0, "log-level", "info", "log level: debug, info, warn, error")
	rootFlags.StringVar(&g.logFormat, 0, "log-format", "", "log format: text or json (default: text for dev and tools, json for serve)")
	root := &ff.Command{
		Name:      "praetor",
		Usage:     "praetor [FLAGS] <COMMAND> ...",
		ShortHelp: "run configuration-defined LLM agent engines over NATS JetStream",
		LongHelp: strings.TrimSpace(`
Every flag can also be set with an environment variable: PRAETOR_ and the
flag's name in capitals with '-' as '_', e.g. --http-addr as PRAETOR_HTTP_ADDR.
NATS_URL, DATABASE_URL, OPENAI_API_KEY and OPENAI_BASE_URL are read as well.`),
		Flags: rootFlags,
	}
	root.Subcommands = []*ff.Command{
		devCommand(g, rootFlags),
		serveCommand(g, rootFlags),
		migrateCommand(g, rootFlags),
		replayCommand(g, rootFlags),
		dlqCommand(g, rootFlags),
		validateCommand(g, rootFlags),
		chatCommand(g, rootFlags),
		workflowCommand(g, rootFlags),
		memoryCommand(g, rootFlags),
		tenantCommand(g, rootFlags),
		versionCommand(g, rootFlags),
	}
	err := root.Parse(args, ff.WithEnvVarPrefix("PRAETOR"))
	if errors.Is(err, ff.ErrHelp) || (err == nil && root.GetSelected() == root) {
		fmt.Fprintln(stdout, ffhelp.Command(root.GetSelected()))
		if err == nil {
			return ff.ErrNoExec
		}
		return err
	}
	if err != nil {
		sel := root.GetSelected()
		fmt.Fprintf(stderr, "%s\n\n", ffhelp.Command(sel))
		return err
	}
	return root.Run(ctx)
}

func versionCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	return &ff.Command{
		Name:      "version",
		Usage:     "praetor version",
		ShortHelp: "print the version",
		Flags:     ff.NewFlagSet("version").SetParent(parent),
		Exec: func(context.Context, []string) error {
			fmt.Fprintln(g.stdout, "praetor", buildVersion())
			return nil
		},
	}
}

func buildVersion() string {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
		v += " " + info.GoVersion
	}
	return v
}

func settingErr(name, format string, args ...any) error {
	return &node.SettingError{Setting: name, Problem: fmt.Sprintf(format, args...)}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
