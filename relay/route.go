package relay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"
)

// event is a claimed outbox row with what publishing needs.
type event struct {
	id            uuid.UUID
	seq           int64
	aggregateType string
	aggregateID   string
	eventType     string
	payload       []byte
	createdAt     time.Time
	attempts      int
	topic         *string
	headers       []byte // jsonb object, or nil
}

// ValidateTemplate checks a --topic-template: only {aggregate_type} and
// {event_type} are placeholders, and the literal parts must be legal in a topic.
func ValidateTemplate(tmpl string) error {
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("--topic-template %q: unclosed {", tmpl)
		}
		switch rest[i : i+j+1] {
		case "{aggregate_type}", "{event_type}":
		default:
			return fmt.Errorf("--topic-template %q: unknown placeholder %s (use {aggregate_type} or {event_type})", tmpl, rest[i:i+j+1])
		}
		rest = rest[i+j+1:]
	}
	literal := expandTemplate(tmpl, "a", "e")
	if err := ValidateTopic(literal); err != nil {
		return fmt.Errorf("--topic-template %q: %v", tmpl, err)
	}
	return nil
}

func expandTemplate(tmpl, aggregateType, eventType string) string {
	return strings.NewReplacer("{aggregate_type}", aggregateType, "{event_type}", eventType).Replace(tmpl)
}

// ValidateTopic applies Kafka's rules for topic names: 1–249 characters of
// [a-zA-Z0-9._-], and not "." or "..".
func ValidateTopic(t string) error {
	if t == "" {
		return fmt.Errorf("empty topic name")
	}
	if len(t) > 249 {
		return fmt.Errorf("topic name longer than 249 characters")
	}
	if t == "." || t == ".." {
		return fmt.Errorf("topic name %q is reserved", t)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("illegal character %q in topic name %q (Kafka allows a-z A-Z 0-9 . _ -)", c, t)
		}
	}
	return nil
}

// recordOverhead is a generous bound on what a record adds to its key, value and
// headers inside a batch, so that the relay's own size check fires before
// franz-go's and an oversized event is failed alone, never mid-partition.
const recordOverhead = 512

// permanentError is an event error that no retry can fix.
type permanentError struct{ msg string }

func (e permanentError) Error() string { return e.msg }

// record builds the Kafka record for e, or a permanentError when e can never be
// published (illegal topic, too large, malformed headers).
func (r *Relay) record(e *event) (*kgo.Record, error) {
	topic := expandTemplate(r.cfg.TopicTemplate, e.aggregateType, e.eventType)
	if e.topic != nil && *e.topic != "" {
		topic = *e.topic
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, permanentError{"invalid topic: " + err.Error()}
	}
	rec := &kgo.Record{
		Topic: topic,
		Key:   []byte(e.aggregateID),
		Value: e.payload,
		Headers: []kgo.RecordHeader{
			{Key: "event_id", Value: []byte(e.id.String())},
			{Key: "event_type", Value: []byte(e.eventType)},
			{Key: "aggregate_type", Value: []byte(e.aggregateType)},
			{Key: "aggregate_id", Value: []byte(e.aggregateID)},
			{Key: "created_at", Value: []byte(e.createdAt.UTC().Format(time.RFC3339Nano))},
		},
	}
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
