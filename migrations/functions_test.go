package migrations_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/sqltemplate"
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
		sql := sqltemplate.Qualify(string(body), "public")
		sql = strings.ReplaceAll(sql, "{{.channel}}", "'outboxtop_public'")
		if err := sqltemplate.Check(sql); err != nil {
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
