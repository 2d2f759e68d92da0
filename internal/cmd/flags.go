package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

func newFlagSet(name string, io IO) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	io.flags.add(fs)
	fs.SetOutput(io.Err)
	fs.SortFlags = false
	usage := "outboxtop [flags]"
	if name != "" {
		usage = "outboxtop " + name + " [flags]"
	}
	fs.Usage = func() { printFlags(io.Err, fs, "Usage: "+usage+"\n", false) }
	fs.Bool(helpAll, false, "every flag, each group under its heading")
	return fs
}

// helpAll is the flag every command has beside --help: --help fits one 80×40
// screen (a command's own flags, one line per group of the rest), --help-all
// shows every flag.
const helpAll = "help-all"

// flagGroups fold the flags many commands share under a heading, in this
// order; a flag in none is the command's own and always shown.
var flagGroups = []struct {
	title string
	flags []string
}{
	{"Kafka client, TLS and SASL", []string{"kafka-client-id", "kafka-tls", "kafka-tls-ca", "kafka-tls-cert", "kafka-tls-key",
		"kafka-tls-insecure-skip-verify", "kafka-sasl-mechanism", "kafka-sasl-user", "kafka-sasl-password-file",
		"kafka-compression", "kafka-max-message-bytes", "kafka-auto-create-topics", "kafka-timeout"}},
	{"Relay topics and order", []string{"topic-template", "topics", "ordering", "layout", "key", "cloudevents", "cloudevents-source"}},
	{"Relay tuning", []string{"batch-size", "in-flight", "lease", "publish-timeout", "max-attempts", "backoff-base",
		"backoff-max", "poll-interval", "lock-timeout", "sweep-interval", "heartbeat-interval", "shutdown-timeout"}},
	{"Housekeeping (archive and retention)", []string{"archive-after", "archive-retention", "retention-interval"}},
	{"Consumer lag", []string{"groups", "exclude-groups", "lag-topics", "lag-interval"}},
	{"Thresholds (monitoring check)", []string{"warn-oldest", "crit-oldest", "warn-failed", "crit-failed", "warn-blocked",
		"crit-blocked", "max-oldest", "max-failed", "warn-no-relay", "crit-no-relay", "warn-horizon", "crit-horizon",
		"warn-lag", "crit-lag", "max-lag", "warn-lag-age", "crit-lag-age"}},
	{"Paced runs (--rate N/s, --max N, --resume RUN)", []string{"rate", "max", "chunk", "resume"}},
	{"Logging and connection", []string{"log-format", "log-level", "connect-timeout"}},
	{"Fleet target", []string{"fleet", "outbox"}},
}

// ownFlag marks a flag of a group that a command shows with its own flags:
// keepOwn.
const ownFlag = "outboxtop-own"

// keepOwn shows names among fs's own flags in --help, though a group holds them.
func keepOwn(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, ownFlag, []string{"true"}); err != nil {
			panic(err) // a flag this command does not have: a programming error
		}
	}
}

// printFlags writes head, then fs's flags in 80 columns: the command's own,
// then each group, folded to one line unless all.
func printFlags(w io.Writer, fs *pflag.FlagSet, head string, all bool) {
	grouped := map[string]int{}
	for i, g := range flagGroups {
		for _, n := range g.flags {
			grouped[n] = i + 1
		}
	}
	sections := make([][]*pflag.Flag, len(flagGroups)+1)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == helpAll {
			return
		}
		g := grouped[f.Name]
		if _, own := f.Annotations[ownFlag]; own {
			g = 0
		}
		sections[g] = append(sections[g], f)
	})
	fmt.Fprint(w, head)
	if len(sections[0]) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range sections[0] {
			printFlag(w, f)
		}
	}
	folded := false
	for i, g := range flagGroups {
		flags := sections[i+1]
		if len(flags) == 0 {
			continue
		}
		if !all {
			if !folded {
				fmt.Fprintln(w, "\nMore flags (--help-all shows them):")
				folded = true
			}
			fmt.Fprintf(w, "  %s: %d flags\n", g.title, len(flags))
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, f := range flags {
			printFlag(w, f)
		}
	}
	fmt.Fprintln(w, "\nEvery flag can also be set as OUTBOXTOP_<FLAG> (--dsn: OUTBOXTOP_DSN).")
}

// helpWidth is the screen --help fits; a flag's name takes helpColumn of it.
const (
	helpWidth  = 80
	helpColumn = 30
)

// printFlag writes one flag: its name and value type, then its usage and
// default wrapped beside it (below it when the name is too long).
func printFlag(w io.Writer, f *pflag.Flag) {
	name := "  --" + f.Name
	if f.Shorthand != "" {
		name = "  -" + f.Shorthand + ", --" + f.Name
	}
	if t := f.Value.Type(); t != "bool" {
		name += " " + t
	}
	text := f.Usage
	if !isZeroDefault(f) {
		d := f.DefValue
		if f.Value.Type() == "string" {
			d = fmt.Sprintf("%q", d)
		}
		text += " (default " + d + ")"
	}
	pad := strings.Repeat(" ", helpColumn)
	line := name
	if len(name) >= helpColumn-1 {
		fmt.Fprintln(w, name)
		line = pad
	} else {
		line += strings.Repeat(" ", helpColumn-len(name))
	}
	width := helpWidth - helpColumn
	for _, word := range strings.Fields(text) {
		if len(line) > helpColumn && len([]rune(line))+1+len([]rune(word)) > helpColumn+width {
			fmt.Fprintln(w, line)
			line = pad
		}
		if len(line) > helpColumn {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}

func isZeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
		return true
	}
	return false
}

// EnvName is the environment variable that sets flag name: OUTBOXTOP_ plus the
// name upper-cased with dashes as underscores.
func EnvName(flag string) string {
	return "OUTBOXTOP_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// parse parses args, then fills every flag not given on the command line from its
// OUTBOXTOP_<FLAG> variable. Positional arguments are refused: no command takes any.
func parse(fs *pflag.FlagSet, args []string, io IO) error {
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return err
		}
		return usagef("%v (see 'outboxtop %s --help')", err, fs.Name())
	}
	if all, _ := fs.GetBool(helpAll); all {
		printFlags(io.Err, fs, "Usage: outboxtop "+strings.TrimSpace(fs.Name()+" [flags]")+"\n", true)
		return pflag.ErrHelp
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'outboxtop %s --help')", fs.Arg(0), fs.Name())
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == helpAll {
			return
		}
		v := io.Getenv(EnvName(f.Name))
		if v == "" {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = usagef("invalid %s=%q: %v", EnvName(f.Name), v, serr)
		}
	})
	// A value that depends on others (the fleet's outbox) is resolved once
	// all of them are read.
	fs.VisitAll(func(f *pflag.Flag) {
		if a, ok := f.Value.(interface{ afterParse(IO) error }); ok && err == nil {
			err = a.afterParse(io)
		}
	})
	return err
}
