package migrations_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// historyArchive holds the numbered migrations 001–011 exactly as outboxtop
// shipped them while they also defined the stored functions, each redefining
// some. Databases out there ran these files, so they are what an upgrade starts
// from. They are kept as an archive so that the only readable text of each
// function in the repository is its file in functions/.
const historyArchive = "testdata/history-011.tar.gz"

// history reads historyArchive into a file system tern can load.
func history(t *testing.T) (fstest.MapFS, int) {
	t.Helper()
	f, err := os.Open(historyArchive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		fsys[h.Name] = &fstest.MapFile{Data: body, Mode: 0o644}
	}
	names, err := migrate.FindMigrations(fsys)
	if err != nil || len(names) == 0 {
		t.Fatalf("the history archive holds no migrations (%v)", err)
	}
	return fsys, len(names)
}

// migrateHistory applies the history's migrations 1..n, as the outboxtop that
// shipped them did.
func migrateHistory(t *testing.T, conn *pgx.Conn, fsys fstest.MapFS, schema string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewMigrator(ctx, conn, pgx.Identifier{schema, migrations.VersionTable}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	m.Data = migrations.TemplateData(schema)
	if err := m.LoadMigrations(fsys); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, int32(n)); err != nil {
		t.Fatalf("the history's migrations up to %d: %v", n, err)
	}
}

// schemaState is everything outboxtop defines in schema, one line per fact, so
// two databases compare line by line: functions (definition, owner, ACL),
// triggers, tables (owner, ACL, options, row security), columns (type, default,
// identity, ACL), indexes, constraints, policies and the version.
func schemaState(t *testing.T, conn *pgx.Conn, schema string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, q := range []string{
		`SELECT 'function ' || p.oid::regprocedure::text || ' owner ' || pg_get_userbyid(p.proowner) ||
			' acl ' || coalesce(p.proacl::text, 'default') || E'\n' || pg_get_functiondef(p.oid)
		FROM pg_proc p WHERE p.pronamespace = $1::regnamespace`,
		`SELECT 'trigger ' || pg_get_triggerdef(g.oid) || ' enabled ' || g.tgenabled::text
		FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
		WHERE c.relnamespace = $1::regnamespace AND NOT g.tgisinternal`,
		`SELECT 'relation ' || c.relname || ' kind ' || c.relkind::text || ' owner ' || pg_get_userbyid(c.relowner) ||
			' acl ' || coalesce(c.relacl::text, 'default') || ' options ' || coalesce(c.reloptions::text, '') ||
			' rls ' || c.relrowsecurity
		FROM pg_class c WHERE c.relnamespace = $1::regnamespace`,
		`SELECT 'column ' || c.relname || '.' || a.attname || ' #' || a.attnum || ' ' || format_type(a.atttypid, a.atttypmod) ||
			' notnull ' || a.attnotnull || ' default ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '') ||
			' identity ' || a.attidentity::text || ' acl ' || coalesce(a.attacl::text, 'default')
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped`,
		`SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = $1`,
		`SELECT 'constraint ' || c.conrelid::regclass::text || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid)
		FROM pg_constraint c WHERE c.connamespace = $1::regnamespace`,
		`SELECT 'policy ' || tablename || ' ' || policyname || ' ' || cmd || ' ' || roles::text || ' ' ||
			coalesce(qual, '') || ' ' || coalesce(with_check, '')
		FROM pg_policies WHERE schemaname = $1`,
		`SELECT 'version ' || version FROM ` + pgx.Identifier{schema, migrations.VersionTable}.Sanitize() + ` WHERE $1 <> ''`,
	} {
		rows, err := conn.Query(ctx, q, schema)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, lines...)
	}
	sort.Strings(out)
	return out
}

