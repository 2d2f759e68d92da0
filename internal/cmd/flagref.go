package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// The flags reference (`outboxtop help flags`, and docs/flags.md, which is its
// output) comes from the flag sets the commands build: a flag, its variable,
// its default and its help are defined once, where the command registers it.

// flagSets collects the flag sets a command builds while it runs with --help,
// for the reference; nil everywhere else.
type flagSets struct{ sets []*pflag.FlagSet }

func (c *flagSets) add(fs *pflag.FlagSet) {
	if c != nil {
		c.sets = append(c.sets, fs)
	}
}

// writeFlagReference writes the reference of every command's flags as
// Markdown: the groups many commands share once, then each command's own flags
// and the groups it takes (a shared flag whose default or help differs in a
// command is listed with the command).
func writeFlagReference(w io.Writer) {
	type cmdFlags struct {
		name  string
		flags []*pflag.Flag
	}
	var all []cmdFlags
	for _, c := range append([]command{{name: "", run: runConsole}}, commands()...) {
		if c.run == nil {
			continue
		}
		col := &flagSets{}
		c.run(context.Background(), []string{"--help"}, IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard,
			Getenv: func(string) string { return "" }, flags: col})
		var flags []*pflag.Flag
		for _, fs := range col.sets {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && f.Name != helpAll {
					flags = append(flags, f)
				}
			})
		}
		all = append(all, cmdFlags{strings.TrimSpace("outboxtop " + c.name), flags})
	}
	group := map[string]int{}
	for i, g := range flagGroups {
		for _, n := range g.flags {
			group[n] = i
		}
	}
	// A group flag as most commands have it (the first of equals wins).
	shared := map[string]*pflag.Flag{}
	seen := map[string]map[[2]string]int{}
	for _, c := range all {
		for _, f := range c.flags {
			if _, ok := group[f.Name]; !ok {
				continue
			}
			if seen[f.Name] == nil {
				seen[f.Name] = map[[2]string]int{}
			}
			v := [2]string{f.Usage, f.DefValue}
			seen[f.Name][v]++
			if best := shared[f.Name]; best == nil || seen[f.Name][v] > seen[f.Name][[2]string{best.Usage, best.DefValue}] {
				shared[f.Name] = f
			}
		}
	}
	header := "| flag | environment | default | meaning |\n|---|---|---|---|\n"
	row := func(f *pflag.Flag) {
		def := "off"
		if !isZeroDefault(f) {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(w, "| `--%s` | `%s` | %s | %s |\n", f.Name, EnvName(f.Name), def, strings.ReplaceAll(f.Usage, "|", `\|`))
	}
	fmt.Fprint(w, "# Flags\n\n"+
		"Every command's flags, written by `outboxtop help flags` from the flags' own definitions\n"+
		"(a test fails when this page and the binary differ). A flag can also be set through\n"+
		"its environment variable; the flag wins, then the variable, then the ecosystem's\n"+
		"(`DATABASE_URL` and libpq's `PG*`, `KAFKA_BROKERS`), then the default.\n")
	fmt.Fprint(w, "\n## Shared flags\n")
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n### %s\n\n%s", g.title, header)
		for _, n := range g.flags {
			if f := shared[n]; f != nil {
				row(f)
			}
		}
	}
	for _, c := range all {
		fmt.Fprintf(w, "\n## %s\n\n", c.name)
		var own []*pflag.Flag
		takes := map[int]bool{}
		for _, f := range c.flags {
			g, inGroup := group[f.Name]
			if inGroup && f.Usage == shared[f.Name].Usage && f.DefValue == shared[f.Name].DefValue {
				takes[g] = true
				continue
			}
			own = append(own, f)
		}
		if len(own) == 0 && len(takes) == 0 {
			fmt.Fprintln(w, "No flags.")
			continue
		}
		if len(own) > 0 {
			fmt.Fprint(w, header)
			for _, f := range own {
				row(f)
			}
		}
		var groups []string
		for i, g := range flagGroups {
			if takes[i] {
				groups = append(groups, g.title)
			}
		}
		if len(groups) > 0 {
			if len(own) > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "And the shared flags: %s.\n", strings.Join(groups, "; "))
		}
	}
}
