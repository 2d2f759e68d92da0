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
	ArchivedAt     *time.Time `json:"archived_at,omitempty"`
	// Age is now() − created_at by the database's clock when the row was read.
	Age          Age `json:"age_seconds"`
	PayloadBytes int `json:"payload_bytes"`
	// Payload and Headers are filled by Detail only.
	Payload json.RawMessage `json:"payload,omitempty"`
	Headers json.RawMessage `json:"headers,omitempty"`
}

// stateCase computes wire's state in SQL, from its conditions.
const stateCase = `CASE WHEN ` + wire.PublishedSQL + ` THEN 'published'` +
	` WHEN ` + wire.FailedSQL + ` THEN 'failed'` +
	` WHEN ` + wire.LeasedSQL + ` THEN 'leased'` +
	` WHEN ` + wire.ReadySQL + ` THEN 'ready'` +
	` ELSE 'scheduled' END`

// The select lists for outbox_event and the archive, in the order scanEvent reads.
// The last two are payload and headers, or NULLs when withBody is false.
func eventColumns(archived, withBody bool) string {
	state, archivedAt := stateCase, "NULL::timestamptz"
	if archived {
		state, archivedAt = "'archived'", "archived_at"
	}
	body := "NULL::jsonb, NULL::jsonb"
	if withBody {
		body = "payload, headers"
	}
	return `event_id::text, seq, ` + state + `, aggregate_type, aggregate_id, event_type,
		coalesce(topic, ''), ` + finite("created_at") + `, ` + finite("available_at") + `, attempts,
		coalesce(lease_token::text, ''), ` + finite("lease_until") + `, coalesce(lease_holder, ''),
		coalesce(` + wire.ExpiredLeaseSQL + `, false), ` + finite("published_at") + `, ` + finite("failed_at") + `,
		coalesce(last_error, ''), coalesce(kafka_topic, ''), kafka_partition, kafka_offset, coalesce(replay_of::text, ''),
		` + finite(archivedAt) + `, ` + ageSeconds("created_at") + `, octet_length(payload::text), ` + body
}

// finite is the timestamptz expression col with 'infinity' and '-infinity'
// read as the latest and earliest instants Go's time and JSON carry (9999-12-31
// 23:59:59 UTC, 0001-01-01 00:00:00 UTC); NULL stays NULL. The tables refuse
// infinite times (migration 016), but a row stored before may hold one, and Go
// cannot scan it: every reader of a time column a role may write reads it
// through finite.
func finite(col string) string {
	return `(CASE WHEN ` + col + ` = 'infinity' THEN timestamptz '9999-12-31 23:59:59+00'` +
		` WHEN ` + col + ` = '-infinity' THEN timestamptz '0001-01-01 00:00:00+00' ELSE ` + col + ` END)`
}

// ageSeconds is now() − col in seconds, within what a time.Duration holds (an
// infinite col cannot be subtracted at all).
func ageSeconds(col string) string {
	return `least(greatest(extract(epoch from now() - ` + finite(col) + `)::float8, -9e9), 9e9)`
}

func scanEvent(row pgx.Row) (Event, error) {
	var e Event
	var state string
	var age float64
	var payload, headers []byte
	err := row.Scan(&e.EventID, &e.Seq, &state, &e.AggregateType, &e.AggregateID, &e.EventType,
		&e.Topic, &e.CreatedAt, &e.AvailableAt, &e.Attempts, &e.LeaseToken, &e.LeaseUntil, &e.LeaseHolder,
		&e.LeaseExpired, &e.PublishedAt, &e.FailedAt, &e.LastError,
		&e.KafkaTopic, &e.KafkaPartition, &e.KafkaOffset, &e.ReplayOf, &e.ArchivedAt,
		&age, &e.PayloadBytes, &payload, &headers)
	if err != nil {
		return Event{}, err
	}
	e.State = wire.State(state)
	e.Age = Age(time.Duration(age * float64(time.Second)))
	if payload != nil {
		e.Payload = json.RawMessage(payload)
	}
	if headers != nil {
		e.Headers = json.RawMessage(headers)
	}
	return e, nil
}
