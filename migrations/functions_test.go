package migrations_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/migrations"
)

var createFunction = regexp.MustCompile(`(?i)\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE|AGGREGATE)\s+\{\{\.schema\}\}\.(\w+)`)

// TestEachFunctionHasOneFile: functions/<name>.sql defines the function <name>
// and no other, names outboxtop's objects with their schema, and no numbered
// migration defines a function or a trigger (a trigger needs its function, which
// only the function files create), so the text a database runs is the one file's.
func TestEachFunctionHasOneFile(t *testing.T) {
	names, err := migrations.FunctionNames()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no function files")
	}
	for _, name := range names {
		body, err := os.ReadFile(filepath.Join("functions", name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		var defined []string
		for _, m := range createFunction.FindAllStringSubmatch(string(body), -1) {
			defined = append(defined, m[1])
		}
		if len(defined) != 1 || defined[0] != name {
			t.Errorf("functions/%s.sql defines %v, want exactly %s", name, defined, name)
		}
		sql, err := pgsql.Execute(name, string(body), migrations.TemplateData("public"))
		if err != nil {
			t.Fatalf("functions/%s.sql: %v", name, err)
		}
		if err := pgsql.Check(sql); err != nil {
			t.Errorf("functions/%s.sql: %v", name, err)
		}
	}
	numbered, err := filepath.Glob("[0-9]*.sql")
	if err != nil {
		t.Fatal(err)
	}
	trigger := regexp.MustCompile(`(?i)\bCREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\b`)
	for _, f := range numbered {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := createFunction.FindString(string(body)); m != "" {
			t.Errorf("%s: %q: functions belong in functions/<name>.sql", f, m)
		}
		if trigger.Match(body) {
			t.Errorf("%s creates a trigger: it belongs with its function in functions/", f)
		}
	}
}

// syntax are the words a '(' may follow in the function files that are not
// calls of a function: SQL's own constructs (COALESCE and its kin are syntax,
// not functions, and cannot be schema-qualified) and keywords before a
// parenthesis.
var syntax = map[string]bool{
	"coalesce": true, "nullif": true, "greatest": true, "least": true,
	"in": true, "any": true, "all": true, "exists": true, "values": true, "as": true, "using": true,
	"conflict": true, "and": true, "or": true, "not": true, "from": true, "where": true, "if": true,
	"elsif": true, "when": true, "then": true, "else": true, "select": true, "operator": true, "on": true,
	"return": true, "returns": true, "into": true, "set": true, "join": true, "distinct": true, "lateral": true,
}

var callLike = regexp.MustCompile(`(?i)(\.?)\b([a-z_][a-z0-9_$]*)\s*\(`)

// TestFunctionsQualifyBuiltins: in the function files every call of a function
// or aggregate names its schema (pg_catalog.now(), {{.schema}}.outboxtop_state),
// except SQL's own constructs, so a function with a more exact signature in the
// outbox schema is never what runs (see the package doc). A word before '(' that
// is neither qualified nor syntax fails the test: qualify it, or if it really is
// syntax, add it above. TestShadowedBuiltinsAreNeverCalled (test/security) checks
// the operators, and the calls, by running every function.
func TestFunctionsQualifyBuiltins(t *testing.T) {
	names, err := migrations.FunctionNames()
	if err != nil {
		t.Fatal(err)
	}
	strip := regexp.MustCompile(`--[^\n]*|'(?:[^']|'')*'`)
	for _, name := range names {
		body, err := os.ReadFile(filepath.Join("functions", name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		code := strip.ReplaceAllString(string(body), "''")
		for _, m := range callLike.FindAllStringSubmatchIndex(code, -1) {
			dot, word := code[m[2]:m[3]], strings.ToLower(code[m[4]:m[5]])
			if dot == "." || syntax[word] {
				continue
			}
			// A table alias's column list: INSERT INTO t AS r (a, b).
			if before := strings.Fields(code[:m[4]]); len(before) > 0 && strings.EqualFold(before[len(before)-1], "as") {
				continue
			}
			line := strings.Count(code[:m[0]], "\n") + 1
			t.Errorf("functions/%s.sql:%d: %s( is not schema-qualified (pg_catalog.%s(…))", name, line, word, word)
		}
	}
}
