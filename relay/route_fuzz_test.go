package relay

import (
	"errors"
	"testing"

	"github.com/google/uuid"
)

// legalTopic is Kafka's rule written independently of ValidateTopic.
func legalTopic(s string) bool {
	if len(s) == 0 || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// FuzzValidateTopic: ValidateTopic accepts exactly Kafka's legal names.
func FuzzValidateTopic(f *testing.F) {
	for _, s := range []string{"outbox.order", "", ".", "..", "a b", "ünï", "x\x00y", string(make([]byte, 250))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidateTopic(s) == nil, legalTopic(s); got != want {
			t.Fatalf("ValidateTopic(%q) accepted=%v, Kafka's rule says %v", s, got, want)
		}
	})
}

// FuzzTopicTemplate: for a template ValidateTemplate accepts, any aggregate_type and
// event_type (and any per-row topic) either give a record whose topic Kafka accepts
// or classify the event as poison (a permanentError); never a panic.
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
		if err := ValidateTemplate(tmpl); err != nil {
			return
		}
		if !legalTopic(expandTemplate(tmpl, "a", "e")) {
			t.Fatalf("ValidateTemplate accepted %q whose literal expansion is illegal", tmpl)
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
		if !legalTopic(rec.Topic) {
			t.Fatalf("record produced illegal topic %q (template %q, aggregate_type %q, event_type %q, row topic %q)",
				rec.Topic, tmpl, aggregateType, eventType, rowTopic)
		}
	})
}
