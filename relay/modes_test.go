package relay

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

func claims(t *testing.T, r *Relay) uint64 {
	t.Helper()
	var m dto.Metric
	if err := r.m.ClaimSeconds.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// A paused relay claims nothing (in-flight batches finish); Resume picks up
// what arrived meanwhile.
func TestPauseStopsClaimingAndResumeContinues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	r := b.relay(t, cfg)
	start(t, r)
	testenv.WaitFor(t, 10*time.Second, "a first claim", func() bool { return claims(t, r) > 0 })
	r.Pause()
	testenv.WaitFor(t, 10*time.Second, "paused with nothing in flight", func() bool { return r.Status().Paused && r.Status().InFlight == 0 })
	before := claims(t, r)
	b.insertSeed(t, 20, 5, "o-")
	// Absence can only be watched for a while: ten poll intervals and a NOTIFY.
	deadline := time.Now().Add(10 * cfg.PollInterval)
	for time.Now().Before(deadline) {
		if n := claims(t, r); n != before {
			t.Fatalf("a paused relay claimed (%d claims, %d before)", n, before)
		}
		time.Sleep(cfg.PollInterval / 2)
	}
	if got := b.count(t, "published_at IS NOT NULL OR attempts > 0"); got != 0 {
		t.Fatalf("%d events touched while paused", got)
	}
	r.Resume()
	testenv.WaitFor(t, 30*time.Second, "published after resume", func() bool { return b.count(t, "published_at IS NOT NULL") == 20 })
}

// --ordering=none: everything publishable goes, and a failed event does not
// hold back the later events of its aggregate.
func TestUnorderedPublishesPastFailedEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, topic) VALUES
		(gen_random_uuid(), 'order', 'p', 'Bad', '{}', 'bad/topic'),
		(gen_random_uuid(), 'order', 'p', 'Good', '{}', NULL)`); err != nil {
		t.Fatal(err)
	}
	b.insertSeed(t, 2000, 10, "o-")
	cfg := b.config()
	cfg.Ordering = OrderNone
	cfg.Drain = true
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := b.relay(t, cfg).Run(dctx); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "published_at IS NOT NULL AND kafka_offset IS NOT NULL"); got != 2001 {
		t.Fatalf("%d published, want 2001", got)
	}
	if got := b.count(t, "event_type = 'Bad' AND failed_at IS NOT NULL AND last_error LIKE 'invalid topic%'"); got != 1 {
		t.Fatal("the bad event did not fail")
	}
	recs := b.delivered(t, 2001, b.topic)
	seen := map[string]int{}
	for _, rec := range recs {
		seen[header(rec, "event_id")]++
	}
	if len(seen) != 2001 {
		t.Fatalf("%d distinct events in Kafka, want 2001", len(seen))
	}
}

// Nothing but the relay's probe of outboxtop_inserted wakes it here (the poll
// is ten minutes, and no insert sends a NOTIFY): a committed insert is
// published at once, and so is one whose transaction commits a while after
// its insert drew its seq (the probe's follow-up wake-ups find it).
func TestInsertsWakeTheRelayWithoutNotify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := b.config()
	cfg.PollInterval = 10 * time.Minute
	r := b.relay(t, cfg)
	start(t, r)
	b.insertSeed(t, 5, 5, "o-")
	testenv.WaitFor(t, 10*time.Second, "published without a NOTIFY", func() bool { return b.count(t, "published_at IS NOT NULL") == 5 })
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		VALUES (gen_random_uuid(), 'order', 'late', 'OrderPlaced', '{}')`); err != nil {
		t.Fatal(err)
	}
	// Past the first follow-ups: the relay has claimed, and found nothing,
	// since the insert drew its seq.
	time.Sleep(150 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "a late commit published by a follow-up wake-up", func() bool { return b.count(t, "published_at IS NOT NULL") == 6 })
}
