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
	"slices"
	"strings"
	"syscall"

	"github.com/peterbourgon/ff/v4"
	"github.com/peterbourgon/ff/v4/ffhelp"

	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/internal/redact"
	"github.com/praetorhq/praetor/internal/textdist"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var (
		ec    exitCoder
		usage usageError
	)
	switch {
	case err == nil:
	case errors.Is(err, ff.ErrHelp), errors.Is(err, ff.ErrNoExec):
		os.Exit(0)
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "praetor:", err)
		os.Exit(usage.ExitCode())
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
	root := rootCommand(g)
	err := root.Parse(args, ff.WithEnvVarPrefix("PRAETOR"))
	if errors.Is(err, ff.ErrHelp) {
		fmt.Fprintln(stdout, commandHelp(root.GetSelected()))
		return err
	}
	if err != nil {
		sel := root.GetSelected()
		fmt.Fprintf(stderr, "%s\n\n", commandHelp(sel))
		return err
	}
	if err := checkArgs(root, args); err != nil {
		return err
	}
	// Checked for every command, those that log little included.
	if _, err := g.logger("text"); err != nil {
		return err
	}
	if sel := root.GetSelected(); len(sel.Subcommands) > 0 {
		// A command of commands given none (praetor alone, praetor
		// tenant): as for a command misspelt, the line says nothing to
		// do, so a script that ran it by mistake fails rather than
		// succeeds. checkArgs refused any argument.
		fmt.Fprintf(stderr, "%s\n\n", commandHelp(sel))
		msg := "no command given"
		if sel != root {
			msg += " to " + strings.Join(commandPath(root, sel), " ")
		}
		return usageError{msg + " (the commands: " + strings.Join(subcommandNames(sel), ", ") + ")"}
	}
	return root.Run(ctx)
}

// rootCommand is praetor and every command under it.
func rootCommand(g *globals) *ff.Command {
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
NATS_URL, DATABASE_URL, OPENAI_API_KEY and OPENAI_BASE_URL are read as well, except
by memory and workflow, whose stores are given as flags (or PRAETOR_DATABASE_URL,
PRAETOR_NEO4J_URI): a shell's DATABASE_URL does not move them off their defaults.`),
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
		inboxCommand(g, rootFlags),
		versionCommand(g, rootFlags),
	}
	return root
}

// subcommandNames are the names of cmd's subcommands, in their order.
func subcommandNames(cmd *ff.Command) []string {
	names := make([]string, len(cmd.Subcommands))
	for i, c := range cmd.Subcommands {
		names[i] = c.Name
	}
	return names
}

// commandHelp is ffhelp.Command but for the flags' defaults: a flag whose
// usage says what an empty value does ("default: a local praetor dev") and
// that has a value to start from (--nats-url from NATS_URL) shows that
// value only, as its default; it would otherwise say both, the usage's
// default and the value's, which contradict each other. A default's
// secrets are masked (see helpFlag.GetDefault).
func commandHelp(cmd *ff.Command) ffhelp.Help {
	if selected := cmd.GetSelected(); selected != nil {
		cmd = selected
	}
	title := cmd.Name
	if cmd.ShortHelp != "" {
		title += " -- " + cmd.ShortHelp
	}
	help := ffhelp.Help{ffhelp.NewSection("COMMAND", title)}
	if cmd.Usage != "" {
		help = append(help, ffhelp.NewSection("USAGE", cmd.Usage))
	}
	if cmd.LongHelp != "" {
		help = append(help, ffhelp.NewUntitledSection(cmd.LongHelp))
	}
	if len(cmd.Subcommands) > 0 {
		help = append(help, ffhelp.NewSubcommandsSection(cmd.Subcommands))
	}
	if cmd.Flags != nil {
		help = append(help, ffhelp.NewFlagsSections(helpFlags{cmd.Flags})...)
	}
	return help
}

// helpFlags are a command's flags as its help shows them (see commandHelp).
type helpFlags struct{ ff.Flags }

func (h helpFlags) WalkFlags(fn func(ff.Flag) error) error {
	return h.Flags.WalkFlags(func(f ff.Flag) error { return fn(helpFlag{f}) })
}

type helpFlag struct{ ff.Flag }

// secretFlags are the flags whose value is a secret whole: their default,
// taken from the environment (--token from PRAETOR_TOKEN), shows as masked.
var secretFlags = map[string]bool{"token": true, "governance-token": true, "neo4j-password": true}

