package cmd

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The flag tables of docs/relay.md ("Relay flags" and "Configuration") say
// what `outboxtop relay` accepts: every flag a row names is one of its flags,
// every default a row gives in backticks is that flag's default (durations
// compared by value: `1m` is 1m0s), "off" is a flag's zero, and every flag
// of the command is in a table.
func TestRelayFlagTablesMatchTheFlags(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/relay.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := newFlagSet("relay", IO{Out: io.Discard, Err: io.Discard, Getenv: func(string) string { return "" }})
	new(consoleFlags).registerRelay(fs)

	text := string(doc)
	start := strings.Index(text, "## Relay flags")
	if start < 0 {
		t.Fatal(`docs/relay.md has no "## Relay flags" section`)
	}
	flagName := regexp.MustCompile("`--([a-z0-9-]+)`")
	quoted := regexp.MustCompile("^`([^`]*)`$")
	envName := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	documented := map[string]bool{}
	for _, line := range strings.Split(text[start:], "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		names := flagName.FindAllStringSubmatch(cells[0], -1)
		defCell := strings.TrimSpace(cells[1])
		if len(cells) == 4 { // | flag | environment | default | meaning |
			defCell = strings.TrimSpace(cells[2])
		}
		defs := strings.Split(defCell, ", ")
		for i, n := range names {
			name := n[1]
			documented[name] = true
			f := fs.Lookup(name)
			if f == nil {
				t.Errorf("docs/relay.md documents --%s, which `outboxtop relay` does not have", name)
				continue
			}
			def := defs[0]
			if len(defs) == len(names) {
				def = defs[i]
			}
			switch m := quoted.FindStringSubmatch(def); {
			case def == "off":
				if !isZeroDefault(f) {
					t.Errorf("--%s: docs say off, the flag's default is %q", name, f.DefValue)
				}
			case m != nil && !envName.MatchString(m[1]): // not an environment variable (`KAFKA_BROKERS`)
				if !sameDefault(f, m[1]) {
					t.Errorf("--%s: docs say the default is %q, the flag's is %q", name, m[1], f.DefValue)
				}
			}
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != helpAll && !documented[f.Name] {
			t.Errorf("--%s (%s) is a flag of `outboxtop relay` that docs/relay.md's tables do not list", f.Name, f.Usage)
		}
	})
}

func sameDefault(f *pflag.Flag, doc string) bool {
	if f.DefValue == doc {
		return true
	}
	if f.Value.Type() == "duration" {
		a, err1 := time.ParseDuration(doc)
		b, err2 := time.ParseDuration(f.DefValue)
		return err1 == nil && err2 == nil && a == b
	}
	return false
}
