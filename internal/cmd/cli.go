// Package cmd is outboxtop's command line: it parses flags (pflag), applies the
// configuration precedence, and dispatches to the packages that do the work.
//
// Precedence, for every flag: the flag itself, then OUTBOXTOP_<FLAG> (upper case,
// dashes as underscores), then the ecosystem's variable where one exists
// (DATABASE_URL and libpq's PG* for the database, KAFKA_BROKERS for Kafka), then
// the default.
//
// Exit codes: 0 success; 1 a runtime failure (database or broker unreachable, an
// action failed); 2 bad usage (unknown command or flag, invalid value, a command
// that is not built yet). status alone follows the monitoring-plugin convention
// instead: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, and 64 for bad usage.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/termtext"
	"github.com/outboxtop/outboxtop/relay"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Version is the binary's version, set at build time with
// -ldflags "-X github.com/outboxtop/outboxtop/internal/cmd.Version=…".
var Version = "dev"

// IO is what a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// Getenv reads the environment; os.Getenv unless a test replaces it.
	Getenv func(string) string
	// flags, when set, collects the flag sets a command builds (the flags
	// reference).
	flags *flagSets
}

// usageError is bad input from the user: printed with the command's usage hint and
// exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, io IO) error
}

func commands() []command {
	return []command{
		{"console", "the console with the relay embedded (the same as no command)", runConsoleCommand},
		{"relay", "the relay alone, for production (also: outboxtop --headless)", runRelay},
		{"watch", "the console beside relays that run elsewhere: it relays nothing (also: --no-relay)", runWatch},
		{"migrate", "apply the schema migrations and exit", runMigrate},
		{"status", "one-shot snapshot of the outbox; a monitoring check (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)", runStatus},
		{"events", "list events in a state, with filters", runEvents},
		{"trace", "follow one event: its row, failed tries and audit rows, its record read back from Kafka, the inboxes that applied it", runTrace},
		{"audit", "list the operators' actions (outbox_audit), newest first, with filters", runAudit},
		{"retry", "make failed or scheduled events ready now", runRetry},
		{"reset-lease", "make leased events claimable now", runResetLease},
		{"park", "mark events failed on purpose, with a reason", runPark},
		{"skip", "move the failed or scheduled event that blocks an aggregate to the archive, unpublished, so the rest flows", runSkip},
		{"archive", "move published events to outbox_event_archive", runArchive},
		{"replay", "put archived or published events back into the outbox", runReplay},
		{"correct", "replace a failed event by a copy with a corrected payload, in its place in the aggregate's order, audited", runCorrect},
		{"terminate-backend", "end the backend holding back the xmin horizon (pg_terminate_backend), audited", runTerminateBackend},
		{"demo", "the embedded demo: throwaway PostgreSQL, in-process Kafka, simulated orders, the console", runDemo},
		{"serve", "serve the console over SSH", runServe},
		{"grants", "print the least-privilege GRANTs for a relay, console or operator role", runGrants},
		{"version", "print the version", runVersion},
		{"help", "show this help; 'help flags': every command's flags, as Markdown", nil},
	}
}

// Run runs outboxtop with args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	name, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	var run func(context.Context, []string, IO) error
	switch name {
	case "":
		run = runConsole
	case "help":
		switch {
		case len(rest) == 0:
			printUsage(stdio.Out)
		case len(rest) == 1 && rest[0] == "flags":
			writeFlagReference(stdio.Out)
		default:
			fmt.Fprintf(stdio.Err, "outboxtop: help takes nothing or 'flags', not %q\n", strings.Join(rest, " "))
			return ExitUsage
		}
		return ExitOK
	default:
		for _, c := range commands() {
			if c.name == name {
				run = c.run
			}
		}
		if run == nil {
			fmt.Fprintf(stdio.Err, "outboxtop: unknown command %q (see 'outboxtop help')\n", name)
			return ExitUsage
		}
	}
	// A report's lines are capped here, once for every command; the console, the
	// demo and serve draw on a terminal or log, not in lines.
	var capped *lineCapWriter
	if name != "" && name != "demo" && name != "serve" {
		capped = newLineCapWriter(stdio.Out, maxLineChars)
		stdio.Out = capped
	}
	err := run(ctx, rest, stdio)
	if capped != nil {
		capped.endLine()
	}
	if errors.As(err, new(*relay.ConfigError)) && !errors.As(err, new(usageError)) {
		// A setting the relay or its Kafka client refused, wherever it was
		// found: bad usage, said in the flags' names.
		err = usagef("%v", inFlagWords(err))
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, pflag.ErrHelp):
		return ExitOK
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stdio.Err, "outboxtop: %v\n", err)
		return ExitUsage
	case errors.As(err, new(exitError)):
		var e exitError
		errors.As(err, &e)
		if e.msg != "" {
			fmt.Fprintf(stdio.Err, "outboxtop: %s\n", e.msg)
		}
		return e.code
	default:
		fmt.Fprintf(stdio.Err, "outboxtop: %s\n", termtext.OneLine(err.Error()))
		return ExitFailure
	}
}

// exitError ends a command with a specific code (for example status's 1 on a
// crossed threshold) and an optional message.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func printUsage(w io.Writer) {
	fmt.Fprint(w, `outboxtop — the Transactional Outbox on PostgreSQL and Kafka: relay and on-call console.

Usage:
  outboxtop [flags]             the console with the relay embedded (outboxtop console)
  outboxtop COMMAND [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Every flag can also be set as OUTBOXTOP_<FLAG> (for --max-attempts: OUTBOXTOP_MAX_ATTEMPTS).
The database comes from --dsn, else DATABASE_URL, else libpq's PG* variables; Kafka from
--brokers, else KAFKA_BROKERS. 'outboxtop COMMAND --help' lists a command's flags.

Exit codes: 0 ok, 1 runtime failure, 2 bad usage; status: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN, 64 bad usage.
`)
}

func runVersion(_ context.Context, args []string, io IO) error {
	fs := newFlagSet("version", io)
	if err := parse(fs, args, io); err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "outboxtop %s\n", Version)
	return nil
}
