package relay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/wire"
)

// TopicWait is a Kafka topic that does not exist while events wait for it, as
// the outbox's rows say: read from the database, for readers without a relay
// in their process (`outboxtop status`).
type TopicWait struct {
	Topic string `json:"topic"`
	// Events is how many of the events read (WaitWindow) found it missing at
	// their latest attempt, or, found by asking the brokers, go to it.
	Events int64 `json:"events"`
	// NextTry is the latest available_at among them: when the last of them is
	// tried again (or was, if a relay is not running).
	NextTry time.Time `json:"next_try"`
	// FoundBy says how it was found missing: FoundByLastError, FoundByBrokers,
	// or both (FoundByBoth).
	FoundBy string `json:"found_by,omitempty"`
}

// What found a topic missing (TopicWait.FoundBy).
const (
	FoundByLastError = "last_error"
	FoundByBrokers   = "brokers"
	FoundByBoth      = "last_error+brokers"
)

const (
	// WaitWindow is how many unpublished events WaitingForMissingTopics reads
	// at most in each of its windows: the oldest in seq order, and the soonest
	// scheduled within WaitHorizon (events waiting for a topic while a relay
	// runs are tried again within their capped backoff, whatever the backlog
	// before them in seq order).
	WaitWindow = 10_000
	// WaitHorizon is how far ahead of now() the second window looks: twice the
	// backoff's cap for events waiting for a topic.
	WaitHorizon = 2 * missingTopicBackoffMax
	// MaxTopicWaits is the most topics it returns.
	MaxTopicWaits = 20
)

// Querier is what WaitingForMissingTopics reads through: a pool, a
// connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// WaitingForMissingTopics reads which topics that do not exist unpublished
// events wait for, from their last_error (sql/waiting_for_topics.sql): one
// bounded read, cheap however many failed or published rows the table holds.
func WaitingForMissingTopics(ctx context.Context, q Querier, schema string) ([]TopicWait, error) {
	if err := wire.ValidateSchema(schema); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, relaySQL.For(schema).SQL("waiting_for_topics"), pgx.StrictNamedArgs{
		"prefix": MissingTopicError, "window": WaitWindow, "horizon": WaitHorizon.Seconds(), "topics": MaxTopicWaits})
	if err != nil {
		return nil, fmt.Errorf("reading events waiting for missing topics: %w", err)
	}
	waits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TopicWait, error) {
		w := TopicWait{FoundBy: FoundByLastError}
		return w, r.Scan(&w.Topic, &w.Events, &w.NextTry)
	})
	if err != nil {
		return nil, fmt.Errorf("reading events waiting for missing topics: %w", err)
	}
	return waits, nil
}

// PendingTopics reads the topics that unpublished, not failed events go to,
// the events read for each and the latest available_at among them: a row's
// topic, else template's topic for it (as the relay routes it), or, with
// template "", the rows' own topics alone (a template other than the relay's
// would name topics it never writes to). Topics that are no valid Kafka name
// are left out: the relay fails those events. Bounded as
// WaitingForMissingTopics: the oldest WaitWindow in seq order, the next
// WaitWindow the claim takes and the soonest WaitWindow scheduled
// (sql/pending_topics.sql). Events read is what it returns in TopicWait.Events,
// most first, then by topic.
func PendingTopics(ctx context.Context, q Querier, schema, template string) ([]TopicWait, error) {
	if err := wire.ValidateSchema(schema); err != nil {
		return nil, err
	}
	if template != "" {
		if err := wire.ValidateTopicTemplate(template); err != nil {
			return nil, err
		}
	}
	rows, err := q.Query(ctx, relaySQL.For(schema).SQL("pending_topics"), pgx.StrictNamedArgs{"window": WaitWindow})
	if err != nil {
		return nil, fmt.Errorf("reading the topics of pending events: %w", err)
	}
	defer rows.Close()
	byTopic := map[string]*TopicWait{}
	for rows.Next() {
		var topic, aggType, eventType string
		var n int64
		var next time.Time
		if err := rows.Scan(&topic, &aggType, &eventType, &n, &next); err != nil {
			return nil, fmt.Errorf("reading the topics of pending events: %w", err)
		}
		if topic == "" {
			if template == "" {
				continue
			}
			topic = wire.Topic(template, aggType, eventType)
		}
		if wire.ValidateTopic(topic) != nil {
			continue
		}
		w := byTopic[topic]
		if w == nil {
			w = &TopicWait{Topic: topic}
			byTopic[topic] = w
		}
		w.Events += n
		if next.After(w.NextTry) {
			w.NextTry = next
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the topics of pending events: %w", err)
	}
	out := make([]TopicWait, 0, len(byTopic))
	for _, w := range byTopic {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b TopicWait) int {
		if c := cmp.Compare(b.Events, a.Events); c != 0 {
			return c
		}
		return cmp.Compare(a.Topic, b.Topic)
	})
	return out, nil
}
