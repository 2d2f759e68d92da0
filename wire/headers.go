package wire

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// The Kafka headers the relay sets on every record.
const (
	HeaderEventID       = "event_id"       // the event's id (a UUID): consumers deduplicate on it
	HeaderEventType     = "event_type"     // outbox_event.event_type
	HeaderAggregateType = "aggregate_type" // outbox_event.aggregate_type
	HeaderAggregateID   = "aggregate_id"   // outbox_event.aggregate_id, also the record key
	HeaderCreatedAt     = "created_at"     // outbox_event.created_at, in FormatCreatedAt's form
)

// reserved lists the relay's headers in the order it sets them.
var reserved = [...]string{HeaderEventID, HeaderEventType, HeaderAggregateType, HeaderAggregateID, HeaderCreatedAt}

// ReservedHeaders returns the headers the relay sets on every record, in the
// order it sets them. A row's own headers may not use them: a second event_id
// header leaves a consumer guessing which one to deduplicate on, and Java
// consumers reading lastHeader() would see the row's value instead of the
// relay's.
func ReservedHeaders() []string { return slices.Clone(reserved[:]) }

// IsReservedHeader reports whether name is one of ReservedHeaders. Header names
// are case-sensitive in Kafka, and so is this.
func IsReservedHeader(name string) bool { return slices.Contains(reserved[:], name) }

// ErrReservedHeader is wrapped by CheckHeader's error for a name the relay sets.
var ErrReservedHeader = errors.New("reserved header")

// CheckHeader says what is wrong with name as an event's own header, or returns
// nil when it may be used.
func CheckHeader(name string) error {
	switch {
	case name == "":
		return errors.New("a header with an empty name")
	case IsReservedHeader(name):
		return fmt.Errorf("%w: header %q is reserved: the relay sets it on every record", ErrReservedHeader, name)
	}
	return nil
}

// FormatCreatedAt is the created_at header's form of t: RFC 3339 in UTC with
// nanoseconds as needed.
func FormatCreatedAt(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Header is one Kafka record header. It converts to franz-go's kgo.RecordHeader
// (kgo.RecordHeader(h)), which has the same fields.
type Header struct {
	Key   string
	Value []byte
}

// Meta is what the relay tells a consumer about an event besides its payload.
type Meta struct {
	EventID       string // the UUID's text form
	EventType     string
	AggregateType string
	AggregateID   string
	CreatedAt     time.Time
}

// Headers returns the relay's headers for m, in the order of ReservedHeaders.
// The record's key is m.AggregateID and its value the payload.
func (m Meta) Headers() []Header {
	return []Header{
		{HeaderEventID, []byte(m.EventID)},
		{HeaderEventType, []byte(m.EventType)},
		{HeaderAggregateType, []byte(m.AggregateType)},
		{HeaderAggregateID, []byte(m.AggregateID)},
		{HeaderCreatedAt, []byte(FormatCreatedAt(m.CreatedAt))},
	}
}
