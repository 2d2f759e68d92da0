package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/wire"
)

// TopicWait is a Kafka topic that does not exist while events wait for it, as
// the outbox's rows say: read from the database, for readers without a relay
// in their process (`outboxtop status`).
type TopicWait struct {
	Topic string `json:"topic"`
	// Events is how many of the oldest WaitWindow unpublished events found it
	// missing at their latest attempt.
	Events int64 `json:"events"`
	// NextTry is the latest available_at among them: when the last of them is
	// tried again (or was, if a relay is not running).
	NextTry time.Time `json:"next_try"`
}

const (
	// WaitWindow is how many unpublished events WaitingForMissingTopics reads at
	// most, the oldest in seq order: events stuck on a missing topic are among
	// the oldest unless a larger backlog is older still (which the lag shows).
	WaitWindow = 10_000
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
		"prefix": MissingTopicError, "window": WaitWindow, "topics": MaxTopicWaits})
	if err != nil {
		return nil, fmt.Errorf("reading events waiting for missing topics: %w", err)
	}
	waits, err := pgx.CollectRows(rows, pgx.RowToStructByPos[TopicWait])
	if err != nil {
		return nil, fmt.Errorf("reading events waiting for missing topics: %w", err)
	}
	return waits, nil
}
