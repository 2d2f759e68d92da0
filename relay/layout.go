package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/wire"
)

// Layout is the shape of the records the relay publishes.
type Layout string

const (
	// LayoutOutboxtop: the topic from TopicTemplate, the key (Key), the
	// payload as the value, outboxtop's headers (wire.ReservedHeaders).
	LayoutOutboxtop Layout = "outboxtop"
	// LayoutDebezium: what Debezium's outbox event router emits with its
	// defaults, so that consumers written for it keep working: the topic
	// outbox.event.<aggregate_type> (when TopicTemplate is left at its
	// default), the key the aggregate id, the value the payload, and one
	// header, id, holding the event id.
	LayoutDebezium Layout = "debezium"
)

// DebeziumTopicTemplate is Debezium's default route.topic.replacement,
// outbox.event.${routedByValue} routed by the aggregate type.
const DebeziumTopicTemplate = "outbox.event." + wire.PlaceholderAggregateType

// HeaderDebeziumID is the header Debezium's router puts the event id in.
const HeaderDebeziumID = "id"

// The record keys Config.Key may name; a payload path is KeyPayloadPrefix
// followed by dotted field names.
const (
	KeyAggregateID   = "aggregate_id"
	KeyEventID       = "event_id"
	KeyPayloadPrefix = "payload:"
)

var keyPath = regexp.MustCompile(`^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$`)

// validateKey says what is wrong with key as Config.Key.
func validateKey(key string) error {
	switch {
	case key == KeyAggregateID || key == KeyEventID:
		return nil
	case strings.HasPrefix(key, KeyPayloadPrefix) && keyPath.MatchString(key[len(KeyPayloadPrefix):]):
		return nil
	}
	return fmt.Errorf("%q: aggregate_id, event_id, or payload:<field>[.<field>…] (letters, digits, _, $, -)", key)
}

// EffectiveTopicTemplate is the template the relay fills for a row without a
// topic: TopicTemplate, or Debezium's when the layout is and TopicTemplate
// is left at its default.
func (c Config) EffectiveTopicTemplate() string {
	if c.Layout == LayoutDebezium && c.TopicTemplate == wire.DefaultTopicTemplate {
		return DebeziumTopicTemplate
	}
	return c.TopicTemplate
}

// recordKey is e's record key under Config.Key, or a permanentError when the
// payload lacks the path it names.
func (r *Relay) recordKey(e *event) ([]byte, error) {
	switch k := r.cfg.Key; k {
	case "", KeyAggregateID:
		return []byte(e.aggregateID), nil
	case KeyEventID:
		return []byte(e.id.String()), nil
	default:
		path := k[len(KeyPayloadPrefix):]
		v, err := payloadField(e.payload, path)
		if err != nil {
			return nil, permanentError{fmt.Sprintf("record key %s: %v", k, err)}
		}
		return v, nil
	}
}

// payloadField is the text of the string, number or boolean at the dotted
// path in the JSON object payload.
func payloadField(payload []byte, path string) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("the payload is not JSON: %v", err)
	}
	for _, f := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the payload has no field %q (not an object above it)", path)
		}
		if v, ok = obj[f]; !ok {
			return nil, fmt.Errorf("the payload has no field %q", path)
		}
	}
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case json.Number:
		return []byte(x.String()), nil
	case bool:
		return []byte(fmt.Sprint(x)), nil
	}
	return nil, fmt.Errorf("the payload's field %q is not a string, number or boolean", path)
}

// ownHeaders are the headers of the relay's layout for meta.
func (r *Relay) ownHeaders(meta wire.Meta) []kgo.RecordHeader {
	var hs []wire.Header
	switch {
	case r.cfg.Layout == LayoutDebezium:
		hs = []wire.Header{{Key: HeaderDebeziumID, Value: []byte(meta.EventID)}}
	case r.cfg.CloudEvents != CloudEventsOnly:
		hs = meta.Headers()
	}
	if r.cfg.CloudEvents != CloudEventsOff {
		hs = append(hs, meta.CloudEvents(r.cfg.CloudEventsSource)...)
	}
	out := make([]kgo.RecordHeader, len(hs))
	for i, h := range hs {
		out[i] = kgo.RecordHeader(h)
	}
	return out
}
