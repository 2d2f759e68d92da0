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
	// CorrectedAs are the ids of the corrected copies that replaced this event.
	CorrectedAs []string `json:"corrected_as"`
	// AttemptHistory is the event's tries that did not end published, oldest
	// first (see Attempt); HistoryError says why it could not be read, when
	// it could not.
	AttemptHistory []Attempt `json:"attempt_history"`
	HistoryError   string    `json:"attempt_history_error,omitempty"`
	// Audit lists the outbox_audit rows whose event_ids hold this event, oldest
	// first. Timeline merges the two.
	Audit []AuditEntry `json:"audit"`
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
	rows, err = i.pool.Query(ctx, i.q.SQL("event_corrections"), id)
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading corrections of %s: %w", id, err)
	}
	d.CorrectedAs, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading corrections of %s: %w", id, err)
	}
	rows, err = i.pool.Query(ctx, i.q.SQL("trace_audit"), id)
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading audit rows of %s: %w", id, err)
	}
	d.Audit, err = pgx.CollectRows(rows, pgx.RowToStructByPos[AuditEntry])
	if err != nil {
		return EventDetail{}, fmt.Errorf("reading audit rows of %s: %w", id, err)
	}
	// A role without the history's grant still sees the event: the history
	// says why it is missing.
	d.AttemptHistory = []Attempt{}
	switch h, err := i.AttemptHistory(ctx, []string{id}); {
	case errors.Is(err, ErrHistoryRefused):
		d.HistoryError = err.Error()
	case err != nil:
		return EventDetail{}, err
	case h[id] != nil:
		d.AttemptHistory = h[id]
	}
	return d, nil
}
