package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Attempt is one try of an event that did not end published, as the relay
// recorded it in outbox_attempt: the newest AttemptHistoryLimit of an event
// are kept, and they go when its archived row is deleted.
type Attempt struct {
	EventID string    `json:"-"`
	At      time.Time `json:"at"`
	// Attempt is the event's attempts counter at the try (a retried event
	// starts over at 1).
	Attempt int `json:"attempt"`
	// Holder is the relay that tried it (host:pid).
	Holder string `json:"lease_holder"`
	// Class is what went wrong: retriable, permanent, no-topic, cancelled,
	// out-of-order (Kafka took it after an earlier event of its aggregate
	// failed) or unreachable (the brokers did not answer).
	Class string `json:"class"`
	// Outcome is what the relay did: schedule (again after Backoff), fail,
	// wait (for its topic, attempt not counted) or release (ready again now,
	// attempt not counted).
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
	// KafkaCode is Kafka's error code, when its answer carried one.
	KafkaCode *int16 `json:"kafka_code,omitempty"`
	// BackoffMS is the delay chosen before the next try, when there is one.
	BackoffMS *int64 `json:"backoff_ms,omitempty"`
}

// AttemptHistoryLimit is how many attempts of an event outbox_attempt keeps
// (migrations/functions/outboxtop_attempt_prune.sql).
const AttemptHistoryLimit = 20

// AttemptHistory reads the attempt history of the events ids, oldest first,
// by event id. A role that may not read outbox_attempt (grants from before
// the table) gets ErrHistoryRefused.
func (i *Inspector) AttemptHistory(ctx context.Context, ids []string) (map[string][]Attempt, error) {
	out := map[string][]Attempt{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := i.pool.Query(ctx, i.q.SQL("attempt_history"), ids)
	if err != nil {
		return nil, historyError(err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Attempt])
	if err != nil {
		return nil, historyError(err)
	}
	for _, a := range list {
		out[a.EventID] = append(out[a.EventID], a)
	}
	return out, nil
}

// ErrHistoryRefused: the role may not read outbox_attempt.
var ErrHistoryRefused = errors.New("attempt history not readable: apply `outboxtop grants` for this role (SELECT on outbox_attempt)")

func historyError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "42P01") {
		return fmt.Errorf("%w (%v)", ErrHistoryRefused, err)
	}
	return fmt.Errorf("reading attempt history: %w", err)
}

// HistoryItem is one entry of an event's timeline: a try (Attempt) or an
// operator's action on it (Action).
type HistoryItem struct {
	At      time.Time
	Attempt *Attempt
	Action  *AuditEntry
}

// Timeline merges the event's attempts and the operators' actions on it,
// oldest first; at the same instant an action comes after a try.
func (d EventDetail) Timeline() []HistoryItem {
	var out []HistoryItem
	for k := range d.AttemptHistory {
		out = append(out, HistoryItem{At: d.AttemptHistory[k].At, Attempt: &d.AttemptHistory[k]})
	}
	for k := range d.Audit {
		out = append(out, HistoryItem{At: d.Audit[k].At, Action: &d.Audit[k]})
	}
	isAction := func(h HistoryItem) int {
		if h.Action != nil {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b HistoryItem) int {
		return cmp.Or(a.At.Compare(b.At), isAction(a)-isAction(b))
	})
	return out
}

// What says in one line what the entry was, without its time: "try 3 by
// host:42: retriable, kafka code 6 (NOT_LEADER_FOR_PARTITION) → again in 2s:
// <error>", or "action #12 retry by alice (3 events): <reason>", a try's error
// cut to errMax runes when errMax > 0. The text is the database's,
// unsanitized: a terminal caller sanitizes it.
func (h HistoryItem) What(errMax int) string {
	if a := h.Action; a != nil {
		s := fmt.Sprintf("action #%d %s by %s", a.ID, a.Action, a.Actor)
		if a.Rows != 1 {
			s += fmt.Sprintf(" (%d events)", a.Rows)
		}
		if a.Reason != "" {
			s += ": " + a.Reason
		}
		for k, c := range a.Diff {
			if k == 3 {
				s += fmt.Sprintf("; %d more changes", len(a.Diff)-k)
				break
			}
			s += "; " + c.String()
		}
		return s
	}
	a := h.Attempt
	s := fmt.Sprintf("try %d", a.Attempt)
	if a.Holder != "" {
		s += " by " + a.Holder
	}
	s += ": " + a.Class
	if a.KafkaCode != nil {
		s += fmt.Sprintf(", kafka code %d", *a.KafkaCode)
		if ke, ok := kerr.ErrorForCode(*a.KafkaCode).(*kerr.Error); ok {
			s += " (" + ke.Message + ")"
		}
	}
	var backoff time.Duration
	if a.BackoffMS != nil {
		backoff = time.Duration(*a.BackoffMS) * time.Millisecond
	}
	switch a.Outcome {
	case "schedule":
		s += " → again in " + backoff.String()
	case "wait":
		s += " → waits for its topic, " + backoff.String() + ", not counted"
	case "release":
		s += " → ready again, not counted"
	case "fail":
		s += " → failed"
	}
	if e := []rune(a.Error); errMax > 0 && len(e) > errMax {
		s += ": " + string(e[:errMax]) + "…"
	} else if a.Error != "" {
		s += ": " + a.Error
	}
	return s
}

// String is the change on one line: "customer.id: 41 → 42", "note: added
// \"x\"", "legacy: removed".
func (c Change) String() string {
	path := strings.Join(c.Path, ".")
	if path == "" {
		path = "(the whole payload)"
	}
	switch {
	case c.Old == nil:
		return path + ": added " + string(c.New)
	case c.New == nil:
		return path + ": removed"
	}
	return path + ": " + string(c.Old) + " → " + string(c.New)
}
