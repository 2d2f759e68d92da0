package relay_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

// TestBacklogLagLeavesOutWaitingEvents: a poison event an hour old holds back a
// later event of its aggregate; the lag gauge is the age of the oldest event the
// relay could publish (ten seconds), not the hour the waiting one has sat there.
func TestBacklogLagLeavesOutWaitingEvents(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, failed_at, last_error)
		VALUES (gen_random_uuid(), 'order', 'poisoned', 'OrderPlaced', '{}', now() - interval '2 hours', now() - interval '2 hours', now() - interval '1 hour', 'too large');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		VALUES (gen_random_uuid(), 'order', 'poisoned', 'OrderPaid', '{}', now() - interval '1 hour', now() - interval '1 hour');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		VALUES (gen_random_uuid(), 'order', 'healthy', 'OrderPlaced', '{}', now() - interval '10 seconds', now() - interval '10 seconds')`)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(relay.NewBacklogCollector(pool, "public"))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetValue() + "}"
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	if lag := got["outboxtop_oldest_ready_age_seconds"]; lag < 10 || lag > 60 {
		t.Errorf("lag %.1f s, want ~10 s (the waiting event is an hour old)", lag)
	}
	if got["outboxtop_backlog_events{ready}"] != 2 || got["outboxtop_backlog_events{failed}"] != 1 {
		t.Errorf("backlog %v", got)
	}
}
