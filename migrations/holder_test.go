package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// TestUpgradeTo009 takes a database back to version 8 (no lease_holder, none of
// 009's indexes) with a relay role holding the grants `outboxtop grants --role
// relay` printed before 009, and one index built CONCURRENTLY beforehand as the
// migration's header advises. Migrating keeps that index, adds the rest, lets the
// relay role write lease_holder, and archiving keeps the column.
func TestUpgradeTo009(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.DB(t))
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "outboxtop_relay_" + hex.EncodeToString(b)
	role := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE ROLE "+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = conn.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	for _, stmt := range []string{
		`ALTER TABLE outbox_event DROP COLUMN lease_holder`,
		`ALTER TABLE outbox_event_archive DROP COLUMN lease_holder`,
		`DROP INDEX outbox_event_archive_aggregate_idx, outbox_audit_event_ids_idx`,
		`UPDATE outboxtop_schema_version SET version = 8`,
		`GRANT USAGE ON SCHEMA public TO ` + role,
		`GRANT SELECT ON outbox_event TO ` + role,
		`GRANT UPDATE (lease_token, lease_until, attempts, available_at, last_error, failed_at,
			published_at, kafka_topic, kafka_partition, kafka_offset, blocked) ON outbox_event TO ` + role,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// Built beforehand without blocking writes; not in a transaction.
	if _, err := conn.Exec(ctx, `CREATE INDEX CONCURRENTLY outbox_audit_event_ids_idx ON outbox_audit USING gin (event_ids)`); err != nil {
		t.Fatal(err)
	}
	var before uint32
	if err := conn.QueryRow(ctx, `SELECT 'outbox_audit_event_ids_idx'::regclass::oid`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	from, to, err := migrations.Migrate(ctx, conn, "public", nil)
	if err != nil {
		t.Fatalf("migrating from 8: %v", err)
	}
	if from != 8 || int(to) != count(t) {
		t.Fatalf("migrated from %d to %d, want 8 to %d", from, to, count(t))
	}
	var after uint32
	var indexes int
	var canWrite, archiveHas bool
	if err := conn.QueryRow(ctx, `SELECT 'outbox_audit_event_ids_idx'::regclass::oid,
		(SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND indexname IN
			('outbox_event_archive_aggregate_idx', 'outbox_audit_event_ids_idx')),
		has_column_privilege($1, 'outbox_event', 'lease_holder', 'UPDATE'),
		EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public'
			AND table_name = 'outbox_event_archive' AND column_name = 'lease_holder')`,
		name).Scan(&after, &indexes, &canWrite, &archiveHas); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the index built beforehand was replaced (oid %d, now %d)", before, after)
	}
	if indexes != 2 {
		t.Errorf("%d of 009's 2 indexes exist", indexes)
	}
	if !canWrite {
		t.Errorf("a relay role with the grants of before 009 may not write lease_holder: its claims would fail")
	}
	if !archiveHas {
		t.Fatalf("outbox_event_archive has no lease_holder")
	}

	// Archived rows keep the last relay that claimed them.
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			attempts, lease_token, lease_holder, published_at)
		VALUES ('00000000-0000-4000-8000-000000000009', 'order', 'o-1', 'E', '{}', 1, gen_random_uuid(), 'relay-a:42', now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	var moved int
	var holder *string
	if err := conn.QueryRow(ctx, `SELECT outboxtop_archive_published(interval '1 hour', 10)`).Scan(&moved); err != nil || moved != 1 {
		t.Fatalf("archived %d (%v), want 1", moved, err)
	}
	if err := conn.QueryRow(ctx, `SELECT lease_holder FROM outbox_event_archive WHERE event_id = '00000000-0000-4000-8000-000000000009'`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder == nil || *holder != "relay-a:42" {
		t.Errorf("archived row's lease_holder %v, want relay-a:42", holder)
	}
}
