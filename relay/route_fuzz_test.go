package relay

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/wire"
)

// FuzzTopicTemplate: for a template wire.ValidateTopicTemplate accepts, any
// aggregate_type and event_type (and any per-row topic) either give a record whose
// topic Kafka accepts (wire.ValidateTopic, itself fuzzed against Kafka's rule) or
// classify the event as poison (a permanentError); never a panic.
func FuzzTopicTemplate(f *testing.F) {
	f.Add("outbox.{aggregate_type}", "order", "OrderPlaced", "")
	f.Add("{aggregate_type}.{event_type}", "order", "Order Placed", "")
	f.Add("{event_type}", "", "", "")
	f.Add("x{aggregate_type}{event_type}", "{event_type}", "{aggregate_type}", "")
	f.Add("t.{unknown}", "a", "b", "")
	f.Add("{aggregate_type", "a", "b", "")
	f.Add("outbox.{aggregate_type}", "..", "", "row.topic")
	f.Add("{aggregate_type}", ".", "e", "bad topic!")
	f.Add("outbox.{aggregate_type}", "ä", "e", "")
	f.Fuzz(func(t *testing.T, tmpl, aggregateType, eventType, rowTopic string) {
		if err := wire.ValidateTopicTemplate(tmpl); err != nil {
			return
		}
		if wire.ValidateTopic(wire.Topic(tmpl, "a", "e")) != nil {
			t.Fatalf("ValidateTopicTemplate accepted %q whose literal expansion is illegal", tmpl)
		}
		r := &Relay{cfg: Config{TopicTemplate: tmpl, MaxMessageBytes: 1 << 20}}
		e := &event{id: uuid.New(), aggregateType: aggregateType, aggregateID: "1", eventType: eventType, payload: []byte(`{}`)}
		if rowTopic != "" {
			e.topic = &rowTopic
		}
		rec, err := r.record(e)
		if err != nil {
			if !errors.As(err, new(permanentError)) {
				t.Fatalf("record: %v is not classed as poison", err)
			}
			return
		}
		if wire.ValidateTopic(rec.Topic) != nil {
			t.Fatalf("record produced illegal topic %q (template %q, aggregate_type %q, event_type %q, row topic %q)",
				rec.Topic, tmpl, aggregateType, eventType, rowTopic)
		}
	})
}
