package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// TestUpgradedConsumersPruneThroughTheFunction: a consumer role set up with an
// earlier `outboxtop grants --role consumer` (table-level DELETE on
// consumed_event) gets EXECUTE on outboxtop_inbox_prune and loses DELETE, which
// let it lock every other consumer's inserts out.
func TestUpgradedConsumersPruneThroughTheFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	fsys, versions := history(t)
	migrateHistory(t, conn, fsys, "public", versions)
	name := "billing_" + randomSuffix()
	role := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE ROLE `+role+`; GRANT SELECT, INSERT, DELETE ON public.consumed_event TO `+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = conn.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	var prune, del, insert bool
	if err := conn.QueryRow(ctx, `SELECT has_function_privilege($1, 'public.outboxtop_inbox_prune(text, timestamptz, integer)', 'EXECUTE'),
		has_table_privilege($1, 'public.consumed_event', 'DELETE'), has_table_privilege($1, 'public.consumed_event', 'INSERT')`, name).
		Scan(&prune, &del, &insert); err != nil {
		t.Fatal(err)
	}
	if !prune || del || !insert {
		t.Errorf("after the upgrade the consumer may prune %v, delete %v, insert %v; want true, false, true", prune, del, insert)
	}
}
