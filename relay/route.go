package relay

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/ident"
	"github.com/outboxtop/outboxtop/wire"
)

// event is a claimed outbox row with what publishing needs.
type event struct {
	id            uuid.UUID
	seq           int64
	aggregateType string
	aggregateID   string
	eventType     string
	payload       []byte // nil when the claim did not load it (Config.BatchBytes)
	payloadBytes  int64  // the payload's size as JSON text, or its stored size when that far under the record's limit
	createdAt     time.Time
	attempts      int
	topic         *string
	headers       []byte // jsonb object, or nil
	// What the order check needs (ordered claims only): the inserting
	// transaction and its INSERT's snapshot as text (nil on rows inserted
	// before migration 024), and whether the event is a corrected copy.
	writerXID, writerSnapshot *string
	corrected                 bool
}

// recordOverhead is a generous bound on what a record adds to its key, value and
// headers inside a batch, so that the relay's own size check fires before
// franz-go's and an oversized event is failed alone, never mid-partition.
const recordOverhead = 512

// reservedHeaders are the headers the relay sets on every record, which a
// row's own may not read as: its own, and CloudEvents' when it sets them.
func (r *Relay) reservedHeaders() []string {
	own := wire.ReservedHeaders()
	if r.cfg.Layout == LayoutDebezium {
		own = append(own, HeaderDebeziumID)
	}
	if r.cfg.CloudEvents == CloudEventsOff {
		return own
	}
	return append(own, wire.CloudEventsHeaders()...)
}

// deferred reports whether the claim left e's payload out for the batch's byte
// budget (Config.BatchBytes), not for its size: it is claimed again.
func (r *Relay) deferred(e *event) bool {
	return e.payload == nil && e.payloadBytes <= int64(r.cfg.MaxMessageBytes)
}

// permanentError is an event error that no retry can fix.
type permanentError struct{ msg string }

func (e permanentError) Error() string { return e.msg }

// record builds the Kafka record for e, or a permanentError when e can never be
// published (illegal topic, too large, malformed headers).
func (r *Relay) record(e *event) (*kgo.Record, error) {
	if e.payload == nil {
		return nil, permanentError{fmt.Sprintf("record too large: the payload alone is %d bytes, more than --kafka-max-message-bytes %d (it was not loaded)",
			e.payloadBytes, r.cfg.MaxMessageBytes)}
	}
	topic := wire.Topic(r.cfg.EffectiveTopicTemplate(), e.aggregateType, e.eventType)
	if e.topic != nil && *e.topic != "" {
		topic = *e.topic
	}
	if err := wire.ValidateTopic(topic); err != nil {
		return nil, permanentError{"invalid topic: " + err.Error()}
	}
	if why := topicRefused(r.cfg.Topics, topic); why != "" {
		return nil, permanentError{why}
	}
	key, err := r.recordKey(e)
	if err != nil {
		return nil, err
	}
	meta := wire.Meta{EventID: e.id.String(), EventType: e.eventType, AggregateType: e.aggregateType,
		AggregateID: e.aggregateID, CreatedAt: e.createdAt}
	rec := &kgo.Record{Topic: topic, Key: key, Value: e.payload, Headers: r.ownHeaders(meta)}
	if len(e.headers) > 0 && string(e.headers) != "null" {
		var extra map[string]any
		if err := json.Unmarshal(e.headers, &extra); err != nil {
			return nil, permanentError{"headers must be a JSON object: " + err.Error()}
		}
		keys := make([]string, 0, len(extra))
		for k := range extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := wire.CheckHeader(k); err != nil {
				return nil, permanentError{"headers: " + err.Error()}
			}
			// A consumer that looks headers up without regard to case, width or
			// stray characters, or a person, would take such a header for the
			// relay's own.
			if h := ident.Lookalike(k, r.reservedHeaders()); h != "" {
				return nil, permanentError{fmt.Sprintf("headers: header %q is too like the reserved %q: the relay sets that on every record", k, h)}
			}
			var v []byte
			switch x := extra[k].(type) {
			case string:
				v = []byte(x)
			case nil:
				continue
			default:
				v, _ = json.Marshal(x)
			}
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: v})
		}
	}
	size := len(rec.Key) + len(rec.Value) + recordOverhead
	for _, h := range rec.Headers {
		size += len(h.Key) + len(h.Value) + 8
	}
	if size > r.cfg.MaxMessageBytes {
		return nil, permanentError{fmt.Sprintf("record too large: about %d bytes, more than --kafka-max-message-bytes %d", size, r.cfg.MaxMessageBytes)}
	}
	return rec, nil
}
