// Package layers checks the shape of the code: every package sits on a floor,
// and imports only from the floors below it, so no import runs back up. The
// floors, bottom to top:
//
//	0  plumbing: the contract types, SQL templates, throwaway PostgreSQL,
//	   checked files, rate limits, the normalisation of compared names
//	1  the schema, and what applications link: producer API and inbox;
//	   terminal-safe text
//	2  the relay, the read model, consumer lag, the test environment
//	3  what runs beside them: housekeeping, fleets, the demo
//	4  the console and the wiring every command opens through
//	5  the SSH server
//	6  the commands
//	7  the binary
//
// Only production imports are checked (a package's tests may use a neighbour
// on its own floor, as the relay's tests read through the inspector). What
// applications may link is outside internal/; everything else is inside it.
package layers

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/outboxtop/outboxtop"

var floors = map[string]int{
	"wire": 0, "internal/pgsql": 0, "internal/pgtemp": 0, "internal/securefile": 0,
	"internal/throttle": 0, "internal/ident": 0, "internal/console/internal/seed": 0,

	"migrations": 1, "outbox": 1, "inbox": 1, "internal/termtext": 1,

	"relay": 2, "internal/inspect": 2, "internal/consumerlag": 2, "internal/testenv": 2,

	"internal/housekeeping": 3, "internal/fleet": 3, "internal/demo": 3,

	"internal/console": 4, "internal/app": 4, "internal/console/internal/smokedb": 4,

	"internal/sshserve": 5,

	"internal/cmd": 6,

	"": 7,
}

// public are the packages an application may import: the binary, the
// contract types, the producer API, the inbox, the schema and the relay
// (embeddable: docs/relay.md).
var public = []string{"", "wire", "outbox", "inbox", "migrations", "relay"}

type pkg struct {
	ImportPath string
	Imports    []string
	Dir        string
	GoFiles    []string // without the tests
}

// packages are the module's packages, by path relative to the module, with
// their imports.
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Dir,GoFiles", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < len(floors) {
		t.Fatalf("go list found %d packages, fewer than the %d with a floor", len(pkgs), len(floors))
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func isTest(p string) bool { return p == "test" || strings.HasPrefix(p, "test/") }

func TestNoImportRunsBackUp(t *testing.T) {
	for _, p := range packages(t) {
		name, _ := rel(p.ImportPath)
		if isTest(name) {
			for _, imp := range p.Imports {
				if r, ok := rel(imp); ok && !isTest(r) {
					if _, known := floors[r]; !known {
						t.Errorf("%s imports %s, which has no floor", name, r)
					}
				}
			}
			continue
		}
		floor, ok := floors[name]
		if !ok {
			t.Errorf("package %q has no floor: add it to floors (and to the README's map)", name)
			continue
		}
		for _, imp := range p.Imports {
			r, ok := rel(imp)
			if !ok {
				continue
			}
			if isTest(r) {
				t.Errorf("%s imports the test package %s", name, r)
				continue
			}
			if f, known := floors[r]; known && f >= floor {
				t.Errorf("%s (floor %d) imports %s (floor %d): an import may only go down", name, floor, r, f)
			}
		}
	}
}

func TestOnlyPublicPackagesOutsideInternal(t *testing.T) {
	for _, p := range packages(t) {
		name, _ := rel(p.ImportPath)
		if isTest(name) || name == "internal" || strings.HasPrefix(name, "internal/") {
			continue
		}
		if !slices.Contains(public, name) {
			t.Errorf("package %q is outside internal/ but is not one an application links: move it under internal/", name)
		}
	}
}

// The contract types are the one package an application in any shape may
// import without taking a dependency: the standard library only.
func TestWireImportsTheStandardLibraryOnly(t *testing.T) {
	for _, p := range packages(t) {
		if p.ImportPath != module+"/wire" {
			continue
		}
		for _, imp := range p.Imports {
			if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				t.Errorf("wire imports %s", imp)
			}
		}
		return
	}
	t.Fatal("wire not found")
}
