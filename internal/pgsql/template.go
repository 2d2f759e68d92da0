package pgsql

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"strings"
	"sync"
	"text/template"

	"github.com/jackc/pgx/v5"
)

// Placeholder stands for the quoted schema name in a statement, as in the
// migrations (migrations/*.sql).
const Placeholder = "{{.schema}}"

// Data is what every statement's template sees: schema, the quoted schema
// identifier, and the fields of more.
func Data(schema string, more ...map[string]any) map[string]any {
	d := map[string]any{"schema": pgx.Identifier{schema}.Sanitize()}
	for _, m := range more {
		maps.Copy(d, m)
	}
	return d
}

// baseFuncs are the functions every template may call.
var baseFuncs = template.FuncMap{
	// args is dot with more fields, for a shared fragment that takes
	// arguments: {{template "late" args . "xid" ">= $4::xid8"}}.
	"args": func(dot map[string]any, kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, fmt.Errorf("args: %d arguments, want name-value pairs", len(kv))
		}
		d := maps.Clone(dot)
		for k := 0; k < len(kv); k += 2 {
			name, ok := kv[k].(string)
			if !ok {
				return nil, fmt.Errorf("args: a name is %T, want a string", kv[k])
			}
			d[name] = kv[k+1]
		}
		return d, nil
	},
}

func newTemplate(name string, funcs template.FuncMap) *template.Template {
	return template.New(name).Option("missingkey=error").Funcs(baseFuncs).Funcs(funcs)
}

// Execute parses text as a template named name and executes it with data.
func Execute(name, text string, data map[string]any) (string, error) {
	t, err := newTemplate(name, nil).Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Qualify returns stmt with its templates filled for schema.
func Qualify(stmt, schema string) string {
	s, err := Execute("statement", stmt, Data(schema))
	if err != nil {
		panic(fmt.Sprintf("pgsql: %v", err))
	}
	return s
}

// Name is schema's table, function or index name, qualified and quoted, for
// the few names that are chosen at run time (an action's function).
func Name(schema, name string) string {
	return pgx.Identifier{schema, name}.Sanitize()
}

// Load reads the statement in file name of fsys and qualifies it for schema. It
// panics when the file is missing: the files are embedded, so that is a bug
// the package's tests find.
func Load(fsys fs.FS, name, schema string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(fmt.Sprintf("pgsql: %v", err))
	}
	s, err := Execute(name, string(b), Data(schema))
	if err != nil {
		panic(fmt.Sprintf("pgsql: %v", err))
	}
	return s
}

// Templates are a package's statement files, parsed once, each a template
// named by its file's name without .sql; a file may also define shared
// fragments ({{define "name"}}…{{end}}) that the others call.
type Templates struct {
	t      *template.Template
	schema string
	// done holds the statements executed with no fields of their own, by
	// name: each is the same string every time.
	done sync.Map
}

// Parse parses the files of fsys that match pattern (as fs.Glob) for schema,
// with funcs beside the base ones. It panics when one does not parse: the files
// are embedded, so that is a bug the package's tests find.
func Parse(fsys fs.FS, pattern, schema string, funcs template.FuncMap) *Templates {
	names, err := fs.Glob(fsys, pattern)
	if err != nil || len(names) == 0 {
		panic(fmt.Sprintf("pgsql: no statement files match %q (%v)", pattern, err))
	}
	root := newTemplate("", funcs)
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(fmt.Sprintf("pgsql: %v", err))
		}
		if _, err := root.New(strings.TrimSuffix(path.Base(name), ".sql")).Parse(string(b)); err != nil {
			panic(fmt.Sprintf("pgsql: %v", err))
		}
	}
	return &Templates{t: root, schema: schema}
}

// Names are the statements' and fragments' names, for tests that check each.
func (t *Templates) Names() []string {
	var names []string
	for _, tt := range t.t.Templates() {
		if tt.Name() != "" {
			names = append(names, tt.Name())
		}
	}
	return names
}

// SQL is statement name filled for the schema and fields (a statement's own
// fields, chosen at run time: a filter's conditions, a sort). It panics when
// the statement is missing or does not execute: a bug the package's tests find.
func (t *Templates) SQL(name string, fields ...map[string]any) string {
	if len(fields) == 0 {
		if s, ok := t.done.Load(name); ok {
			return s.(string)
		}
	}
	tt := t.t.Lookup(name)
	if tt == nil {
		panic(fmt.Sprintf("pgsql: no statement %q", name))
	}
	var b bytes.Buffer
	if err := tt.Execute(&b, Data(t.schema, fields...)); err != nil {
		panic(fmt.Sprintf("pgsql: %v", err))
	}
	s := b.String()
	if len(fields) == 0 {
		t.done.Store(name, s)
	}
	return s
}

// objects are the names of outboxtop's tables and functions (outbox_event,
// outbox_event_archive, consumed_event, outbox_audit, outbox_relay,
// outbox_attempt, outboxtop_*).
var objects = regexp.MustCompile(`(?i)(^|[^\w."$])((?:outbox_event|outbox_event_archive|consumed_event|outbox_audit|outbox_relay|outbox_attempt|outboxtop_[a-z_]+)\b)`)

// comments and literals are skipped by Check: they may name tables.
var commentsAndLiterals = regexp.MustCompile(`(?s)--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'`)

// Check reports a loaded statement that still holds a placeholder or names one
// of outboxtop's tables or functions without a schema (which would resolve
// through search_path, to another schema's table or none).
func Check(stmt string) error {
	if strings.Contains(stmt, "{{") {
		return fmt.Errorf("placeholder left in statement: %q", stmt)
	}
	code := commentsAndLiterals.ReplaceAllString(stmt, " ")
	if m := objects.FindStringSubmatch(code); m != nil {
		return fmt.Errorf("%s named without its schema (write %s.%s)", m[2], Placeholder, m[2])
	}
	return nil
}

// PerSchema parses a package's statement files once for each schema asked
// for, for the packages whose schema is chosen per call (the producer API and
// the inbox take it from a value an application builds).
type PerSchema struct {
	FS      fs.FS
	Pattern string
	Funcs   template.FuncMap

	parsed sync.Map // schema → *Templates
}

// For is the statements for schema.
func (p *PerSchema) For(schema string) *Templates {
	if t, ok := p.parsed.Load(schema); ok {
		return t.(*Templates)
	}
	t, _ := p.parsed.LoadOrStore(schema, Parse(p.FS, p.Pattern, schema, p.Funcs))
	return t.(*Templates)
}
