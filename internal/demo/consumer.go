package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/inbox"
	"github.com/outboxtop/outboxtop/wire"
)

// ConsumerConfig configures the demo's consumer.
type ConsumerConfig struct {
	// Brokers are the seed brokers.
	Brokers []string
	// KafkaOpts are extra client options (TLS, SASL, …).
	KafkaOpts []kgo.Opt
	// Group is the consumer group; empty means "outboxtop-demo".
	Group string
	// Name is the consumer's name in the inbox; empty means "demo-projection".
	Name string
	// Topics is a regular expression for the topics to consume; empty means
	// `^outbox\.`.
	Topics string
	// Schema holds the demo's tables; empty means DefaultSchema.
	Schema string
	// Inbox is where consumed_event lives (its Schema is outboxtop's schema).
	Inbox inbox.Store
	// MetadataMaxAge bounds how long a new matching topic goes unnoticed; 0
	// means one second.
	MetadataMaxAge time.Duration
	// Logger receives failed applies and skipped records; nil discards.
	Logger *slog.Logger
}

// Consumer is a consumer group over the outbox topics that applies each
// record to the demo's projections through the inbox, then commits offsets.
type Consumer struct {
	pool     *pgxpool.Pool
	cfg      ConsumerConfig
	counters *Counters
	schema   string
}

// NewConsumer returns a consumer applying records through pool and counting
// into counters (which may be shared with Orders).
func NewConsumer(pool *pgxpool.Pool, counters *Counters, cfg ConsumerConfig) (*Consumer, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("demo consumer: no brokers")
	}
	if cfg.Group == "" {
		cfg.Group = "outboxtop-demo"
	}
	if cfg.Name == "" {
		cfg.Name = "demo-projection"
	}
	if cfg.Topics == "" {
		cfg.Topics = `^outbox\.`
	}
	if cfg.MetadataMaxAge <= 0 {
		cfg.MetadataMaxAge = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Consumer{pool: pool, cfg: cfg, counters: counters, schema: ident(cfg.Schema)}, nil
}

// Name is the consumer's name in consumed_event.
func (c *Consumer) Name() string { return c.cfg.Name }

// Run consumes until ctx ends, then leaves the group and returns nil; it
// returns an error only when the client cannot be created. Offsets are
// committed after each polled batch has been applied, so a crash or rebalance
// in between redelivers records, which the inbox skips.
func (c *Consumer) Run(ctx context.Context) error {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ConsumerGroup(c.cfg.Group),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(c.cfg.Topics),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// A rebalance waits until the polled batch is applied and committed,
		// so the next owner of a partition starts after it.
		kgo.BlockRebalanceOnPoll(),
		kgo.MetadataMaxAge(c.cfg.MetadataMaxAge),
		kgo.MetadataMinAge(min(c.cfg.MetadataMaxAge, 250*time.Millisecond)),
		kgo.FetchMaxWait(250 * time.Millisecond),
	}, c.cfg.KafkaOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("demo consumer: %w", err)
	}
	defer cl.Close()
	for {
		fetches := cl.PollRecords(ctx, 1000)
		if ctx.Err() != nil {
			cl.AllowRebalance()
			return nil
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			c.cfg.Logger.Warn("demo consumer: fetch failed", "topic", topic, "partition", partition, "err", err)
		})
		if fetches.Empty() && len(fetches.Errors()) > 0 {
			// Brokers unreachable: do not spin on errors while they are away.
			cl.AllowRebalance()
			t := time.NewTimer(500 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		var stopped bool
		fetches.EachRecord(func(rec *kgo.Record) {
			if !stopped && !c.handle(ctx, rec) {
				stopped = true
			}
		})
		if stopped {
			cl.AllowRebalance()
			return nil
		}
		// Commit even when ctx has just ended: what was applied should not be
		// redelivered to the next member without need.
		commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := cl.CommitUncommittedOffsets(commitCtx)
		cancel()
		if err != nil {
			// The records are applied; a redelivery after a failed commit is
			// absorbed by the inbox.
			c.cfg.Logger.Warn("demo consumer: committing offsets", "err", err)
		}
		cl.AllowRebalance()
	}
}

// handle applies rec, retrying until it succeeds, and reports false only when
// ctx ended first.
func (c *Consumer) handle(ctx context.Context, rec *kgo.Record) bool {
	backoff := 50 * time.Millisecond
	for {
		applied, err := c.cfg.Inbox.Handle(ctx, c.pool, c.cfg.Name, rec, func(ctx context.Context, tx pgx.Tx) error {
			return c.apply(ctx, tx, rec)
		})
		switch {
		case err == nil && applied:
			c.counters.add(func(s *Stats) { s.Applied++ })
			return true
		case err == nil:
			c.counters.add(func(s *Stats) { s.Duplicates++ })
			return true
		case errors.Is(err, inbox.ErrNoEventID) || errors.Is(err, inbox.ErrMalformedEventID) || errors.Is(err, errUndecodable):
			// Retrying cannot help; the record is skipped, its offset committed.
			c.cfg.Logger.Warn("demo consumer: skipping record", "err", err)
			c.counters.add(func(s *Stats) { s.Invalid++ })
			return true
		case ctx.Err() != nil:
			return false
		}
		c.counters.add(func(s *Stats) { s.ConsumeErrors++ })
		c.cfg.Logger.Warn("demo consumer: applying record", "topic", rec.Topic, "offset", rec.Offset, "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// errUndecodable marks a record whose value the demo cannot read.
var errUndecodable = errors.New("undecodable record value")

func header(rec *kgo.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// apply is the consumer's effect: the order and payment projections.
func (c *Consumer) apply(ctx context.Context, tx pgx.Tx, rec *kgo.Record) error {
	switch header(rec, wire.HeaderAggregateType) {
	case AggregateOrder:
		if header(rec, wire.HeaderEventType) == OrderPoisoned {
			return nil
		}
		var ev orderEvent
		if err := json.Unmarshal(rec.Value, &ev); err != nil {
			return fmt.Errorf("%w: order event: %v", errUndecodable, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+c.schema+`.order_projection AS p
				(order_id, status, version, events_applied, last_event_type)
			VALUES ($1, $2, $3, 1, $4)
			ON CONFLICT (order_id) DO UPDATE SET
				events_applied = p.events_applied + 1,
				out_of_order = p.out_of_order + (EXCLUDED.version <= p.version)::int,
				status = CASE WHEN EXCLUDED.version > p.version THEN EXCLUDED.status ELSE p.status END,
				last_event_type = CASE WHEN EXCLUDED.version > p.version THEN EXCLUDED.last_event_type ELSE p.last_event_type END,
				version = GREATEST(p.version, EXCLUDED.version),
				updated_at = now()`,
			ev.OrderID, ev.Status, ev.Version, header(rec, wire.HeaderEventType))
		return err
	case AggregatePayment:
		var ev paymentEvent
		if err := json.Unmarshal(rec.Value, &ev); err != nil {
			return fmt.Errorf("%w: payment event: %v", errUndecodable, err)
		}
		// No ON CONFLICT: a second apply of one payment would be an error.
		_, err := tx.Exec(ctx, `INSERT INTO `+c.schema+`.payment_projection (payment_id, order_id, amount_cents)
			VALUES ($1, $2, $3)`, ev.PaymentID, ev.OrderID, ev.AmountCents)
		return err
	}
	return nil // another application's events: recorded in the inbox, no effect here
}
