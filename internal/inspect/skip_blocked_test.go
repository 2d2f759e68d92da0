package inspect_test

import (
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Skip moves the aggregate's blocking event to the archive and clears the relay's
// blocked hint on the rows that waited behind it, so the claim sees them again;
// other aggregates' hints stay.
func TestSkipClearsTheBlockedHintOfItsAggregate(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_event SET blocked = true
		WHERE published_at IS NULL AND failed_at IS NULL AND event_id <> $1`, idFailed); err != nil {
		t.Fatal(err)
	}
	count := func(where string) int {
		var n int
		if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM outbox_event WHERE blocked AND `+where, idFailed).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	dead := `aggregate_id = (SELECT aggregate_id FROM outbox_event WHERE event_id = $1)`
	others := `aggregate_id <> (SELECT aggregate_id FROM outbox_event WHERE event_id = $1)`
	behind, elsewhere := count(dead), count(others)
	if behind == 0 || elsewhere == 0 {
		t.Fatalf("fixture: %d blocked behind the failed event, %d elsewhere; want some of each", behind, elsewhere)
	}
	res, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Skip, IDs: []string{idFailed}, Reason: "gone", Actor: "carol"})
	if err != nil || res.Rows != 1 {
		t.Fatalf("skip %+v %v", res, err)
	}
	var left, kept int
	if err := b.pool.QueryRow(b.ctx, `SELECT
			count(*) FILTER (WHERE blocked AND aggregate_id = 'dead'),
			count(*) FILTER (WHERE blocked AND aggregate_id <> 'dead')
		FROM outbox_event`).Scan(&left, &kept); err != nil {
		t.Fatal(err)
	}
	if left != 0 || kept != elsewhere {
		t.Errorf("after skip: %d still blocked behind it (want 0), %d blocked elsewhere (want %d)", left, kept, elsewhere)
	}
}
