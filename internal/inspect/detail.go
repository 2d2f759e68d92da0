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
	if d.Consumed, err = collect(ctx, i, "event_inboxes", id, "inbox rows", pgx.RowToStructByPos[Consumption]); err != nil {
		return EventDetail{}, err
	}
	if d.Replays, err = collect(ctx, i, "event_replays", id, "replays", pgx.RowTo[string]); err != nil {
		return EventDetail{}, err
	}
	if d.CorrectedAs, err = collect(ctx, i, "event_corrections", id, "corrections", pgx.RowTo[string]); err != nil {
		return EventDetail{}, err
	}
	if d.Audit, err = collect(ctx, i, "trace_audit", id, "audit rows", pgx.RowToStructByPos[AuditEntry]); err != nil {
		return EventDetail{}, err
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

// collect reads what statement stmt returns for event id, each row by scan.
func collect[T any](ctx context.Context, i *Inspector, stmt, id, what string, scan pgx.RowToFunc[T]) ([]T, error) {
	rows, err := i.pool.Query(ctx, i.q.SQL(stmt), id)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", what, id, err)
	}
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", what, id, err)
	}
	return out, nil
}
