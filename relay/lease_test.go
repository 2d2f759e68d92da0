package relay

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A relay whose lease ran out while it was still publishing (a zombie: paused,
// swapped out, stuck in GC) must not overwrite the new holder's mark.
func TestExpiredLeaseHolderIsFenced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.insertSeed(t, 10, 10, "o-")
	zombie := b.relay(t, b.config())
	token := uuid.New()
	events, err := zombie.claim(ctx, token, 100)
	if err != nil || len(events) != 10 {
		t.Fatalf("zombie claim: %d events, %v", len(events), err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE outbox_event SET lease_until = now() - interval '1 second' WHERE lease_token = $1`, token); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.Drain = true
	if err := b.relay(t, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	type coords struct {
		topic     string
		part      int32
		off       int64
		published time.Time
		token     uuid.UUID
	}
	read := func() map[uuid.UUID]coords {
		rows, err := b.pool.Query(ctx, `SELECT event_id, kafka_topic, kafka_partition, kafka_offset, published_at, lease_token FROM outbox_event`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[uuid.UUID]coords{}
		for rows.Next() {
			var id uuid.UUID
			var c coords
			if err := rows.Scan(&id, &c.topic, &c.part, &c.off, &c.published, &c.token); err != nil {
				t.Fatal(err)
			}
			out[id] = c
		}
		return out
	}
	before := read()
	// The zombie wakes up and finishes its batch: it publishes (duplicates) and
	// tries to mark.
	zombie.publish(ctx, ctx, token, events, nil)
	if got := zombie.Status().LostFences; got != 10 {
		t.Fatalf("lost fences %d, want 10", got)
	}
	if got := testutil.ToFloat64(zombie.m.LostFences); got != 10 {
		t.Fatalf("lost fences metric %v, want 10", got)
	}
	after := read()
	for id, c := range before {
		if after[id] != c {
			t.Fatalf("event %s changed by the fenced relay: %+v → %+v", id, c, after[id])
		}
		if c.token == token {
			t.Fatalf("event %s still carries the zombie's token", id)
		}
	}
}

func TestSlowBatchRenewsItsLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.Lease = 3 * time.Second
	cfg.PublishTimeout = 2900 * time.Millisecond
	r := b.relay(t, cfg)
	stop := start(t, r)
	b.insertSeed(t, 1, 1, "warm-")
	testenv.WaitFor(t, 30*time.Second, "warm-up published", func() bool { return b.count(t, "published_at IS NOT NULL") == 1 })
	// The next produce takes 2.5 s: its batch outlives half its lease.
	b.net.slowNextWrite(2500 * time.Millisecond)
	b.insertSeed(t, 20, 20, "o-")
	testenv.WaitFor(t, time.Minute, "slow batch published", func() bool { return b.count(t, "published_at IS NOT NULL") == 21 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(r.m.LeaseRenewals); got < 1 {
		t.Fatalf("lease renewals %v, want at least 1 for a batch slower than half its lease", got)
	}
	if got := r.Status().LostFences; got != 0 {
		t.Fatalf("lost fences %d", got)
	}
}

// An acknowledged batch whose relay "dies" before marking it (AbandonNextBatch)
// is claimed again once its lease runs out and published again: every event
// reaches Kafka at least once and at most twice, and the abandoned batch's
// acknowledged records are the duplicates. Normally Kafka acknowledges all 50
// of that batch (100 records); under a loaded CI machine part of it once
// outlived the publish timeout, so only those acknowledged were written twice
// (80 records): the batch is abandoned as soon as any record was acknowledged,
// and what the test can hold to is at least once, at most twice, and the
// whole batch claimed again.
func TestAbandonedBatchIsPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.Lease = 3 * time.Second
	cfg.PublishTimeout = 2900 * time.Millisecond
	r := b.relay(t, cfg)
	r.AbandonNextBatch()
	b.insertSeed(t, 50, 10, "o-")
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "published after the abandoned batch's lease ran out", func() bool {
		return b.count(t, "published_at IS NOT NULL") == 50
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	recs := b.delivered(t, 51, b.topic)
	ids := map[string]int{}
	twice := 0
	for _, rec := range recs {
		id := header(rec, "event_id")
		ids[id]++
		switch ids[id] {
		case 2:
			twice++
		case 3:
			t.Errorf("event %s delivered three times", id)
		}
	}
	if len(ids) != 50 || twice == 0 {
		t.Fatalf("%d records for %d events, %d of them twice; want all 50, the abandoned batch's acknowledged ones twice", len(recs), len(ids), twice)
	}
	if twice != 50 {
		t.Logf("%d of the abandoned batch's 50 events were acknowledged before it was abandoned", twice)
	}
	if got := b.count(t, "attempts = 2"); got != 50 {
		t.Fatalf("%d events claimed twice, want 50", got)
	}
}
