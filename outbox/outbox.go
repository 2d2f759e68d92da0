package outbox

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/wire"
)

// DB is what a Writer writes through. pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy
// it. Pass the transaction that makes the business change: the event is then
// committed, or rolled back, with it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// Event is one event to add to the outbox.
type Event struct {
	// ID is the event's id, the consumer's deduplication key. Left zero, a
	// UUIDv7 is generated.
	ID uuid.UUID
	// AggregateType names the kind of entity the event is about ("order").
	// The relay's default topic is outbox.<AggregateType>. Required.
	AggregateType string
	// AggregateID identifies the entity; it becomes the Kafka record key, so
	// one aggregate's events land in one partition, in order. Required.
	AggregateID string
	// EventType names what happened ("OrderPaid"). Required.
	EventType string
	// Payload is the record value. json.RawMessage and []byte are taken as JSON
	// text and must be valid; any other value is encoded with encoding/json (a
	// Go string becomes a JSON string). A nil Payload is an error; write
	// json.RawMessage("null") to mean JSON null.
	Payload any
	// Topic, when set, overrides the relay's topic template for this event.
	// It must be a legal Kafka topic name.
	Topic string
	// Headers are extra Kafka headers (traceparent, tenant, …). Keys the relay
	// sets itself (wire.ReservedHeaders: event_id, event_type, aggregate_type,
	// aggregate_id, created_at) are refused.
	Headers map[string]string
	// AvailableAt delays publication until then. Left zero, the event is
	// available at once (the transaction's now()).
	AvailableAt time.Time
}

// Writer adds events to the outbox_event table of one schema. The zero value
// writes to wire.DefaultSchema (public).
type Writer struct {
	// Schema holds outbox_event; empty means wire.DefaultSchema.
	Schema string
}

var defaultWriter Writer

// Add adds ev to the outbox in the default schema. See Writer.Add.
func Add(ctx context.Context, db DB, ev Event) (uuid.UUID, error) {
	return defaultWriter.Add(ctx, db, ev)
}

// AddMany adds evs to the outbox in the default schema. See Writer.AddMany.
func AddMany(ctx context.Context, db DB, evs []Event) ([]uuid.UUID, error) {
	return defaultWriter.AddMany(ctx, db, evs)
}

func (w Writer) table() pgx.Identifier { return pgx.Identifier{w.schema(), "outbox_event"} }

func (w Writer) schema() string { return cmp.Or(w.Schema, wire.DefaultSchema) }

// statements are the package's SQL (sql/*.sql), one file a statement.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = pgsql.PerSchema{FS: sqlFiles, Pattern: "sql/*.sql"}

func (w Writer) sql(name string) string { return statements.For(w.schema()).SQL(name) }

// Add validates ev and inserts it through db, returning its event id. An
// invalid event is refused before anything is sent, so the caller's
// transaction stays usable.
func (w Writer) Add(ctx context.Context, db DB, ev Event) (uuid.UUID, error) {
	r, err := prepare(ev)
	if err != nil {
		return uuid.Nil, err
	}
	var availableAt any // nil: the column's now()
	if !ev.AvailableAt.IsZero() {
		availableAt = ev.AvailableAt
	}
	_, err = db.Exec(ctx, w.sql("insert"),
		r.id, r.aggregateType, r.aggregateID, r.eventType, r.payload, r.topic, r.headers, availableAt)
	if err != nil {
		return uuid.Nil, fmt.Errorf("adding event %s to outbox: %w", r.id, err)
	}
	return r.id, nil
}

