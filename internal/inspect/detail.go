package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventDetail is one event with everything known about it.
type EventDetail struct {
	Event
	// Consumed lists the consumers whose inbox holds this event_id.
	Consumed []Consumption `json:"consumed"`
	// Replays are the event_ids of events inserted with replay_of = this id
	// (excluding the event itself when it was replayed under its own id).
	Replays []string `json:"replays"`
}

// Consumption is one consumed_event row.
type Consumption struct {
	Consumer   string    `json:"consumer"`
	ConsumedAt time.Time `json:"consumed_at"`
}

// Detail returns one event by id: from outbox_event, else from the archive. It
// returns ErrNotFound when neither has it.
func (i *Inspector) Detail(ctx context.Context, id string) (EventDetail, error) {
	id = strings.TrimSpace(strings.ToLower(id))
	if err := (Filter{IDPrefix: id}).Validate(); err != nil || len(id) != 36 {
		return EventDetail{}, fmt.Errorf("%w: %q is not an event id", ErrNotFound, id)
	}
	var d EventDetail
	var err error
	for _, stmt := range []string{"event", "archived_event"} {
		d.Event, err = scanEvent(i.pool.QueryRow(ctx, i.q.SQL(stmt), id))
		if err == nil {
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return EventDetail{}, fmt.Errorf("reading event %s: %w", id, err)
		}
	}
	if err != nil {
		return EventDetail{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	rows, err := i.pool.Query(ctx, i.q.SQL("event_inboxes"), id)
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading inbox rows of %s: %w", id, err)
	}
	d.Consumed, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Consumption])
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading inbox rows of %s: %w", id, err)
	}
	rows, err = i.pool.Query(ctx, i.q.SQL("event_replays"), id)
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading replays of %s: %w", id, err)
	}
	d.Replays, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading replays of %s: %w", id, err)
	}
	return d, nil
}
