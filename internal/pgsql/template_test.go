package pgsql

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"text/template"
)

func TestQualify(t *testing.T) {
	t.Parallel()
	for schema, want := range map[string]string{
		"public":   `SELECT 1 FROM "public".outbox_event e JOIN "public".outbox_audit a ON true`,
		"Outbox":   `SELECT 1 FROM "Outbox".outbox_event e JOIN "Outbox".outbox_audit a ON true`,
		`we"ird`:   `SELECT 1 FROM "we""ird".outbox_event e JOIN "we""ird".outbox_audit a ON true`,
		"with$sgn": `SELECT 1 FROM "with$sgn".outbox_event e JOIN "with$sgn".outbox_audit a ON true`,
	} {
		got := Qualify(`SELECT 1 FROM {{.schema}}.outbox_event e JOIN {{.schema}}.outbox_audit a ON true`, schema)
		if got != want {
			t.Errorf("Qualify(%q) = %s, want %s", schema, got, want)
		}
		if err := Check(got); err != nil {
			t.Errorf("Check(%s): %v", got, err)
		}
	}
	if got, want := Name("Outbox", "outbox_event"), `"Outbox"."outbox_event"`; got != want {
		t.Errorf("Name = %s, want %s", got, want)
	}
}

func TestCheckFindsUnqualifiedNames(t *testing.T) {
	t.Parallel()
	for _, stmt := range []string{
		`SELECT 1 FROM outbox_event`,
		`UPDATE outbox_event_archive SET x = 1`,
		"SELECT 1 FROM \"public\".outbox_event a\nJOIN consumed_event c ON true",
		`SELECT outboxtop_audit_relay($1)`,
		`SELECT 1 FROM {{.schema}}.outbox_event`,
		`SELECT 1 FROM {{.schema }}.outbox_event`,
	} {
		if Check(stmt) == nil {
			t.Errorf("Check accepted %s", stmt)
		}
	}
	for _, stmt := range []string{
		`-- reads outbox_event through outbox_claim_idx` + "\nSELECT 1 FROM \"s\".outbox_event",
		`/* outbox_event */ SELECT relname FROM pg_stat_user_tables WHERE relname = 'outbox_event'`,
		`SELECT e.outbox_event_id FROM "s"."outbox_event" e`,
		`SELECT 1 FROM "s".outbox_event WHERE a = 'it''s outbox_event'`,
	} {
		if err := Check(stmt); err != nil {
			t.Errorf("Check(%s): %v", stmt, err)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"a.sql": {Data: []byte(`SELECT 1 FROM {{.schema}}.outbox_event`)}}
	if got, want := Load(fsys, "a.sql", "Q"), `SELECT 1 FROM "Q".outbox_event`; got != want {
		t.Errorf("Load = %s, want %s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("Load of a missing file did not panic")
		}
	}()
	Load(fsys, "missing.sql", "Q")
}

func TestTemplates(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"sql/frag.sql": {Data: []byte(`{{define "head"}}NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event p WHERE p.seq < {{.row}}.seq){{end}}`)},
		"sql/list.sql": {Data: []byte(`SELECT {{up "x"}} FROM {{.schema}}.outbox_event e WHERE {{template "head" args . "row" "e"}} LIMIT {{.limit}}`)},
		"sql/one.sql":  {Data: []byte(`SELECT 1 FROM {{.schema}}.outbox_audit`)},
	}
	q := Parse(fsys, "sql/*.sql", "Q", template.FuncMap{"up": strings.ToUpper})
	if got, want := q.SQL("list", map[string]any{"limit": 5}),
		`SELECT X FROM "Q".outbox_event e WHERE NOT EXISTS (SELECT 1 FROM "Q".outbox_event p WHERE p.seq < e.seq) LIMIT 5`; got != want {
		t.Errorf("list = %s, want %s", got, want)
	}
	if got, want := q.SQL("one"), `SELECT 1 FROM "Q".outbox_audit`; got != want || q.SQL("one") != got {
		t.Errorf("one = %s, want %s", got, want)
	}
	if names := q.Names(); !slices.Contains(names, "head") || !slices.Contains(names, "list") {
		t.Errorf("Names = %v", names)
	}
	for _, bad := range []func(){
		func() { q.SQL("list") },    // a missing field
		func() { q.SQL("missing") }, // no such statement
		func() { Parse(fsys, "nothing/*.sql", "Q", nil) },
		func() { Parse(fstest.MapFS{"a.sql": {Data: []byte(`{{`)}}, "*.sql", "Q", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			bad()
		}()
	}
	var p PerSchema
	p.FS, p.Pattern = fsys, "sql/*.sql"
	p.Funcs = template.FuncMap{"up": strings.ToUpper}
	a := p.For("A")
	if p.For("A") != a || p.For("B") == a {
		t.Error("PerSchema parses once per schema")
	}
	if got := p.For("B").SQL("one"); got != `SELECT 1 FROM "B".outbox_audit` {
		t.Errorf("For(B) = %s", got)
	}
}
