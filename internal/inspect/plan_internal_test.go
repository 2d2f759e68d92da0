package inspect

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// explain returns the text plan PostgreSQL chooses for query with args.
func explain(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, query string, args ...any) string {
	t.Helper()
	rows, err := q.Query(context.Background(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	return strings.Join(lines, "\n")
}

// checkPlan fails unless plan reads none of tables sequentially and uses every
// index of want.
func checkPlan(t *testing.T, what, plan string, tables, want []string) {
	t.Helper()
	for _, tbl := range tables {
		if strings.Contains(plan, "Seq Scan on "+tbl+" ") || strings.HasSuffix(plan, "Seq Scan on "+tbl) {
			t.Errorf("%s scans %s:\n%s", what, tbl, plan)
		}
	}
	for _, idx := range want {
		if !strings.Contains(plan, idx) {
			t.Errorf("%s does not use %s:\n%s", what, idx, plan)
		}
	}
}

// loadHistory fills the outbox, the archive and the audit trail the way months of
// traffic would: many aggregates with a long published history, a few unpublished
// events, and operator actions each naming a batch of other events. It returns the id of an event
// that two audit rows name.
func loadHistory(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	ctx := context.Background()
	const target = "0196b0c2-0000-7000-8000-00000000abcd"
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			attempts, published_at, kafka_topic, kafka_partition, kafka_offset, lease_holder)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 2000), 'OrderPlaced', '{"n": 1}',
			1, now() - interval '1 hour', 'outbox.order', g % 6, g, 'relay-a:1'
		FROM generate_series(1, 40000) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 2000), 'OrderPaid', '{}'
		FROM generate_series(1, 2000) g;
		INSERT INTO outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type, payload,
			created_at, available_at, attempts, published_at, seq)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 2000), 'OrderPlaced', '{}',
			now() - interval '30 days', now() - interval '30 days', 1, now() - interval '30 days', 100000 + g
		FROM generate_series(1, 40000) g;
		INSERT INTO outbox_audit (actor, action, rows, event_ids)
		SELECT 'alice', 'retry', 40, (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 40 + g % 2))
		FROM generate_series(1, 20000) g;
		INSERT INTO outbox_audit (actor, action, rows, event_ids) VALUES
			('bob', 'park', 1, ARRAY['`+target+`'::uuid]),
			('bob', 'retry', 2, ARRAY[gen_random_uuid(), '`+target+`'::uuid]);
		ANALYZE outbox_event; ANALYZE outbox_event_archive; ANALYZE outbox_audit`); err != nil {
		t.Fatal(err)
	}
	var distinct int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT event_ids[1]) FROM outbox_audit`).Scan(&distinct); err != nil || distinct < 20000 {
		t.Fatalf("audit rows should name distinct events: %d distinct first ids (%v)", distinct, err)
	}
	return target
}

// TestTimelineAndAuditQueriesUseIndexes: on tens of thousands of rows, the
// aggregate timeline's statements read the aggregate indexes of the outbox (with
// the opt-in index of published rows built) and the archive, and the audit filter by event and trace's audit rows read the GIN index
// on event_ids (migration 009), never the whole table.
func TestTimelineAndAuditQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.Pool(t)
	in, err := New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	target := loadHistory(t, pool)

	// Without the opt-in index of published rows by aggregate (migration 009 says
	// why it is not created), the timeline answers the same, reading the published
	// rows the outbox holds.
	if tl, err := in.Timeline(ctx, "order", "o-7", 0); err != nil || tl.Before+tl.After+int64(len(tl.Events)) != 41 {
		t.Fatalf("timeline of o-7 without the opt-in index: %+v, %v; want 41 events in all", tl, err)
	}
	if _, err := pool.Exec(ctx, `CREATE INDEX outbox_aggregate_published_idx
		ON outbox_event (aggregate_type, aggregate_id, seq) WHERE published_at IS NOT NULL; ANALYZE outbox_event`); err != nil {
		t.Fatal(err)
	}

	tables := []string{"outbox_event", "outbox_event_archive"}
	aggIndexes := []string{"outbox_aggregate_idx", "outbox_aggregate_published_idx", "outbox_event_archive_aggregate_idx"}
	var head int64
	if err := pool.QueryRow(ctx, `SELECT min(seq) FROM outbox_event WHERE aggregate_id = 'o-7' AND published_at IS NULL`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	checkPlan(t, "timeline (no unpublished head)", explain(t, pool, in.timelineSQL("", "DESC", TimelineLimit), "order", "o-7"), tables, aggIndexes)
	checkPlan(t, "timeline before the head", explain(t, pool, in.timelineSQL(" AND seq < $3", "DESC", timelineContext), "order", "o-7", head), tables, aggIndexes)
	checkPlan(t, "timeline from the head", explain(t, pool, in.timelineSQL(" AND seq >= $3", "ASC", TimelineLimit), "order", "o-7", head), tables, aggIndexes)
	checkPlan(t, "timeline counts", explain(t, pool, in.timelineCountSQL(), "order", "o-7", head-100, head), tables, aggIndexes)

	// And the timeline itself answers from them.
	tl, err := in.Timeline(ctx, "order", "o-7", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Before+tl.After+int64(len(tl.Events)) != 41 {
		t.Errorf("timeline of o-7: %d listed, %d before, %d after; want 41 events in all", len(tl.Events), tl.Before, tl.After)
	}

	q, args := in.auditLogSQL(AuditFilter{EventID: target}, AuditLimit)
	checkPlan(t, "audit --event", explain(t, pool, q, args...), []string{"outbox_audit"}, []string{"outbox_audit_event_ids_idx"})
	checkPlan(t, "trace's audit rows", explain(t, pool, in.q.SQL("trace_audit"), target), []string{"outbox_audit"}, []string{"outbox_audit_event_ids_idx"})
	recs, err := in.AuditLog(ctx, AuditFilter{EventID: target})
	if err != nil || len(recs) != 2 {
		t.Fatalf("audit rows naming %s: %d (%v), want 2", target, len(recs), err)
	}

	// The check can fail: without the index the same statement reads every row.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "DROP INDEX outbox_audit_event_ids_idx"); err != nil {
		t.Fatal(err)
	}
	if plan := explain(t, tx, q, args...); strings.Contains(plan, "outbox_audit_event_ids_idx") ||
		!strings.Contains(plan, "Seq Scan on outbox_audit") && !strings.Contains(plan, "outbox_audit_pkey") {
		t.Errorf("without its index the audit filter should read the whole table:\n%s", plan)
	}
}

