package inspect

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/wire"
)

// Event is one row of outbox_event (or of outbox_event_archive, when ArchivedAt is
// set). Nullable columns are pointers or empty strings. Text fields are the database's
// bytes as they are: sanitize before putting them on a terminal.
type Event struct {
	EventID       string     `json:"event_id"`
	Seq           int64      `json:"seq"`
	State         wire.State `json:"state"` // Archived for archive rows
	AggregateType string     `json:"aggregate_type"`
	AggregateID   string     `json:"aggregate_id"`
	EventType     string     `json:"event_type"`
	Topic         string     `json:"topic,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	AvailableAt   time.Time  `json:"available_at"`
	Attempts      int32      `json:"attempts"`
	LeaseToken    string     `json:"lease_token,omitempty"`
	LeaseUntil    *time.Time `json:"lease_until,omitempty"`
	// LeaseHolder names the relay ("host:pid") that made the latest claim of the
	// row. It is kept when the lease ends: on a leased row it is the relay holding
	// it, on any other the last relay that claimed it (on a published row, the one
	// that published it). Empty when no relay has claimed the row since migration
	// 009.
	LeaseHolder string `json:"lease_holder,omitempty"`
	// LeaseExpired: a lease token whose lease_until has passed without a mark; the
	// event is claimable again (its State is ready or scheduled).
	LeaseExpired   bool       `json:"lease_expired"`
	PublishedAt    *time.Time `json:"published_at,omitempty"`
	FailedAt       *time.Time `json:"failed_at,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	KafkaTopic     string     `json:"kafka_topic,omitempty"`
	KafkaPartition *int32     `json:"kafka_partition,omitempty"`
	KafkaOffset    *int64     `json:"kafka_offset,omitempty"`
	ReplayOf       string     `json:"replay_of,omitempty"`
	// CorrectionOf is set on a corrected copy: the id of the failed event it
	// replaces (see Correction).
	CorrectionOf string     `json:"correction_of,omitempty"`
	ArchivedAt   *time.Time `json:"archived_at,omitempty"`
	// Age is now() − created_at by the database's clock when the row was read.
	Age Age `json:"age_seconds"`
	// PayloadBytes is the payload's size: the bytes of its JSON text as
	// PostgreSQL writes the jsonb value (octet_length(payload::text)), which is
	// what the relay puts in the record's value. It is the one size every view
	// gives a payload (the console's detail says "bytes as JSON text"); neither
	// its stored size (pg_column_size, compressed) nor its pretty print's.
	PayloadBytes int `json:"payload_bytes"`
	// Payload and Headers are filled by Detail only.
	Payload json.RawMessage `json:"payload,omitempty"`
	Headers json.RawMessage `json:"headers,omitempty"`
}

func scanEvent(row pgx.Row) (Event, error) {
	var e Event
	var state string
	var age float64
	var payload, headers []byte
	err := row.Scan(&e.EventID, &e.Seq, &state, &e.AggregateType, &e.AggregateID, &e.EventType,
		&e.Topic, &e.CreatedAt, &e.AvailableAt, &e.Attempts, &e.LeaseToken, &e.LeaseUntil, &e.LeaseHolder,
		&e.LeaseExpired, &e.PublishedAt, &e.FailedAt, &e.LastError,
		&e.KafkaTopic, &e.KafkaPartition, &e.KafkaOffset, &e.ReplayOf, &e.CorrectionOf, &e.ArchivedAt,
		&age, &e.PayloadBytes, &payload, &headers)
	if err != nil {
		return Event{}, err
	}
	e.State = wire.State(state)
	e.Age = seconds(age)
	if payload != nil {
		e.Payload = json.RawMessage(payload)
	}
	if headers != nil {
		e.Headers = json.RawMessage(headers)
	}
	return e, nil
}