// GetDefault masks what a default holds of a secret: the password of a
// URL (--database-url from DATABASE_URL, --nats-url from NATS_URL), and
// a secret flag's whole value. The flag's value is unchanged.
func (f helpFlag) GetDefault() string {
	def := f.Flag.GetDefault()
	if name, _ := f.GetLongName(); secretFlags[name] && def != "" {
		return redact.Mask
	}
	return redact.URL(def)
}

// GetUsage drops the usage's own "; default: …" or "(default: …)" when
// the flag has a default value, which the help appends.
func (f helpFlag) GetUsage() string {
	usage := f.Flag.GetUsage()
	if f.GetDefault() == "" {
		return usage
	}
	if i := strings.LastIndex(usage, "; default: "); i >= 0 && !strings.Contains(usage[i:], ")") {
		return usage[:i]
	}
	if i := strings.LastIndex(usage, " (default: "); i >= 0 {
		if j := strings.Index(usage[i:], ")"); j >= 0 {
			return usage[:i] + usage[i+j+1:]
		}
	}
	return usage
}

// checkArgs refuses what the flag parser took as arguments but the user
// meant otherwise: a command name misspelt (praetor serv, which would
// print the help and succeed), and a flag after an argument (the parser
// stops at the first argument, so praetor chat exploration --url U would
// not read --url), unless after "--".
func checkArgs(root *ff.Command, raw []string) error {
	sel := root.GetSelected()
	path := strings.Join(commandPath(root, sel), " ")
	left := sel.Flags.GetArgs()
	if len(sel.Subcommands) > 0 && len(left) > 0 {
		names := subcommandNames(sel)
		msg := fmt.Sprintf("%q is not a command of %s", left[0], path)
		if near := closest(left[0], names); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		return usageError{fmt.Sprintf("%s (the commands: %s)", msg, strings.Join(names, ", "))}
	}
	if slices.Contains(raw, "--") || interspersedFlags[path] {
		return nil
	}
	for i, a := range left {
		if len(a) > 1 && a[0] == '-' && i > 0 {
			return usageError{fmt.Sprintf("the flag %s comes after the argument %q, and would be taken as an argument: "+
				"put flags first (%s [FLAGS] ARGS), or \"--\" before arguments that begin with '-'", a, left[0], path)}
		}
	}
	return nil
}

// interspersedFlags are the commands that read flags after their
// arguments themselves (interspersed, in workflow.go).
var interspersedFlags = map[string]bool{
	"praetor workflow run": true, "praetor workflow resume": true, "praetor workflow status": true, "praetor workflow validate": true,
}

// usageError is a command line that does not say what its user meant.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
func (usageError) ExitCode() int   { return 2 }

// noArgs refuses arguments to a command that takes none.
func noArgs(command string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return usageError{fmt.Sprintf("praetor %s takes no arguments, got %q: its settings are flags (praetor %s --help)", command, args, command)}
}

// commandPath returns the names from root down to cmd ("praetor",
// "tenant"), or nil when cmd is not under root.
func commandPath(root, cmd *ff.Command) []string {
	if root == cmd {
		return []string{root.Name}
	}
	for _, c := range root.Subcommands {
		if p := commandPath(c, cmd); p != nil {
			return append([]string{root.Name}, p...)
		}
	}
	return nil
}

// closest returns the name nearest to s (at most two edits away, or one it
// begins), or "".
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if strings.HasPrefix(n, s) && len(s) >= 2 {
			return n
		}
		if d := textdist.Levenshtein(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func versionCommand(g *globals, parent *ff.FlagSet) *ff.Command {
	return &ff.Command{
		Name:      "version",
		Usage:     "praetor version",
		ShortHelp: "print the version",
		Flags:     ff.NewFlagSet("version").SetParent(parent),
		Exec: func(_ context.Context, args []string) error {
			if err := noArgs("version", args); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, "praetor", buildVersion())
			return nil
		},
	}
}

// buildVersion is what praetor version prints: the release and the
// revision (releaseVersion), then the Go version.
func buildVersion() string {
	v := releaseVersion()
	if info, ok := debug.ReadBuildInfo(); ok {
		v += " " + info.GoVersion
	}
	return v
}

// releaseVersion is the build's version and revision, "v1.2.3 (0123456789ab)",
// the version label of praetor_build_info.
func releaseVersion() string {
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
