package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// openers are the functions that open a PostgreSQL session, by package.
var openers = map[string][]string{
	"github.com/jackc/pgx/v5":         {"Connect", "ConnectConfig", "ConnectWithOptions"},
	"github.com/jackc/pgx/v5/pgxpool": {"New", "NewWithConfig"},
	"github.com/jackc/pgx/v5/pgconn":  {"Connect", "ConnectConfig", "ConnectWithOptions"},
	"github.com/jackc/pgx/v5/stdlib":  {"OpenDB", "OpenDBFromPool", "GetConnector"},
	"database/sql":                    {"Open", "OpenDB"},
}

// mayOpen are the files that may call an opener, and why.
var mayOpen = map[string]string{
	"internal/pgsql/session.go":                 "the one builder: every other session goes through it",
	"internal/pgtemp/pgtemp.go":                 "SHOW data_directory on the throwaway cluster it started, to know it for its own",
	"internal/testenv/testenv.go":               "the tests' own databases",
	"internal/console/internal/smokedb/main.go": "the console smoke test's seed database",
}

// TestSessionsOpenThroughOneBuilder: every PostgreSQL session outboxtop opens
// is opened by internal/pgsql (Pool, Connect), which sets outboxtop's
// search_path and a lock_timeout; a pool or connection opened anywhere else
// would run with the search_path of the role and database, on which a schema
// others may create in lets them plant a function the session runs.
func TestSessionsOpenThroughOneBuilder(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range packages(t) {
		name, _ := rel(p.ImportPath)
		if isTest(name) {
			continue
		}
		for _, f := range p.GoFiles {
			file := filepath.ToSlash(filepath.Join(name, f))
			for _, call := range openerCalls(t, filepath.Join(p.Dir, f)) {
				if _, ok := mayOpen[file]; ok {
					seen[file] = true
					continue
				}
				t.Errorf("%s: %s opens a session: open it with pgsql.Pool or pgsql.Connect (internal/pgsql/session.go)", file, call)
			}
		}
	}
	for file, why := range mayOpen {
		if !seen[file] {
			t.Errorf("%s (%s) opens no session any more: take it out of mayOpen", file, why)
		}
	}
}

// openerCalls lists the uses of an opener in a Go file ("pgxpool.New at
// 12:3"), whatever name the file imports its package under.
func openerCalls(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{} // local name -> the package's openers
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		fns, ok := openers[p]
		if !ok {
			continue
		}
		local := filepath.Base(p)
		if p == "github.com/jackc/pgx/v5" {
			local = "pgx"
		}
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = fns
	}
	var uses []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok {
			for _, fn := range names[x.Name] {
				if sel.Sel.Name == fn {
					uses = append(uses, x.Name+"."+fn+" at "+fset.Position(sel.Pos()).String())
				}
			}
		}
		return true
	})
	return uses
}
