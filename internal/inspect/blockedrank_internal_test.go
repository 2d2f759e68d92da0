package inspect

import (
	"context"
	"strconv"
	"testing"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// TestBlockedRankingReadsItsIndexes: with the snapshot's settings, on tens of
// thousands of rows with statistics fresh or absent, the blocked list's
// candidates are read from outbox_blocked_idx (index-only: a page is visited
// only while not all visible, as after the relay hinted its rows) and
// outbox_claim_idx, each head with one probe of
// outbox_aggregate_idx and each count along it: no statement reads published
// history, and the candidates' buffers do not grow with it.
func TestBlockedRankingReadsItsIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.Pool(t)
	in, err := New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// 2,000 failed heads with 3 hinted and 1 unhinted ready row behind each,
	// a publishable backlog.
	exec(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'f-' || g, 'E', '{}', now() - interval '1 minute', 'boom' FROM generate_series(1, 2000) g`)
	exec(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, blocked)
		SELECT gen_random_uuid(), 'order', 'f-' || (1 + g % 2000), 'E', '{}', g % 4 <> 0 FROM generate_series(1, 8000) g`)
	exec(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'r-' || (g % 300), 'E', '{}' FROM generate_series(1, 3000) g`)
	history := func(n int) {
		exec(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at, kafka_topic, kafka_partition, kafka_offset)
			SELECT gen_random_uuid(), 'order', 'f-' || (g % 2000), 'E', '{}', now() - interval '1 hour', 't', 0, g FROM generate_series(1, ` +
			strconv.Itoa(n) + `) g`)
		exec(`VACUUM ANALYZE outbox_event`)
	}
	cp := defaultCaps
	cost := func(stats bool) (candidates int) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL jit = off; SET LOCAL enable_sort = off"); err != nil { // as the ranking does
			t.Fatal(err)
		}
		if !stats {
			// As if never analyzed: the planner's own guesses.
			if _, err := tx.Exec(ctx, "DELETE FROM pg_statistic WHERE starelid = 'outbox_event'::regclass"); err != nil {
				t.Fatal(err)
			}
		}
		args := []any{cp.hinted + 1, cp.unhinted + 1, cp.rankProbe + 1}
		plan := explain(t, tx, "(ANALYZE, BUFFERS, TIMING OFF) "+in.q.SQL("blocked_candidates"), args...)
		checkPlan(t, "the blocked list's candidates", plan, []string{"outbox_event"},
			[]string{"Index Only Scan using outbox_blocked_idx", "outbox_claim_idx"})
		types, ids, seqs := []string{"order", "order"}, []string{"f-1", "r-1"}, []int64{1, 1}
		checkPlan(t, "the candidates' heads", explain(t, tx, in.q.SQL("blocked_heads"), types, ids, []byte("{}")),
			[]string{"outbox_event"}, []string{"outbox_aggregate_idx"})
		checkPlan(t, "their waiting events", explain(t, tx, in.q.SQL("blocked_waiting"), types, ids, seqs),
			[]string{"outbox_event"}, []string{"outbox_aggregate_idx"})
		return testenv.PlanBuffers(t, tx, in.q.SQL("blocked_candidates"), args...)
	}
	history(1000)
	small, smallNoStats := cost(true), cost(false)
	history(50_000)
	large, largeNoStats := cost(true), cost(false)
	t.Logf("the candidates' buffers: %d with 1,000 published, %d with 51,000 (without statistics: %d, %d)", small, large, smallNoStats, largeNoStats)
	if large > small+small/10 || largeNoStats > smallNoStats+smallNoStats/10 {
		t.Errorf("the candidates read %d buffers beside 51,000 published events, %d beside 1,000: they read history", large, small)
	}
}
