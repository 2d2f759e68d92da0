package relay

import (
	"context"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

// quotedSchema needs quotes: unquoted, PostgreSQL would fold it to lower case.
const quotedSchema = "Outbox_Q"

// sqlFileNames lists the embedded statements.
func sqlFileNames(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(sqlFiles, "sql/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no embedded statements: %v", err)
	}
	return names
}

// Every embedded statement is one the relay loads, names its tables through the
// placeholder, and is valid SQL against a schema whose name needs quotes when
// nothing is found through search_path.
func TestStatementsAreQualified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var loaded []string
	v := reflect.ValueOf(newStatements(quotedSchema))
	for i := range v.NumField() {
		loaded = append(loaded, v.Field(i).String())
	}
	// Read outside the relay's loop: WaitingForMissingTopics, PendingTopics, the health collector.
	for _, name := range []string{"waiting_for_topics", "pending_topics", "table_tuples"} {
		loaded = append(loaded, relaySQL.For(quotedSchema).SQL(name))
	}
	conn, err := pgx.Connect(ctx, testenv.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, quotedSchema, nil); err != nil {
		t.Fatal(err)
	}
	// public holds the template's tables: out of the path, a statement naming a
	// table without its schema finds none.
	if _, err := conn.Exec(ctx, "SET search_path = pg_catalog"); err != nil {
		t.Fatal(err)
	}
	for _, name := range sqlFileNames(t) {
		stmt := relaySQL.For(quotedSchema).SQL(strings.TrimSuffix(path.Base(name), ".sql"))
		if !slices.Contains(loaded, stmt) {
			t.Errorf("%s: not loaded by newStatements", name)
		}
		if !strings.Contains(stmt, `"`+quotedSchema+`".`) && strings.Contains(stmt, "outbox_event") {
			t.Errorf("%s: schema not quoted", name)
		}
		if err := pgsql.Check(stmt); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// Named parameters become positional; Prepare parses and plans without
		// running anything.
		positional, _, err := pgx.NamedArgs{}.RewriteQuery(ctx, conn, stmt, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Prepare(ctx, "", positional); err != nil {
			t.Errorf("%s in schema %q: %v", name, quotedSchema, err)
		}
	}
	if len(loaded) != len(sqlFileNames(t)) {
		t.Errorf("%d statements are loaded, sql/ holds %d files", len(loaded), len(sqlFileNames(t)))
	}
}

// restated finds the places a statement restates when an event is ready,
// marked /* kind */ … /* /kind */ (see the package doc, SQL).
var restated = regexp.MustCompile(`(?s)/\* (ready|claimable|unpublished ready) \*/(.*?)/\* /(ready|claimable|unpublished ready) \*/`)

// The statements restate wire.ReadySQL where the planner needs the columns
// spelt out for outbox_claim_idx; each restatement selects, among rows in every
// combination of the columns it reads, exactly the rows wire's definition does.
// A condition on available_at <= now() outside a marked place fails the test,
// so that a new restatement is marked and checked too.
func TestReadyIsRestatedFaithfully(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.Pool(t)
	// Every combination of published, failed, lease (none, ran out, live),
	// available (past, future) and blocked; boundaries a second away from now().
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			published_at, failed_at, lease_token, lease_until, available_at, blocked)
		SELECT gen_random_uuid(), 'order', 'o' || row_number() OVER (), 'E', '{}',
			p, f, CASE WHEN l IS NOT NULL THEN gen_random_uuid() END, l, a, b
		FROM unnest(ARRAY[NULL, now() - interval '1 min']::timestamptz[]) p,
		     unnest(ARRAY[NULL, now() - interval '1 min']::timestamptz[]) f,
		     unnest(ARRAY[NULL, now() - interval '1 min', now() + interval '1 min']::timestamptz[]) l,
		     unnest(ARRAY[now() - interval '1 min', now() + interval '1 min']::timestamptz[]) a,
		     unnest(ARRAY[false, true]) b`); err != nil {
		t.Fatal(err)
	}
	ids := func(where string) []int64 {
		t.Helper()
		var seqs []int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(seq ORDER BY seq), '{}') FROM outbox_event WHERE `+where).Scan(&seqs); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		return seqs
	}
	alias := regexp.MustCompile(`\b[a-z]\.([a-z_]+)\b`)
	comments := regexp.MustCompile(`--[^\n]*`)
	found := map[string]int{}
	for _, name := range sqlFileNames(t) {
		stmt := comments.ReplaceAllString(relaySQL.For(wire.DefaultSchema).SQL(strings.TrimSuffix(path.Base(name), ".sql")), "")
		for _, m := range restated.FindAllStringSubmatch(stmt, -1) {
			kind, cond := m[1], alias.ReplaceAllString(m[2], "$1")
			if m[3] != kind {
				t.Fatalf("%s: /* %s */ closed by /* /%s */", name, kind, m[3])
			}
			found[kind]++
			got, want := ids("("+cond+")"), ids(wire.ReadySQL)
			switch kind {
			case "claimable": // ready and in the claim index
				want = ids(wire.ReadySQL + " AND NOT blocked")
			case "unpublished ready": // the statement reads unpublished rows only
				got = ids("published_at IS NULL AND (" + cond + ")")
			}
			if len(want) == 0 || len(want) == len(ids("true")) {
				t.Fatalf("%s: the rows do not tell ready apart", kind)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s %q selects %v, wire says %v", name, kind, strings.Join(strings.Fields(cond), " "), got, want)
			}
		}
		if rest := restated.ReplaceAllString(stmt, ""); strings.Contains(rest, "available_at <= now()") {
			t.Errorf("%s restates ready outside a marked place:\n%s", name, rest)
		}
	}
	// The claims' restatements (claim_ordered.sql, claim_unordered.sql) are all
	// there: a marker lost in an edit would leave a condition unchecked.
	if want := map[string]int{"claimable": 5, "unpublished ready": 2, "ready": 1}; !reflect.DeepEqual(found, want) {
		t.Errorf("marked restatements %v, want %v", found, want)
	}
}
