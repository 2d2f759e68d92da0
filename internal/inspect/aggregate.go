package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/wire"
)

// Timeline is one aggregate's events in seq order — the order the relay publishes
// them in — from the outbox and the archive, with the inboxes that applied each.
type Timeline struct {
	AggregateType string          `json:"aggregate_type"`
	AggregateID   string          `json:"aggregate_id"`
	Events        []TimelineEvent `json:"events"`
	// Before and After count the aggregate's events left out before the first
	// listed and after the last (a long history is cut around its head).
	Before int64 `json:"before"`
	After  int64 `json:"after"`
	// Blocker is the event holding the aggregate back: its oldest unpublished
	// event, when that is failed or scheduled. Nil when nothing blocks.
	Blocker *Event `json:"blocker,omitempty"`
	// Waiting counts the unpublished events behind Blocker; WaitingSince is the
	// created_at of the oldest of them: each has waited since it was written, as
	// the blocker was unpublished all that time.
	Waiting      int64      `json:"waiting"`
	WaitingSince *time.Time `json:"waiting_since,omitempty"`
	// Consumers are every consumer with an inbox here, so a timeline can say which
	// did not apply an event.
	Consumers []string `json:"consumers"`
}

// TimelineEvent is one event of a Timeline.
type TimelineEvent struct {
	Event
	Consumed []Consumption `json:"consumed"`
}

// TimelineLimit bounds the events a Timeline lists.
const TimelineLimit = 200

// timelineContext is how many published events before the head a timeline shows.
const timelineContext = 5

// Timeline returns the events of one aggregate: when some are unpublished, a few
// published ones before the oldest unpublished event (the head) and the head with
// what follows it, up to limit (TimelineLimit when 0 or more); otherwise the newest
// limit events. Every part is read along an index by aggregate and seq: the
// unpublished rows' (001), the published rows' and the archive's (009), so a
// timeline costs the rows it shows however long the history.
func (i *Inspector) Timeline(ctx context.Context, aggregateType, aggregateID string, limit int) (Timeline, error) {
	if limit <= 0 || limit > TimelineLimit {
		limit = TimelineLimit
	}
	t := Timeline{AggregateType: aggregateType, AggregateID: aggregateID}
	var head *int64
	err := i.pool.QueryRow(ctx, i.q.SQL("timeline_head"), aggregateType, aggregateID).Scan(&head)
	if err != nil {
		return Timeline{}, fmt.Errorf("reading the head of %s/%s: %w", aggregateType, aggregateID, err)
	}
	both := i.timelineSQL
	var before, after []Event
	if head == nil {
		before, err = i.events(ctx, both("", "DESC", limit), aggregateType, aggregateID)
	} else {
		before, err = i.events(ctx, both(" AND seq < $3", "DESC", timelineContext), aggregateType, aggregateID, *head)
		if err == nil {
			after, err = i.events(ctx, both(" AND seq >= $3", "ASC", limit), aggregateType, aggregateID, *head)
		}
	}
	if err != nil {
		return Timeline{}, fmt.Errorf("reading the events of %s/%s: %w", aggregateType, aggregateID, err)
	}
	for j := len(before) - 1; j >= 0; j-- {
		t.Events = append(t.Events, TimelineEvent{Event: before[j]})
	}
	for _, e := range after {
		t.Events = append(t.Events, TimelineEvent{Event: e})
	}
	if len(t.Events) == 0 {
		return Timeline{}, fmt.Errorf("%w: aggregate %s/%s has no events", ErrNotFound, aggregateType, aggregateID)
	}
	first, last := t.Events[0].Seq, t.Events[len(t.Events)-1].Seq
	err = i.pool.QueryRow(ctx, i.timelineCountSQL(), aggregateType, aggregateID, first, last).Scan(&t.Before, &t.After)
	if err != nil {
		return Timeline{}, fmt.Errorf("counting the events of %s/%s: %w", aggregateType, aggregateID, err)
	}
	if err := i.timelineInboxes(ctx, &t); err != nil {
		return Timeline{}, err
	}
	if head != nil {
		if err := i.timelineBlocker(ctx, &t, *head); err != nil {
			return Timeline{}, err
		}
	}
	return t, nil
}

// timelineSQL reads up to n events of the aggregate ($1, $2) matching where, in
// seq order (ASC or DESC): sql/timeline.sql.
func (i *Inspector) timelineSQL(where, order string, n int) string {
	return i.q.SQL("timeline", map[string]any{"where": where, "order": order, "limit": n})
}

// timelineCountSQL counts the aggregate's ($1, $2) events before seq $3 and after
// seq $4.
func (i *Inspector) timelineCountSQL() string { return i.q.SQL("timeline_count") }

func (i *Inspector) events(ctx context.Context, query string, args ...any) ([]Event, error) {
	rows, err := i.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) { return scanEvent(r) })
}

// timelineInboxes fills the consumers and which of them applied each event: one
// probe of consumed_event's primary key per consumer and event.
func (i *Inspector) timelineInboxes(ctx context.Context, t *Timeline) error {
	ids := make([]string, len(t.Events))
	at := map[string]int{}
	for j, e := range t.Events {
		ids[j], at[e.EventID] = e.EventID, j
	}
	rows, err := i.pool.Query(ctx, i.q.SQL("timeline_inboxes"), ids)
	if err != nil {
		return fmt.Errorf("reading the inboxes of %s/%s: %w", t.AggregateType, t.AggregateID, err)
	}
	defer rows.Close()
	t.Consumers = []string{}
	for rows.Next() {
		var name string
		var id *string
		var when *time.Time
		if err := rows.Scan(&name, &id, &when); err != nil {
			return err
		}
		if len(t.Consumers) == 0 || t.Consumers[len(t.Consumers)-1] != name {
			t.Consumers = append(t.Consumers, name)
		}
		if id != nil && when != nil {
			e := &t.Events[at[*id]]
			e.Consumed = append(e.Consumed, Consumption{Consumer: name, ConsumedAt: *when})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the inboxes of %s/%s: %w", t.AggregateType, t.AggregateID, err)
	}
	return nil
}

// timelineBlocker sets Blocker, Waiting and WaitingSince when the head (the oldest
// unpublished event, seq head) is failed or scheduled.
func (i *Inspector) timelineBlocker(ctx context.Context, t *Timeline, head int64) error {
	var blocker *Event
	for j := range t.Events {
		if e := &t.Events[j].Event; e.Seq == head && e.ArchivedAt == nil {
			blocker = e
		}
	}
	if blocker == nil || (blocker.State != wire.Failed && blocker.State != wire.Scheduled) {
		return nil
	}
	b := *blocker
	t.Blocker = &b
	err := i.pool.QueryRow(ctx, i.q.SQL("timeline_waiting"), t.AggregateType, t.AggregateID, head).Scan(&t.Waiting, &t.WaitingSince)
	if err != nil {
		return fmt.Errorf("counting what waits behind %s: %w", b.EventID, err)
	}
	return nil
}
