package wire_test

import (
	"os/exec"
	"strings"
	"testing"
)

// goList runs go list -deps on pkgs and returns the import paths that format
// prints (one a line; empty lines dropped).
func goList(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", format}, pkgs...)...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	return strings.Fields(string(out))
}

// The contract is dependency-free: only the standard library, so that anything
// may import it.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	const mod = "github.com/outboxtop/outboxtop/"
	for _, p := range goList(t, "{{if not .Standard}}{{.ImportPath}}{{end}}", mod+"wire") {
		if p != mod+"wire" {
			t.Errorf("wire depends on %s", p)
		}
	}
}

// The relay and the packages applications link (outbox, inbox) do not pull in
// the migration library (tern) and the template libraries it brings: they take
// the schema name, its rules and the NOTIFY channel from wire, not from
// package migrations.
func TestRelayOutboxInboxDoNotLinkTheMigrationLibrary(t *testing.T) {
	t.Parallel()
	const mod = "github.com/outboxtop/outboxtop/"
	banned := []string{
		mod + "migrations",
		"github.com/jackc/tern/",
		"github.com/Masterminds/", // sprig, goutils, semver
		"dario.cat/mergo",
		"github.com/shopspring/decimal",
		"github.com/spf13/cast",
	}
	deps := goList(t, "{{.ImportPath}}", mod+"relay", mod+"outbox", mod+"inbox")
	if len(deps) < 10 {
		t.Fatalf("go list printed %d packages: %v", len(deps), deps)
	}
	for _, p := range deps {
		for _, b := range banned {
			if strings.HasPrefix(p, b) {
				t.Errorf("relay, outbox or inbox depends on %s", p)
			}
		}
	}
}
