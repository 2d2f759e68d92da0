package inspect_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

func TestSnapshotCountsEveryState(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	_, err := b.pool.Exec(b.ctx, `
		INSERT INTO outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type, payload, created_at,
			available_at, attempts, published_at, seq)
		VALUES ('90000000-0000-0000-0000-000000000001', 'order', 'old', 'OrderPlaced', '{}', now() - interval '9 days',
			now() - interval '9 days', 1, now() - interval '9 days', 1);
		INSERT INTO consumed_event (consumer_name, event_id, consumed_at) VALUES
			('billing', gen_random_uuid(), now() - interval '1 minute'),
			('billing', gen_random_uuid(), now() - interval '1 hour'),
			('shipping', gen_random_uuid(), now() - interval '10 seconds')`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Counts
	// ready: r1, r2, the expired lease, and the one behind the scheduled event (it is
	// ready by the state rule; the relay's ordering holds it back).
	want := inspect.Counts{Ready: 4, Scheduled: 1, Pending: 5, Leased: 1, Failed: 2,
		Published: inspect.Count{Value: 3}, Archived: inspect.Count{Value: 1}}
	// the two events behind the failed one are ready too
	want.Ready, want.Pending = 6, 7
	// of which three wait behind an earlier failed or scheduled event
	want.Waiting = 3
	want.Publishable = 3
	if c != want {
		t.Fatalf("counts\n got %+v\nwant %+v", c, want)
	}
	if s.Inserted == nil || *s.Inserted < 13 {
		t.Errorf("inserted %v, want the seq identity's last value", s.Inserted)
	}
	if s.ExpiredLeases != 1 {
		t.Errorf("expired leases %d, want 1", s.ExpiredLeases)
	}
	// oldest pending: idBehindF1, created 19 minutes ago.
	if d := s.OldestPendingAge.Duration(); d < 19*time.Minute || d > 20*time.Minute {
		t.Errorf("oldest pending age %v, want ~19m", d)
	}
	// oldest ready: r1, claimable for 10 minutes (idBehindF1 is older but became
	// available only now).
	if d := s.OldestReadyAge.Duration(); d < 10*time.Minute || d > 11*time.Minute {
		t.Errorf("oldest ready age %v, want ~10m", d)
	}
	// oldest publishable: r1 as well; the events behind the failed one were created
	// earlier but wait, and do not count as the relay's lag.
	if d := s.OldestPublishableAge.Duration(); d < 10*time.Minute || d > 11*time.Minute || s.OldestPublishableApprox {
		t.Errorf("oldest publishable age %v (approx %v), want ~10m", d, s.OldestPublishableApprox)
	}
	if s.Partial || s.Counts.Approx != (inspect.Approx{}) || s.Blocked.Estimate {
		t.Errorf("a small outbox is counted exactly: partial %v approx %+v blocked %v", s.Partial, s.Counts.Approx, s.Blocked.Estimate)
	}
	if s.NextScheduledAt == nil || s.NextScheduledAt.Sub(s.TakenAt) < 9*time.Minute {
		t.Errorf("next scheduled %v (taken %v)", s.NextScheduledAt, s.TakenAt)
	}
	p := s.Published
	if p.Last1m != (inspect.Count{Value: 1}) || p.Last5m != (inspect.Count{Value: 2}) || p.Last1h != (inspect.Count{Value: 2}) {
		t.Errorf("published windows %+v", p)
	}
	if len(s.FailedByType) != 2 || len(s.FailedByError) != 1 ||
		s.FailedByError[0] != (inspect.Group{Key: "MESSAGE_TOO_LARGE: record too big", Count: 2}) {
		t.Errorf("failed groups %+v %+v", s.FailedByType, s.FailedByError)
	}
	hist := map[string]int64{}
	for _, h := range s.Attempts {
		hist[h.Label] = h.Count
	}
	// unpublished: attempts 0 ×6 (r1, r2, behind-sch, behind-f1, behind-f2... and
	// idFailed has 10), 1 ×3 (expired, leased, failed2), 2 ×1 (sched), 10+ ×1.
	if hist["0"] != 5 || hist["1"] != 3 || hist["2"] != 1 || hist["10+"] != 1 {
		t.Errorf("attempts histogram %v", hist)
	}
	byType := map[string]inspect.TypeCounts{}
	for _, tc := range s.ByEventType {
		byType[tc.EventType] = tc
	}
	if tc := byType["OrderPaid"]; tc.Ready != 1 || tc.Failed != 1 {
		t.Errorf("OrderPaid %+v", tc)
	}
	if tc := byType["InvoiceSent"]; tc.Failed != 1 || tc.Ready != 0 {
		t.Errorf("InvoiceSent %+v", tc)
	}
	// order/sch, order/dead, and invoice/i1 (failed, nothing behind it yet: still
	// blocked by the definition, with Waiting 0).
	if s.Blocked.Count != 3 || len(s.Blocked.Aggregates) != 3 {
		t.Fatalf("blocked %+v", s.Blocked)
	}
	// oldest blocking event first (by seq): the scheduled one was inserted before the failed one.
	got := map[string]inspect.BlockedAggregate{}
	for _, a := range s.Blocked.Aggregates {
		got[a.AggregateID] = a
	}
	if a := got["dead"]; a.Blocker.EventID != idFailed || a.Waiting != 2 || a.Blocker.State != "failed" {
		t.Errorf("blocked dead %+v", a)
	}
	if a := got["sch"]; a.Blocker.EventID != idSched || a.Waiting != 1 || a.Blocker.State != "scheduled" {
		t.Errorf("blocked sch %+v", a)
	}
	if a := got["i1"]; a.Blocker.EventID != idFailed2 || a.Waiting != 0 {
		t.Errorf("blocked i1 %+v", a)
	}
	if len(s.Inbox) != 2 || s.Inbox[0].Name != "billing" || s.Inbox[0].Total != (inspect.Count{Value: 2}) || s.Inbox[0].Last5m != 1 {
		t.Errorf("inbox %+v", s.Inbox)
	}
	if len(s.Health.Tables) != 4 || s.Health.Tables[0].Table != "outbox_event" || s.Health.Tables[0].TableBytes == 0 {
		t.Errorf("health %+v", s.Health.Tables)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotPastTheCaps: an outbox with more aggregates than a snapshot
// probes (12,000 ready, 3,000 failed in 3,000 aggregates each with one ready
// event waiting behind it, 2,500 scheduled): the counts are exact, and where
// the probes stopped the figures are bounds that hold and say so.
func TestSnapshotPastTheCaps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, failed_at, last_error, attempts)
		SELECT gen_random_uuid(), 'order', 'f-' || g, 'OrderPlaced', '{}', now() - interval '1 hour', now() - interval '1 hour',
			now() - interval '30 minutes' + g * interval '1 millisecond', 'poison ' || (g % 3), 10
		FROM generate_series(1, 3000) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts)
		SELECT gen_random_uuid(), 'order', 's-' || g, 'OrderPlaced', '{}', now() - interval '50 minutes', now() + interval '1 hour', 3
		FROM generate_series(1, 2500) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', CASE WHEN g <= 3000 THEN 'f-' || g ELSE 'r-' || g END, 'OrderPaid', '{}',
			now() - interval '40 minutes', now() - interval '40 minutes'
		FROM generate_series(1, 12000) g`,
		`VACUUM ANALYZE outbox_event`,
	)
	caps := inspect.DefaultTestCaps()
	caps.Count, caps.Probe = 20000, 2000
	inspect.SetTestCaps(b.in, caps)
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Counts
	if c.Ready != 12000 || c.Scheduled != 2500 || c.Failed != 3000 || c.Pending != 14500 ||
		c.Bounds.Ready != inspect.Exact || c.Bounds.Scheduled != inspect.Exact || c.Bounds.Failed != inspect.Exact {
		t.Fatalf("counts %+v, want ready 12000, scheduled 2500, failed 3000, exact", c)
	}
	// 12,000 aggregates have ready rows, more than are probed: the waiting ones
	// found are a lower bound, and ready − waiting an upper bound.
	if c.Waiting > 3000 || c.Bounds.Waiting != inspect.LowerBound || c.Publishable != 12000-c.Waiting || c.Bounds.Publishable != inspect.UpperBound ||
		!c.Approx.Waiting {
		t.Errorf("waiting %d (%q), publishable %d (%q): want a lower bound of 3000 and ready − waiting, an upper bound", c.Waiting, c.Bounds.Waiting, c.Publishable, c.Bounds.Publishable)
	}
	if s.FailedGroupsOf != 1001 || len(s.FailedByError) != 3 || s.FailedByError[0].Count+s.FailedByError[1].Count+s.FailedByError[2].Count != 1001 {
		t.Errorf("failed groups of %d: %+v", s.FailedGroupsOf, s.FailedByError)
	}
	// 5,500 aggregates are blocked; those probed and the 2,001 soonest retries
	// are found, a lower bound. The listed ones hold a waiting event each, the
	// oldest blockers first.
	if s.Blocked.Bound != inspect.LowerBound || !s.Blocked.Estimate || s.Blocked.Count < 2001 || s.Blocked.Count > 5500 ||
		len(s.Blocked.Aggregates) != inspect.BlockedLimit ||
		s.Blocked.Aggregates[0].Blocker.State != "failed" || s.Blocked.Aggregates[0].Waiting != 1 || s.Blocked.Aggregates[0].AggregateID != "f-1" {
		t.Errorf("blocked %d (%q), %d listed, first %+v", s.Blocked.Count, s.Blocked.Bound, len(s.Blocked.Aggregates), s.Blocked.Aggregates[0])
	}
	if d := s.OldestPublishableAge.Duration(); d < 40*time.Minute || d > 41*time.Minute || !s.OldestPublishableApprox {
		t.Errorf("oldest publishable %v (approx %v), want ~40m, approx", d, s.OldestPublishableApprox)
	}
}

// TestBlockedPastTheProbe: retries an unordered relay scheduled behind ready
// events head nothing; three blocked aggregates are found among them, exactly
// while the scan reaches every row, a marked lower bound when it does not.
func TestBlockedPastTheProbe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at)
		SELECT gen_random_uuid(), 'order', 'r-' || g, 'OrderPlaced', '{}', now() - interval '1 minute'
		FROM generate_series(1, 2100) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, attempts)
		SELECT gen_random_uuid(), 'order', 'r-' || g, 'OrderPaid', '{}', now() + interval '1 hour', 2
		FROM generate_series(1, 2100) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, attempts)
		SELECT gen_random_uuid(), 'order', 's-' || g, 'OrderPaid', '{}', now() + interval '2 hours', 2
		FROM generate_series(1, 3) g`,
		`VACUUM ANALYZE outbox_event`,
	)
	big := inspect.DefaultTestCaps()
	big.Probe = 5000
	inspect.SetTestCaps(b.in, big)
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every unpublished row is scanned and every aggregate probed: exact.
	if s.Blocked.Estimate || s.Blocked.Count != 3 {
		t.Errorf("blocked %d (%q), want exactly 3", s.Blocked.Count, s.Blocked.Bound)
	}
	// With fewer rows scanned than there are, and the soonest retries all behind
	// ready events, the blocked aggregates found are a lower bound, marked.
	small := inspect.DefaultTestCaps()
	small.Scan, small.Probe, small.Count = 1000, 1000, 1000
	inspect.SetTestCaps(b.in, small)
	if s, err = b.in.Snapshot(b.ctx); err != nil || s.Blocked.Bound != inspect.LowerBound || s.Blocked.Count > 3 {
		t.Errorf("blocked %d (%q, %v), want a lower bound of at most 3", s.Blocked.Count, s.Blocked.Bound, err)
	}
	inspect.SetTestCaps(b.in, inspect.DefaultTestCaps())
	if _, err := b.pool.Exec(b.ctx, `DELETE FROM outbox_event WHERE aggregate_id LIKE 'r-%' AND event_type = 'OrderPaid' AND aggregate_id > 'r-2'`); err != nil {
		t.Fatal(err)
	}
	if s, err = b.in.Snapshot(b.ctx); err != nil || s.Blocked.Estimate || s.Blocked.Count != 3 {
		t.Errorf("blocked %d (estimate %v, %v), want exactly 3 once every scheduled event is read", s.Blocked.Count, s.Blocked.Estimate, err)
	}
}

