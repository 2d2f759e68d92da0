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
	for _, archived := range []bool{false, true} {
		table := i.outbox
		if archived {
			table = i.archive
		}
		d.Event, err = scanEvent(i.pool.QueryRow(ctx,
			"SELECT "+eventColumns(archived, true)+" FROM "+table+" WHERE event_id = $1::uuid", id))
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
	// Per consumer through the primary key (consumer_name, event_id): no index on
	// event_id alone is added to the consumers' insert path.
	rows, err := i.pool.Query(ctx, consumersCTE(i.consumed)+
		"SELECT c.consumer_name, "+finite("e.consumed_at")+" FROM consumers c JOIN "+i.consumed+" e"+
		" ON e.consumer_name = c.consumer_name AND e.event_id = $1::uuid ORDER BY e.consumed_at", id)
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading inbox rows of %s: %w", id, err)
	}
	d.Consumed, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Consumption])
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading inbox rows of %s: %w", id, err)
	}
	rows, err = i.pool.Query(ctx,
		"SELECT event_id::text FROM "+i.outbox+" WHERE replay_of = $1::uuid AND event_id <> $1::uuid"+
			" UNION SELECT event_id::text FROM "+i.archive+" WHERE replay_of = $1::uuid AND event_id <> $1::uuid", id)
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading replays of %s: %w", id, err)
	}
	d.Replays, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading replays of %s: %w", id, err)
	}
	return d, nil
}

// consumersCTE defines "consumers", the distinct consumer names, by a loose index
// scan over consumed_event's primary key: one probe per consumer, not a table scan.
func consumersCTE(table string) string {
	return `WITH RECURSIVE consumers(consumer_name) AS (
		(SELECT consumer_name FROM ` + table + ` ORDER BY consumer_name LIMIT 1)
		UNION ALL
		SELECT (SELECT n.consumer_name FROM ` + table + ` n WHERE n.consumer_name > c.consumer_name ORDER BY n.consumer_name LIMIT 1)
		FROM consumers c WHERE c.consumer_name IS NOT NULL
	) `
}
