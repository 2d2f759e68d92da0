package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/wire"
)

func TestTopicRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		patterns []string
		topic    string
		allowed  bool
	}{
		{nil, "outbox.order", true},
		{nil, "__consumer_offsets", false},
		{nil, "__transaction_state", false},
		{nil, "_one_underscore", true},
		{[]string{"outbox.*"}, "outbox.order", true},
		{[]string{"outbox.*"}, "outbox.", true},
		{[]string{"outbox.*"}, "outboxorder", false},
		{[]string{"outbox.*"}, "billing", false},
		{[]string{"outbox.*", "billing"}, "billing", true},
		{[]string{"billing"}, "billing.x", false},
		{[]string{"*.events"}, "order.events", true},
		{[]string{"*.events"}, "order.events.x", false},
		{[]string{"a*b*c"}, "abc", true},
		{[]string{"a*b*c"}, "axxbyyc", true},
		{[]string{"a*b*c"}, "acb", false},
		{[]string{"a*bc*bc"}, "abcbc", true},
		{[]string{"*"}, "anything", true},
		{[]string{"*"}, "__consumer_offsets", false}, // an internal topic needs a pattern of its own
		{[]string{"__audit.*"}, "__audit.log", true},
	} {
		why := topicRefused(c.patterns, c.topic)
		if (why == "") != c.allowed {
			t.Errorf("topicRefused(%q, %q) = %q, want allowed %v", c.patterns, c.topic, why, c.allowed)
		}
	}
	if err := (Config{Topics: []string{"ok.*", "bad name"}}).Validate(); err == nil || !strings.Contains(err.Error(), `Topics pattern "bad name"`) {
		t.Errorf("a bad pattern: %v", err)
	}
	if err := (Config{Topics: []string{"ok.*", "x"}}).Validate(); err != nil {
		t.Errorf("good patterns: %v", err)
	}
}

func TestReservedLookalike(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"Event_ID":             wire.HeaderEventID,
		"EVENT_TYPE":           wire.HeaderEventType,
		"event_id ":            wire.HeaderEventID,
		" created_at\t":        wire.HeaderCreatedAt,
		"aggregate_id\u200b":   wire.HeaderAggregateID,
		"\ufeffaggregate_type": wire.HeaderAggregateType,
		"event\u00ad_id":       wire.HeaderEventID,
		"event\u2060_type":     wire.HeaderEventType,
		"event_id":             "", // exact: CheckHeader refuses it
		"traceparent":          "",
		"event_ids":            "",
		"x-event_id":           "",
	} {
		if got := reservedLookalike(name); got != want {
			t.Errorf("reservedLookalike(%q) = %q, want %q", name, got, want)
		}
	}
}

// Near-duplicates of the reserved headers fail like exact ones, with a
// last_error naming them; an event to a topic outside --topics (or, by default,
// to one of Kafka's internal topics) fails at once, its last_error naming the
// topic and the flag; the rest is published.
func TestLookalikeHeadersAndDisallowedTopicsFail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.kafka.CreateTopics(t, 1, "other")
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers, topic) VALUES
		(gen_random_uuid(), 'order', 'ok', 'Good', '{}', '{"traceparent": "00-abc-01"}', NULL),
		(gen_random_uuid(), 'order', 'case', 'Spoof', '{}', '{"Event_ID": "000"}', NULL),
		(gen_random_uuid(), 'order', 'space', 'Spoof', '{}', '{"event_id ": "000"}', NULL),
		(gen_random_uuid(), 'order', 'zw', 'Spoof', '{}', '{"aggregate_id\u200b": "someone-else"}', NULL),
		(gen_random_uuid(), 'order', 'internal', 'Evil', '{}', NULL, '__consumer_offsets'),
		(gen_random_uuid(), 'order', 'elsewhere', 'Evil', '{}', NULL, $1)`, b.kafka.Prefix+"other"); err != nil {
		t.Fatal(err)
	}
	drain := func(cfg Config) {
		t.Helper()
		cfg.Drain = true
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := b.relay(t, cfg).Run(dctx); err != nil {
			t.Fatal(err)
		}
	}
	// Only the test's own order topic: the row naming "other" is refused too.
	cfg := b.config()
	cfg.Topics = []string{b.kafka.Prefix + "outbox.*"}
	drain(cfg)
	lastError := func(agg string) string {
		t.Helper()
		var e string
		if err := b.pool.QueryRow(ctx, `SELECT last_error FROM outbox_event WHERE aggregate_id = $1 AND failed_at IS NOT NULL AND published_at IS NULL AND attempts = 1`, agg).Scan(&e); err != nil {
			t.Fatalf("event %s not failed at its first attempt: %v", agg, err)
		}
		return e
	}
	for agg, want := range map[string]string{
		"case":      `header "Event_ID" is too like the reserved "event_id"`,
		"space":     `header "event_id " is too like the reserved "event_id"`,
		"zw":        `header "aggregate_id\u200b" is too like the reserved "aggregate_id"`,
		"internal":  `topic "__consumer_offsets" is not allowed by --topics ` + b.kafka.Prefix + "outbox.*",
		"elsewhere": `topic "` + b.kafka.Prefix + `other" is not allowed by --topics ` + b.kafka.Prefix + "outbox.*",
	} {
		if got := lastError(agg); !strings.Contains(got, want) {
			t.Errorf("%s: last_error %q lacks %q", agg, got, want)
		}
	}
	recs := b.delivered(t, 1, b.topic)
	if len(recs) != 1 || string(recs[0].Key) != "ok" {
		t.Fatalf("records %v, want the good one only", recs)
	}

	// Without --topics, every topic but the internal ones.
	if _, err := b.pool.Exec(ctx, `UPDATE outbox_event SET failed_at = NULL, attempts = 0, last_error = NULL
		WHERE aggregate_id IN ('internal', 'elsewhere')`); err != nil {
		t.Fatal(err)
	}
	drain(b.config())
	if got, want := lastError("internal"), `topic "__consumer_offsets" is refused: names starting with "__" are Kafka's internal topics (allow it explicitly with --topics)`; got != want {
		t.Errorf("internal: last_error %q, want %q", got, want)
	}
	if recs := b.delivered(t, 1, b.kafka.Prefix+"other"); len(recs) != 1 || string(recs[0].Key) != "elsewhere" {
		t.Errorf("the row naming another topic was not published there: %v", recs)
	}
}
