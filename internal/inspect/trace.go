package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrAmbiguous: an id prefix that more than one event starts with. The error is an
// *AmbiguousError, which lists them.
var ErrAmbiguous = errors.New("ambiguous event id")

// AmbiguousError names the events an id prefix matches.
type AmbiguousError struct {
	Prefix     string
	Candidates []Event // at most ambiguousShown, in event_id order
	More       bool    // more events match than are listed
}

const ambiguousShown = 5

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "event id %q is ambiguous: it matches", e.Prefix)
	for i, c := range e.Candidates {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s %s/%s, %s)", c.EventID, c.EventType, c.AggregateType, c.AggregateID, c.State)
	}
	if e.More {
		b.WriteString(", and more")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// Resolve turns an event id, or the start of one, into the full id of the one
// event (in the outbox or the archive) it names. A prefix is read as a uuid range
// on the primary keys, so it costs an index probe however big the tables are. When
// no id starts with it, at least 6 hex digits are also tried as the end of an id
// (the console shows UUIDv7 ids by their last 8 digits); that reads the tables.
// It returns ErrNotFound, or an *AmbiguousError listing the candidates.
func (i *Inspector) Resolve(ctx context.Context, idOrPrefix string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(idOrPrefix))
	hex := strings.ReplaceAll(p, "-", "")
	if p == "" || len(hex) > 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%w: %q is not an event id or the start of one (hex digits and dashes)", ErrNotFound, idOrPrefix)
	}
	lo, hi := uuidText(hex+strings.Repeat("0", 32-len(hex))), uuidText(hex+strings.Repeat("f", 32-len(hex)))
	where := "event_id BETWEEN $1::uuid AND $2::uuid"
	args := []any{lo, hi}
	found, err := i.candidates(ctx, where, args...)
	if err != nil {
		return "", err
	}
	if len(found) == 0 && len(hex) >= 6 && len(hex) < 32 {
		found, err = i.candidates(ctx, "right(replace(event_id::text, '-', ''), $1) = $2", len(hex), hex)
		if err != nil {
			return "", err
		}
	}
	switch {
	case len(found) == 0:
		return "", fmt.Errorf("%w: no event id starts with %q", ErrNotFound, p)
	case len(found) == 1:
		return found[0].EventID, nil
	}
	e := &AmbiguousError{Prefix: p, Candidates: found}
	if len(found) > ambiguousShown {
		e.Candidates, e.More = found[:ambiguousShown], true
	}
	return "", e
}

// candidates reads up to ambiguousShown+1 events of the outbox and the archive
// matching where.
func (i *Inspector) candidates(ctx context.Context, where string, args ...any) ([]Event, error) {
	q := i.q.SQL("candidates", map[string]any{"where": where, "limit": ambiguousShown + 1})
	rows, err := i.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("resolving event id: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("resolving event id: %w", err)
	}
	return evs, nil
}

func uuidText(h string) string {
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Trace is an event's life in one place: the row, the operators' actions on it,
// the inboxes that applied it and, when checked, its record in Kafka.
type Trace struct {
	EventDetail
	// Kafka is the record read back at the row's coordinates; nil when the row has
	// none (not published) or Kafka was not asked (see CheckRecord).
	Kafka *RecordCheck `json:"kafka,omitempty"`
}

// AuditEntry is one outbox_audit row.
type AuditEntry struct {
	ID     int64     `json:"audit_id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Rows   int       `json:"rows"`
	Reason string    `json:"reason,omitempty"`
	DBUser string    `json:"db_user,omitempty"`
	// Diff is what the action changed in the event's payload (a correction),
	// as the action function computed it from the stored and the new payload.
	Diff []Change `json:"diff,omitempty"`
}

// Trace resolves idOrPrefix (see Resolve) and reads the event's detail: row,
// inbox rows, replays, attempt history and audit rows. The Kafka side is CheckRecord's.
func (i *Inspector) Trace(ctx context.Context, idOrPrefix string) (Trace, error) {
	id, err := i.Resolve(ctx, idOrPrefix)
	if err != nil {
		return Trace{}, err
	}
	d, err := i.Detail(ctx, id)
	if err != nil {
		return Trace{}, err
	}
	return Trace{EventDetail: d}, nil
}
