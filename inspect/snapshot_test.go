package inspect_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/inspect"
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
	if c != want {
		t.Fatalf("counts\n got %+v\nwant %+v", c, want)
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
