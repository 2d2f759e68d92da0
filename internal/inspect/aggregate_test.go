package inspect_test

import (
	"errors"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

func TestTimelineOfABlockedAggregate(t *testing.T) {
	t.Parallel()
	const (
		pub1 = "e1000000-0000-0000-0000-000000000001"
		pub2 = "e1000000-0000-0000-0000-000000000002"
	)
	b := setup(t,
		row{id: pub1, aggID: "4711", created: -30 * time.Minute, attempts: 1, published: ago(29 * time.Minute)},
		row{id: pub2, aggID: "4711", created: -25 * time.Minute, attempts: 1, published: ago(24 * time.Minute)},
		row{id: idFailed, aggID: "4711", eventType: "OrderPaid", created: -20 * time.Minute, attempts: 10,
			failed: ago(5 * time.Minute), lastError: "MESSAGE_TOO_LARGE: record too big"},
		row{id: idBehindF1, aggID: "4711", created: -19 * time.Minute},
		row{id: idBehindF2, aggID: "4711", created: -18 * time.Minute},
		row{id: idReady1, aggID: "other", created: -time.Minute},
	)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES
		('billing', $1), ('billing', $2), ('shipping', $1), ('audit', $3)`, pub1, pub2, idReady1); err != nil {
		t.Fatal(err)
	}
	tl, err := b.in.Timeline(b.ctx, "order", "4711", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    string
		state wire.State
		inbox int
	}{{pub1, wire.Published, 2}, {pub2, wire.Published, 1}, {idFailed, wire.Failed, 0},
		{idBehindF1, wire.Ready, 0}, {idBehindF2, wire.Ready, 0}}
	if len(tl.Events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(tl.Events), len(want), tl.Events)
	}
	for j, w := range want {
		e := tl.Events[j]
		if e.EventID != w.id || e.State != w.state || len(e.Consumed) != w.inbox {
			t.Errorf("event %d: %s %s %d inboxes, want %s %s %d", j, e.EventID, e.State, len(e.Consumed), w.id, w.state, w.inbox)
		}
		if j > 0 && e.Seq <= tl.Events[j-1].Seq {
			t.Errorf("event %d out of seq order", j)
		}
	}
	if tl.Blocker == nil || tl.Blocker.EventID != idFailed || tl.Waiting != 2 || tl.WaitingSince == nil ||
		time.Since(*tl.WaitingSince) < 18*time.Minute || time.Since(*tl.WaitingSince) > 20*time.Minute {
		t.Fatalf("blocker %+v, %d waiting since %v", tl.Blocker, tl.Waiting, tl.WaitingSince)
	}
	if len(tl.Consumers) != 3 || tl.Before != 0 || tl.After != 0 {
		t.Fatalf("consumers %v, before %d, after %d", tl.Consumers, tl.Before, tl.After)
	}

	// Skipped, the blocker moves to the archive and is still in the timeline; the
	// next event is the head and nothing blocks.
	if _, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Skip, IDs: []string{idFailed}, Reason: "poison", Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	tl, err = b.in.Timeline(b.ctx, "order", "4711", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Events) != 5 || tl.Events[2].State != inspect.Archived || tl.Blocker != nil || tl.Waiting != 0 {
		t.Fatalf("after skip: blocker %+v, events %+v", tl.Blocker, tl.Events)
	}

	// A cut timeline counts what it leaves out.
	tl, err = b.in.Timeline(b.ctx, "order", "4711", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Events) != 4 || tl.Events[3].EventID != idBehindF1 || tl.Before != 0 || tl.After != 1 { // 3 before the head, the head; one left out
		var ids []string
		for _, e := range tl.Events {
			ids = append(ids, e.EventID)
		}
		t.Fatalf("limit 1: %v, before %d, after %d", ids, tl.Before, tl.After)
	}
	if _, err := b.in.Timeline(b.ctx, "order", "nope", 0); !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("unknown aggregate: %v", err)
	}
}
