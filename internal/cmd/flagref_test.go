package cmd

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/flags.md from the flags")

// docs/flags.md is `outboxtop help flags`: the flags reference comes from the
// flags' definitions, and this test fails when the page and the binary differ
// (go test ./internal/cmd -run TestFlagReference -update rewrites it).
func TestFlagReferenceIsTheBinarys(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "help", "flags")
	if r.code != ExitOK || r.err != "" {
		t.Fatalf("help flags: exit %d, %s", r.code, r.err)
	}
	const path = "../../docs/flags.md"
	if *update {
		if err := os.WriteFile(path, []byte(r.out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, []byte(r.out)) {
		t.Errorf("docs/flags.md is not what `outboxtop help flags` prints: run go test ./internal/cmd -run TestFlagReference -update")
	}
	// Every flag of every command is on the page, with its variable.
	for _, c := range commands() {
		if c.run == nil {
			continue
		}
		col := &flagSets{}
		c.run(t.Context(), []string{"--help"}, IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: func(string) string { return "" }, flags: col})
		for _, fs := range col.sets {
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Hidden || f.Name == helpAll {
					return
				}
				if !strings.Contains(r.out, "| `--"+f.Name+"` | `"+EnvName(f.Name)+"` |") {
					t.Errorf("%s --%s is not in the reference", c.name, f.Name)
				}
			})
		}
	}
	if r := run(t, nil, "help", "flgas"); r.code != ExitUsage {
		t.Errorf("help flgas: exit %d", r.code)
	}
}
