package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A lease that runs out behind the claim position, with no write to make the
// row claimable again (a relay that claimed it from behind this one's position
// and died), is met by no claim: the window starts after it, and no unseen
// transaction touched it. The rescue gives it back, moved to the end of the
// index, and the next claim takes it; a live lease, a published row and a
// failed one stay as they are.
func TestRescueGivesBackExpiredLeasesBehindThePosition(t *testing.T) {
	t.Parallel()
	for _, ordering := range []Ordering{OrderAggregate, OrderNone} {
		t.Run(string(ordering), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			b.insertSeed(t, 4, 4, "r-")
			if _, err := b.pool.Exec(ctx, `
				UPDATE outbox_event SET lease_token = gen_random_uuid(), lease_holder = 'dead:1', attempts = 1,
				       lease_until = CASE WHEN aggregate_id = 'r-1' THEN now() - interval '1 second' ELSE now() + interval '1 hour' END
				WHERE aggregate_id IN ('r-1', 'r-2');
				UPDATE outbox_event SET published_at = now(), kafka_topic = 't', kafka_partition = 0, kafka_offset = 0
				WHERE aggregate_id = 'r-3';
				UPDATE outbox_event SET failed_at = now(), last_error = 'x', lease_until = now() - interval '1 second'
				WHERE aggregate_id = 'r-0'`); err != nil {
				t.Fatal(err)
			}
			cfg := b.config()
			cfg.Ordering = ordering
			r := b.relay(t, cfg)
			// A position after every row, and a snapshot that saw them all.
			var now time.Time
			var xmax uint64
			if err := b.pool.QueryRow(ctx, `SELECT now(), pg_snapshot_xmax(pg_current_snapshot())`).Scan(&now, &xmax); err != nil {
				t.Fatal(err)
			}
			r.cursor.advance(claimPosition{now: now}, xmax, nil)
			if events, err := r.claim(ctx, uuid.New(), 100); err != nil || len(events) != 0 {
				t.Fatalf("claim before the rescue: %d events, %v; want none (the expired lease is behind the position)", len(events), err)
			}
			n, err := r.rescue(ctx)
			if err != nil || n != 1 {
				t.Fatalf("rescue: %d, %v; want 1", n, err)
			}
			var leased, ready bool
			var at time.Time
			if err := b.pool.QueryRow(ctx, `
				SELECT lease_token IS NOT NULL OR lease_until IS NOT NULL, ready_xid >= $1::xid8, available_at
				FROM outbox_event WHERE aggregate_id = 'r-1'`, xmax).Scan(&leased, &ready, &at); err != nil {
				t.Fatal(err)
			}
			if leased || !ready || at.Before(now) {
				t.Fatalf("rescued row: leased %v, ready_xid recorded %v, available_at %v (position %v)", leased, ready, at, now)
			}
			events, err := r.claim(ctx, uuid.New(), 100)
			if err != nil || len(events) != 1 || events[0].aggregateID != "r-1" || events[0].attempts != 2 {
				t.Fatalf("claim after the rescue: %v, %v; want r-1's event, its second attempt", events, err)
			}
			if got := b.count(t, `aggregate_id = 'r-2' AND lease_holder = 'dead:1' AND lease_until > now()`); got != 1 {
				t.Fatalf("the live lease was touched (%d rows left)", got)
			}
			if got := b.count(t, `(aggregate_id = 'r-3' AND published_at IS NOT NULL) OR (aggregate_id = 'r-0' AND failed_at IS NOT NULL AND lease_until IS NOT NULL)`); got != 2 {
				t.Fatalf("published or failed rows were touched (%d of 2 as they were)", got)
			}
			if n, err := r.rescue(ctx); err != nil || n != 0 {
				t.Fatalf("second rescue: %d, %v; want nothing left to give back", n, err)
			}
		})
	}
}

// Every busy aggregate keeps its head hint while there are fewer than a
// generation of them, noted in the claims' order; past that the hints stay
// bounded by two generations.
func TestHeadHintsKeepEveryBusyAggregate(t *testing.T) {
	t.Parallel()
	var h headHints
	const busy = 5000
	for round := range 10 {
		for i := 0; i < busy; i += 400 { // a claim notes the heads of its window
			var types, ids []string
			var seqs []int64
			for j := i; j < min(i+400, busy); j++ {
				types, ids, seqs = append(types, "order"), append(ids, fmt.Sprint("o-", j)), append(seqs, int64(round*busy+j))
			}
			h.note(types, ids, seqs)
		}
	}
	var m map[string]map[string]int64
	if err := json.Unmarshal([]byte(h.arg()), &m); err != nil {
		t.Fatal(err)
	}
	if n := len(m["order"]); n != busy {
		t.Errorf("%d of %d busy aggregates keep a hint", n, busy)
	}
	for j := range 100_000 {
		h.note([]string{"other"}, []string{fmt.Sprint(j)}, []int64{int64(j)})
	}
	m = nil
	if err := json.Unmarshal([]byte(h.arg()), &m); err != nil {
		t.Fatal(err)
	}
	if n := len(m["order"]) + len(m["other"]); n > 2*hintGeneration {
		t.Errorf("%d hints kept, more than two generations (%d)", n, 2*hintGeneration)
	}
}