// diffStates names the lines only one of two states has.
func diffStates(want, got []string) string {
	in := func(lines []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range want {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range got {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// TestEveryVersionUpgradesToTheFreshSchema: a database migrated to any version
// n by the files outboxtop shipped (0: an empty database), then migrated by
// this binary, ends with exactly what a fresh database migrated by this binary
// has: the same function definitions, owners and ACLs, triggers, tables and
// their grants, columns and column grants, indexes, constraints, policies and
// version. Numbered migrations added after the history are applied by the
// migrate under test. A second migrate changes none of it, and keeps the
// trigger it found.
func TestEveryVersionUpgradesToTheFreshSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const schema = "public"
	fsys, versions := history(t)

	fresh := connect(t, testenv.EmptyDB(t))
	if _, err := migrations.Apply(ctx, fresh, schema, nil); err != nil {
		t.Fatal(err)
	}
	want := schemaState(t, fresh, schema)
	names, err := migrations.FunctionNames()
	if err != nil {
		t.Fatal(err)
	}
	var functions int
	for _, l := range want {
		if strings.HasPrefix(l, "function ") {
			functions++
		}
	}
	if functions != len(names) {
		t.Fatalf("the fresh schema has %d functions, functions/ has %d files", functions, len(names))
	}
	// The trigger is kept, not created again: that would lock outbox_event
	// against inserts on every migrate.
	oids := func() string {
		var s string
		if err := fresh.QueryRow(ctx, `SELECT string_agg(oid::text, ',' ORDER BY oid) FROM pg_trigger
			WHERE tgrelid = 'public.outbox_event'::regclass AND NOT tgisinternal`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	triggers := oids()
	if _, err := migrations.Apply(ctx, fresh, schema, nil); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(want, schemaState(t, fresh, schema)); d != "" {
		t.Errorf("a second migrate changed the schema:\n%s", d)
	}
	if again := oids(); again != triggers {
		t.Errorf("a second migrate created the triggers again (oids %s, then %s)", triggers, again)
	}

	for n := 0; n <= versions; n++ {
		t.Run(fmt.Sprintf("from%03d", n), func(t *testing.T) {
			t.Parallel()
			conn := connect(t, testenv.EmptyDB(t))
			if n > 0 {
				migrateHistory(t, conn, fsys, schema, n)
			}
			var mode migrations.CommitOrder
			from, _, err := migrations.MigrateWith(ctx, conn, schema, migrations.Options{OnOrder: func(o migrations.CommitOrder) { mode = o }})
			if err != nil {
				t.Fatalf("migrating from %d: %v", n, err)
			}
			if int(from) != n {
				t.Fatalf("migrate found version %d, want %d", from, n)
			}
			// Every table, new or upgraded, detects the commit order until told
			// to enforce it (its writers would wait for each other).
			if mode != migrations.OrderDetect {
				t.Fatalf("upgraded from %d, the commit order is %s, want detect", n, mode)
			}
			if _, _, err := migrations.MigrateWith(ctx, conn, schema, migrations.Options{CommitOrder: migrations.OrderDetect}); err != nil {
				t.Fatal(err)
			}
			if d := diffStates(want, schemaState(t, conn, schema)); d != "" {
				t.Errorf("upgraded from %d, the schema differs from a fresh one (- fresh, + upgraded):\n%s", n, d)
			}
		})
	}
}

// TestMigrateIgnoresTheCallersSearchPath: a migrate whose session has a schema
// on its search_path in which someone put an operator more exact than a
// built-in the migrations use (oid <> integer, in 009's grant step, which runs
// when a relay role exists) runs only pg_catalog's: it would otherwise run as
// the migrating role.
func TestMigrateIgnoresTheCallersSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	fsys, _ := history(t)
	migrateHistory(t, conn, fsys, "public", 8)
	role := pgx.Identifier{"outboxtop_relay_" + randomSuffix()}.Sanitize()
	for _, stmt := range []string{
		`CREATE ROLE ` + role,
		`GRANT UPDATE (lease_token) ON public.outbox_event TO ` + role,
		`CREATE SCHEMA evil`,
		`CREATE FUNCTION evil.ne(oid, integer) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow oid <> integer called'; END$$`,
		`CREATE OPERATOR evil.<> (LEFTARG = oid, RIGHTARG = integer, FUNCTION = evil.ne)`,
		`SET search_path = evil, public`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = conn.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	if _, err := conn.Exec(ctx, `SELECT 0::oid <> 0`); err == nil || !strings.Contains(err.Error(), "shadow") {
		t.Fatalf("the shadow is not what the session's path chooses (%v): the test proves nothing", err)
	}
	if _, _, err := migrations.Migrate(ctx, conn, "public", nil); err != nil {
		t.Fatalf("migrate with the shadow on the session's path: %v", err)
	}
	var may bool
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.has_column_privilege($1, 'public.outbox_event', 'lease_holder', 'UPDATE')`,
		strings.Trim(role, `"`)).Scan(&may); err != nil || !may {
		t.Errorf("009's grant step did not run (%v)", err)
	}
}
