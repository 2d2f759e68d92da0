package migrations_test

import (
	"context"
	"testing"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// TestUpgradeKeepsRowsWithInfiniteTimes: a table that already holds rows with
// infinite times migrates; the constraints then stay NOT VALID (the rows stay),
// refuse every new such row, and a fresh one is validated.
func TestUpgradeKeepsRowsWithInfiniteTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	fsys, versions := history(t)
	migrateHistory(t, conn, fsys, "public", versions)
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at)
		VALUES (gen_random_uuid(), 'order', 'o-1', 'E', '{}', 'infinity')`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatalf("migrating a table with an infinite available_at: %v", err)
	}
	var valid, consumedValid bool
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT convalidated FROM pg_constraint WHERE conname = 'outbox_event_times_finite'),
		(SELECT convalidated FROM pg_constraint WHERE conname = 'consumed_event_consumed_at_finite')`).Scan(&valid, &consumedValid); err != nil {
		t.Fatal(err)
	}
	if valid || !consumedValid {
		t.Errorf("outbox_event's constraint validated %v (want false: a row breaks it), consumed_event's %v (want true)", valid, consumedValid)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at)
		VALUES (gen_random_uuid(), 'order', 'o-2', 'E', '{}', '-infinity')`); err == nil {
		t.Errorf("a new row available at -infinity was accepted")
	}
	if _, err := conn.Exec(ctx, seedInsert, "o-3"); err != nil {
		t.Errorf("the seed's insert: %v", err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE available_at = 'infinity'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d rows available at infinity after the upgrade (%v), want the 1 it held", n, err)
	}
}
