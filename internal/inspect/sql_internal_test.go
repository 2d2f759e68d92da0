package inspect

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// sampleFields are fields for the statements that take some at run time, of
// the kind the code passes.
func sampleFields(q *pgsql.Templates) map[string]map[string]any {
	return map[string]map[string]any{
		"failed_groups":   {"limit": 101},
		"relays":          {"goneAfter": RelayGoneAfter, "limit": RelaysLimit},
		"timeline":        {"where": " AND seq < $3", "order": "DESC", "limit": 10},
		"audit_log":       {"where": "action = $1", "limit": 10},
		"candidates":      {"where": "event_id BETWEEN $1::uuid AND $2::uuid", "limit": 6},
		"action_dry_run":  {"table": "outbox_event_archive", "where": "true", "sample": SampleSize},
		"action_targets":  {"table": "outbox_event", "where": "(" + q.SQL("blocker", map[string]any{"row": "e"}) + ")"},
		"action":          {"fn": "outboxtop_retry", "params": "$1, $2, $3, $4, $5"},
		"archive_targets": {"where": "true", "limit": "$1"},
		"paced_window":    {"table": "outbox_event_archive", "where": "true"},
		"paced_targets":   {"table": "outbox_event", "where": "seq > $1", "limit": "$2"},
		"list":            {"table": "outbox_event_archive", "archived": true, "key": "archived_at", "where": "true", "order": "archived_at DESC, seq DESC", "limit": 11},
		"matching":        {"table": "outbox_event", "where": "true"},
		"list_scan": {"table": "outbox_event", "archived": false, "key": "failed_at", "where": "true", "terms": "payload @? $1::jsonpath",
			"order": "failed_at DESC, seq DESC", "limit": 11, "scan": 100},
		"matching_scan": {"table": "outbox_event_archive", "where": "true", "terms": "headers @> $1::jsonb", "scan": 100},
		"list_scan_end": {"table": "outbox_event_archive", "key": "archived_at", "where": "true", "order": "archived_at DESC, seq DESC", "scan": 100},
	}
}

// Every statement file is used by the package, fills with its fields, names
// every table with its schema (pgsql.Check), and prepares (parsed and
// planned, not run) in a schema whose name needs quotes, with no outboxtop
// table on the search_path.
func TestEveryStatementPreparesInAQuotedSchema(t *testing.T) {
	t.Parallel()
	const schema = "Outbox_S"
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, schema, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET search_path = pg_catalog"); err != nil {
		t.Fatal(err)
	}
	q := parseStatements(schema)
	samples := sampleFields(q)
	var code strings.Builder
	for _, f := range must(filepath.Glob("*.go")) {
		if !strings.HasSuffix(f, "_test.go") {
			code.Write(must(os.ReadFile(f)))
		}
	}
	files := must(fs.Glob(sqlFiles, "sql/*.sql"))
	if len(files) < 40 {
		t.Fatalf("%d statement files, want the package's 40 or more", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sql")
		if name == "fragments" {
			continue
		}
		if !strings.Contains(code.String(), `"`+name+`"`) {
			t.Errorf("sql/%s.sql: no Go code of the package names it", name)
		}
		var stmt string
		if fields, ok := samples[name]; ok {
			stmt = q.SQL(name, fields)
		} else {
			stmt = q.SQL(name)
		}
		if err := pgsql.Check(stmt); err != nil {
			t.Errorf("sql/%s.sql: %v", name, err)
		}
		if _, err := conn.Prepare(ctx, "", stmt); err != nil {
			t.Errorf("sql/%s.sql in schema %q: %v\n%s", name, schema, err, stmt)
		}
	}
	// A statement that needs a field it was not given is a bug found here,
	// not a statement with a hole in it.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a statement without its fields was filled")
			}
		}()
		q.SQL("list")
	}()
}

// A blocker is a failed or scheduled event with no unpublished event of its
// aggregate before it; head is the second half; waiting is what waits behind
// a blocker.
func TestBlockerHeadAndWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// aggregate/event: state, in seq order within each aggregate.
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at, failed_at, available_at) VALUES
		(gen_random_uuid(), 'a', 'failed-head', 'pub', '{}', now(), NULL, now()),
		(gen_random_uuid(), 'a', 'failed-head', 'blocker', '{}', NULL, now(), now()),
		(gen_random_uuid(), 'a', 'failed-head', 'waits', '{}', NULL, NULL, now()),
		(gen_random_uuid(), 'a', 'scheduled-head', 'blocker', '{}', NULL, NULL, now() + interval '1 hour'),
		(gen_random_uuid(), 'a', 'scheduled-head', 'waits', '{}', NULL, NULL, now()),
		(gen_random_uuid(), 'a', 'ready-head', 'head', '{}', NULL, NULL, now()),
		(gen_random_uuid(), 'a', 'ready-head', 'behind', '{}', NULL, now(), now()),
		(gen_random_uuid(), 'a', 'ready-head', 'later', '{}', NULL, NULL, now())`); err != nil {
		t.Fatal(err)
	}
	q := parseStatements("public")
	frag := func(name string) string { return q.SQL(name, map[string]any{"row": "o"}) }
	names := func(cond string) []string {
		rows, err := conn.Query(ctx, `SELECT aggregate_id || '/' || event_type FROM outbox_event o WHERE `+cond+` ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		return must(pgx.CollectRows(rows, pgx.RowTo[string]))
	}
	if got, want := names(frag("blocker")), []string{"failed-head/blocker", "scheduled-head/blocker"}; !slices.Equal(got, want) {
		t.Errorf("blockers %v, want %v", got, want)
	}
	if got, want := names("published_at IS NULL AND "+frag("head")), []string{"failed-head/blocker", "scheduled-head/blocker", "ready-head/head"}; !slices.Equal(got, want) {
		t.Errorf("unpublished heads %v, want %v", got, want)
	}
	// Waiting: behind a failed or scheduled head. ready-head/later is not
	// waiting yet (its head is ready; the relay publishes that first, and then
	// the failed event behind it heads the aggregate).
	if got, want := names("published_at IS NULL AND "+frag("waiting")), []string{"failed-head/waits", "scheduled-head/waits"}; !slices.Equal(got, want) {
		t.Errorf("waiting %v, want %v", got, want)
	}
	if _, err := conn.Exec(ctx, `UPDATE outbox_event SET published_at = now() WHERE aggregate_id = 'ready-head' AND event_type = 'head'`); err != nil {
		t.Fatal(err)
	}
	if got, want := names("published_at IS NULL AND "+frag("waiting")), []string{"failed-head/waits", "scheduled-head/waits", "ready-head/later"}; !slices.Equal(got, want) {
		t.Errorf("waiting once the ready head is published %v, want %v", got, want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
