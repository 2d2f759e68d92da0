package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxtop/outboxtop/wire"
)

// Head is the event at the head of an aggregate (its first unpublished one)
// that holds back the events behind it: failed, or scheduled for later.
type Head struct {
	EventID     string     `json:"event_id"`
	Seq         int64      `json:"seq"`
	State       wire.State `json:"state"`
	AvailableAt time.Time  `json:"available_at"`
	FailedAt    *time.Time `json:"failed_at,omitempty"`
}

// Label is how a row waiting behind h is shown, seen at now: "waiting behind
// seq 41 (scheduled, next attempt in 973 years)", "… (failed 3m05s ago)".
func (h Head) Label(now time.Time) string {
	return "waiting behind seq " + fmt.Sprint(h.Seq) + " (" + h.Why(now) + ")"
}

// Why says what holds the head: "scheduled, next attempt in 973 years",
// "failed 3m05s ago".
func (h Head) Why(now time.Time) string {
	if h.State == wire.Failed && h.FailedAt != nil {
		return "failed " + Relative(*h.FailedAt, now)
	}
	return "scheduled, next attempt " + Relative(h.AvailableAt, now)
}

// WaitingBehind returns, by event id, the head each of the unpublished events
// ids waits behind: its aggregate's first unpublished event, when that comes
// before it and is failed or scheduled. Such an event may be ready by its own
// available_at, yet it is not published before its head is: it is not "ready
// now" to a reader. Events not waiting are not in the map.
func (i *Inspector) WaitingBehind(ctx context.Context, ids []string) (map[string]Head, error) {
	out := map[string]Head{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := i.pool.Query(ctx, i.q.SQL("waiting_behind"), ids)
	if err != nil {
		return nil, fmt.Errorf("reading the heads events wait behind: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, state string
		var h Head
		if err := rows.Scan(&id, &h.EventID, &h.Seq, &state, &h.AvailableAt, &h.FailedAt); err != nil {
			return nil, fmt.Errorf("reading the heads events wait behind: %w", err)
		}
		h.State = wire.State(state)
		out[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the heads events wait behind: %w", err)
	}
	return out, nil
}