// AddMany validates every event, then copies them all into the outbox with one
// COPY, returning their event ids in order. If any event is invalid, none is
// written and the error names its index. The insert trigger fires once for the
// whole batch, so the relay is woken once.
//
// Where the commit order is enforced, a batch of several aggregates (or of
// more than wire.OrderLockRows events) first takes its order locks in the
// canonical order (one statement more), so two transactions writing the same
// aggregates in different orders wait for each other instead of deadlocking.
// Pass the transaction: through a pool, the locks and the COPY would be two
// transactions.
func (w Writer) AddMany(ctx context.Context, db DB, evs []Event) ([]uuid.UUID, error) {
	switch len(evs) {
	case 0:
		return nil, nil
	case 1:
		id, err := w.Add(ctx, db, evs[0])
		if err != nil {
			return nil, err
		}
		return []uuid.UUID{id}, nil
	}
	rows := make([][]any, len(evs))
	ids := make([]uuid.UUID, len(evs))
	delayed := false
	for i, ev := range evs {
		r, err := prepare(ev)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		ids[i] = r.id
		rows[i] = []any{r.id, r.aggregateType, r.aggregateID, r.eventType, r.payload, r.topic, r.headers}
		if !ev.AvailableAt.IsZero() {
			delayed = true
		}
	}
	if err := w.lockAggregates(ctx, db, evs); err != nil {
		return nil, err
	}
	columns := []string{"event_id", "aggregate_type", "aggregate_id", "event_type", "payload", "topic", "headers"}
	if delayed {
		// COPY applies a column default to every row or to none, so a batch
		// that mixes delayed and immediate events spells out now() itself.
		var now time.Time
		if err := db.QueryRow(ctx, w.sql("now")).Scan(&now); err != nil {
			return nil, fmt.Errorf("reading the database's time: %w", err)
		}
		columns = append(columns, "available_at")
		for i, ev := range evs {
			at := now
			if !ev.AvailableAt.IsZero() {
				at = ev.AvailableAt
			}
			rows[i] = append(rows[i], at)
		}
	}
	n, err := db.CopyFrom(ctx, w.table(), columns, pgx.CopyFromRows(rows))
	if err != nil {
		return nil, fmt.Errorf("copying %d events into outbox: %w", len(evs), err)
	}
	if n != int64(len(evs)) {
		return nil, fmt.Errorf("copying events into outbox: %d of %d rows written", n, len(evs))
	}
	return ids, nil
}

// lockAggregates takes the order locks of evs in the canonical order when
// the batch could otherwise take them in an order another writer reverses,
// or upgrade the table's lock half-way (the schema's outbox_lock_aggregates
// does nothing unless the order is enforced).
func (w Writer) lockAggregates(ctx context.Context, db DB, evs []Event) error {
	several := false
	for _, ev := range evs[1:] {
		if ev.AggregateType != evs[0].AggregateType || ev.AggregateID != evs[0].AggregateID {
			several = true
			break
		}
	}
	if !several && len(evs) <= wire.OrderLockRows {
		return nil
	}
	types, ids := make([]string, len(evs)), make([]string, len(evs))
	for i, ev := range evs {
		types[i], ids[i] = ev.AggregateType, ev.AggregateID
	}
	if _, err := db.Exec(ctx, w.sql("lock_aggregates"), types, ids); err != nil {
		return fmt.Errorf("taking the order locks of %d events: %w", len(evs), err)
	}
	return nil
}

// row is an Event made ready for the database.
type row struct {
	id                                    uuid.UUID
	aggregateType, aggregateID, eventType string
	payload                               json.RawMessage
	topic                                 *string
	headers                               json.RawMessage // nil: NULL
}

// ErrInvalidEvent is wrapped by every validation error of Add and AddMany.
var ErrInvalidEvent = errors.New("invalid outbox event")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidEvent, fmt.Sprintf(format, args...))
}

func prepare(ev Event) (row, error) {
	r := row{id: ev.ID, aggregateType: ev.AggregateType, aggregateID: ev.AggregateID, eventType: ev.EventType}
	for _, f := range []struct{ name, value string }{
		{"aggregate type", ev.AggregateType},
		{"aggregate id", ev.AggregateID},
		{"event type", ev.EventType},
	} {
		if f.value == "" {
			return r, invalid("empty %s", f.name)
		}
		if err := checkText(f.value); err != nil {
			return r, invalid("%s: %v", f.name, err)
		}
	}
	if r.id == uuid.Nil {
		id, err := uuid.NewV7()
		if err != nil {
			return r, fmt.Errorf("generating event id: %w", err)
		}
		r.id = id
	}
	payload, err := encodePayload(ev.Payload)
	if err != nil {
		return r, err
	}
	r.payload = payload
	if ev.Topic != "" {
		if err := checkTopic(ev.Topic); err != nil {
			return r, err
		}
		t := ev.Topic
		r.topic = &t
	}
	if len(ev.Headers) > 0 {
		for k, v := range ev.Headers {
			if err := checkHeader(k, v); err != nil {
				return r, err
			}
		}
		h, err := json.Marshal(ev.Headers)
		if err != nil {
			return r, invalid("headers: %v", err)
		}
		r.headers = h
	}
	return r, nil
}