// TestRelaysSnapshotCost: at incident scale (100,000 unpublished rows, a few
// leased by two relays) the snapshot finds the leases per relay without reading
// the unpublished rows: lease columns are deliberately unindexed (the claim's
// UPDATE stays HOT), so leases are counted in the pass the snapshot makes
// anyway, which reads at most caps.scan+1 rows through outbox_claim_seq_idx; the
// heartbeats come from outbox_relay alone.
func TestRelaysSnapshotCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.Pool(t)
	in, err := New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 5000), 'E', '{}' FROM generate_series(1, 100000) g;
		UPDATE outbox_event SET attempts = 1, lease_token = gen_random_uuid(), lease_until = now() + interval '1 minute',
			lease_holder = CASE WHEN seq % 2 = 0 THEN 'relay-a:1' ELSE 'relay-b:2' END
		WHERE seq IN (SELECT seq FROM outbox_event ORDER BY seq LIMIT 40);
		INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms)
		SELECT 'relay-' || g || ':1', 'r', 'running', now(), now() - g * interval '1 second', 5000 FROM generate_series(1, 300) g;
		ANALYZE outbox_event; ANALYZE outbox_relay`); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL jit = off"); err != nil { // as Snapshot does
		t.Fatal(err)
	}
	plan := explain(t, tx, "(ANALYZE, TIMING OFF) "+in.q.SQL("pass"), append([]any{defaultCaps.scan + 1, defaultCaps.probe + 1}, (*snapFloor)(nil).passArgs()...)...)
	checkPlan(t, "the snapshot's pass", plan, []string{"outbox_event"}, []string{"outbox_claim_seq_idx"})
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "outbox_claim_seq_idx") && !strings.Contains(line, "never executed") &&
			!strings.Contains(line, fmt.Sprintf("rows=%d ", defaultCaps.scan+1)) {
			t.Errorf("the pass read more than caps.scan+1 rows:\n%s", plan)
		}
	}
	plan = explain(t, tx, in.relaysSQL())
	if strings.Contains(plan, "outbox_event") || !strings.Contains(plan, "outbox_relay") {
		t.Errorf("the relays' query reads more than outbox_relay:\n%s", plan)
	}
	_ = tx.Rollback(ctx)

	s, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Partial {
		t.Fatalf("100,000 unpublished rows should make a partial snapshot")
	}
	leases := map[string]int64{}
	for _, r := range s.Relays {
		if r.Leases > 0 {
			leases[r.Holder] = r.Leases
			if !r.LeasesApprox {
				t.Errorf("%s: leases counted in a partial pass are not marked approximate", r.Holder)
			}
		}
	}
	if leases["relay-a:1"] != 20 || leases["relay-b:2"] != 20 || len(s.Relays) != RelaysLimit+2 {
		t.Errorf("leases by relay %v (want 20 each), %d relays (want %d heartbeats + 2 leasing)", leases, len(s.Relays), RelaysLimit)
	}
}