// TestOldestPublishableBetweenRetries: the rows the snapshot reads one by one
// hold no publishable event — the oldest 5,000 and the newest 5,000 are
// scheduled retries — so the oldest publishable age comes from the claim's
// index: the ten ready events between them, 30 minutes old.
func TestOldestPublishableBetweenRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	retries := `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, attempts)
		SELECT gen_random_uuid(), 'order', 's-' || g, 'OrderPaid', '{}', now() + interval '1 hour', 2
		FROM generate_series(1, 5001) g`
	b.exec(t, retries,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', 'r-' || g, 'OrderPlaced', '{}', now() - interval '30 minutes', now() - interval '30 minutes'
		FROM generate_series(1, 10) g`,
		retries, `VACUUM ANALYZE outbox_event`,
	)
	small := inspect.DefaultTestCaps()
	small.Scan, small.Count = 5000, 5000
	inspect.SetTestCaps(b.in, small)
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.OldestPublishableAge.Duration(); !s.Partial || d < 30*time.Minute || d > 31*time.Minute {
		t.Errorf("oldest publishable %v (partial %v), want ~30m", d, s.Partial)
	}
}

// TestInboxTotalNeverBelowItsLast5m: past the exact cap the total is the planner's
// estimate, which lags; it is never shown below the exact count of the last 5
// minutes beside it.
func TestInboxTotalNeverBelowItsLast5m(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.pool.Exec(b.ctx, `ANALYZE consumed_event;
		INSERT INTO consumed_event (consumer_name, event_id, consumed_at)
		SELECT 'billing', gen_random_uuid(), now() - g * interval '10 milliseconds' FROM generate_series(1, 2752) g`); err != nil {
		t.Fatal(err)
	}
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Inbox) != 1 || s.Inbox[0].Last5m != 2752 || s.Inbox[0].Total.Value < 2752 || !s.Inbox[0].Total.Estimate {
		t.Errorf("inbox %+v", s.Inbox)
	}
}
