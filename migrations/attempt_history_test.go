package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// addHistory inserts n history rows for event id in one statement.
func addHistory(t *testing.T, conn *pgx.Conn, id string, n int) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), `INSERT INTO public.outbox_attempt (event_id, attempt, class, outcome, error)
		SELECT $1, g, 'retriable', 'schedule', 'try ' || g FROM generate_series(1, $2) g`, id, n); err != nil {
		t.Fatal(err)
	}
}

// historyOf is the attempts recorded for event id, oldest first.
func historyOf(t *testing.T, conn *pgx.Conn, id string) []int {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT attempt FROM public.outbox_attempt WHERE event_id = $1 ORDER BY attempt_id`, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The history keeps an event's newest 20 tries, whether they come one a
// statement or many in one, and pruning one event's leaves the others'.
func TestAttemptHistoryKeepsTheNewest20(t *testing.T) {
	t.Parallel()
	conn := connect(t, testenv.EmptyDB(t))
	if _, err := migrations.Apply(context.Background(), conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	a, b := "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	addHistory(t, conn, b, 5)
	addHistory(t, conn, a, 25)
	if got := historyOf(t, conn, a); len(got) != 20 || got[0] != 6 || got[19] != 25 {
		t.Fatalf("after 25 tries in one statement: %v, want 6…25", got)
	}
	for range 3 {
		addHistory(t, conn, a, 1)
	}
	if got := historyOf(t, conn, a); len(got) != 20 || got[0] != 9 || got[16] != 25 || got[17] != 1 || got[19] != 1 {
		t.Fatalf("after 3 more: %v, want 9…25 then 1, 1, 1", got)
	}
	if got := historyOf(t, conn, b); len(got) != 5 {
		t.Fatalf("the other event's history: %v, want its 5 tries", got)
	}
}

// Retention deletes the history of the archived rows it deletes, and only
// theirs: a skipped event's (archived, never published) and a live event's stay.
func TestRetentionDeletesTheHistoryOfWhatItDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	published, skipped, live := "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002", "00000000-0000-0000-0000-000000000003"
	if _, err := conn.Exec(ctx, `
		INSERT INTO public.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type, payload,
			created_at, available_at, attempts, seq, published_at, failed_at, archived_at) VALUES
		($1, 'a', '1', 't', '{}', now(), now(), 2, 1, now(), NULL, now() - interval '1 hour'),
		($2, 'a', '2', 't', '{}', now(), now(), 3, 2, NULL, now(), now() - interval '1 hour')`,
		published, skipped); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO public.outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		VALUES ($1, 'a', '3', 't', '{}')`, live); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{published, skipped, live} {
		addHistory(t, conn, id, 2)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT public.outboxtop_delete_archived(interval '1 minute', 100)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("retention deleted %d archived rows, want the published one", n)
	}
	for id, want := range map[string]int{published: 0, skipped: 2, live: 2} {
		if got := historyOf(t, conn, id); len(got) != want {
			t.Errorf("history of %s after retention: %v, want %d rows", id, got, want)
		}
	}
}

// A relay and a console set up with an earlier `outboxtop grants` keep
// working after the upgrade: the relay may add history (only add), the console
// read it.
func TestUpgradedRolesGetTheHistoryGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	fsys, versions := history(t)
	migrateHistory(t, conn, fsys, "public", versions)
	relayRole, consoleRole := "relay_"+randomSuffix(), "console_"+randomSuffix()
	for _, stmt := range []string{
		`CREATE ROLE ` + relayRole,
		`GRANT SELECT, UPDATE (lease_token, lease_until, attempts) ON public.outbox_event TO ` + relayRole,
		`CREATE ROLE ` + consoleRole,
		`GRANT SELECT ON public.outbox_event, public.outbox_audit TO ` + consoleRole,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, r := range []string{relayRole, consoleRole} {
			_, _ = conn.Exec(context.Background(), "DROP OWNED BY "+r)
			_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+r)
		}
	})
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	var relayInsert, relayDelete, relayAt, consoleSelect, consoleInsert bool
	if err := conn.QueryRow(ctx, `SELECT
		has_column_privilege($1, 'public.outbox_attempt', 'error', 'INSERT'),
		has_table_privilege($1, 'public.outbox_attempt', 'DELETE'),
		has_column_privilege($1, 'public.outbox_attempt', 'at', 'INSERT'),
		has_table_privilege($2, 'public.outbox_attempt', 'SELECT'),
		has_table_privilege($2, 'public.outbox_attempt', 'INSERT')`, relayRole, consoleRole).
		Scan(&relayInsert, &relayDelete, &relayAt, &consoleSelect, &consoleInsert); err != nil {
		t.Fatal(err)
	}
	if !relayInsert || relayDelete || relayAt || !consoleSelect || consoleInsert {
		t.Errorf("after the upgrade: relay inserts %v, deletes %v, sets the time %v; console reads %v, inserts %v; want true false false true false",
			relayInsert, relayDelete, relayAt, consoleSelect, consoleInsert)
	}
}
