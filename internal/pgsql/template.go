package pgsql

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Placeholder stands for the quoted schema name in a statement, as in the
// migrations (migrations/*.sql).
const Placeholder = "{{.schema}}"

// Qualify returns stmt with every Placeholder replaced by schema, quoted.
func Qualify(stmt, schema string) string {
	return strings.ReplaceAll(stmt, Placeholder, pgx.Identifier{schema}.Sanitize())
}

// Name is schema's table, function or index name, qualified and quoted, for
// statements composed in Go.
func Name(schema, name string) string {
	return pgx.Identifier{schema, name}.Sanitize()
}

// Load reads the statement in file name of fsys and qualifies it for schema. It
// panics when the file is missing: the files are embedded, so that is a bug
// the package's tests find.
func Load(fsys fs.FS, name, schema string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(fmt.Sprintf("sqltemplate: %v", err))
	}
	return Qualify(string(b), schema)
}

// objects are the names of outboxtop's tables and functions (outbox_event,
// outbox_event_archive, consumed_event, outbox_audit, outboxtop_*).
var objects = regexp.MustCompile(`(?i)(^|[^\w."$])((?:outbox_event|outbox_event_archive|consumed_event|outbox_audit|outboxtop_[a-z_]+)\b)`)

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
