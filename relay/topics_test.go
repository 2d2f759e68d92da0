package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
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
		// The ecosystem's internal topics: refused by default, and opened only
		// by a pattern that is itself such a name.
		{nil, "_schemas", false},
		{nil, "_confluent-metrics", false},
		{nil, "_confluent-command", false},
		{nil, "connect-configs", false},
		{nil, "connect-offsets", false},
		{nil, "connect-status", false},
		{nil, "connect-status.x", true},
		{nil, "my_schemas", true},
		{nil, "_schemas2", true},
		{[]string{"*"}, "_schemas", false},
		{[]string{"_*"}, "_schemas", false},
		{[]string{"connect-*"}, "connect-offsets", false},
		{[]string{"connect-*"}, "connect-cluster-a", true},
		{[]string{"_schemas"}, "_schemas", true},
		{[]string{"_confluent*"}, "_confluent-metrics", true},
		{[]string{"connect-offsets", "outbox.*"}, "connect-offsets", true},
		{[]string{"connect-offsets", "outbox.*"}, "connect-status", false},
	} {
		why := topicRefused(c.patterns, c.topic)
		if (why == "") != c.allowed {
			t.Errorf("topicRefused(%q, %q) = %q, want allowed %v", c.patterns, c.topic, why, c.allowed)
		}
		if why != "" && (!strings.Contains(why, fmt.Sprintf("%q", c.topic)) || !strings.Contains(why, "--topics")) {
			t.Errorf("topicRefused(%q, %q) = %q: does not name the topic and --topics", c.patterns, c.topic, why)
		}
	}
	for topic, whose := range map[string]string{
		"__consumer_offsets": `Kafka (names starting with "__")`, "_schemas": "the schema registry",
		"_confluent-metrics": "Confluent Platform", "connect-configs": "Kafka Connect",
	} {
		if why := topicRefused(nil, topic); !strings.Contains(why, "internal to "+whose) {
			t.Errorf("topicRefused(nil, %q) = %q: does not say it is internal to %s", topic, why, whose)
		}
	}
	if err := (Config{Topics: []string{"ok.*", "bad name"}}).Validate(); err == nil || !strings.Contains(err.Error(), `Topics pattern "bad name"`) {
		t.Errorf("a bad pattern: %v", err)
	}
	if err := (Config{Topics: []string{"ok.*", "x"}}).Validate(); err != nil {
		t.Errorf("good patterns: %v", err)
	}
}

// Near-duplicates of the reserved headers fail like exact ones, with a
// last_error naming them; an event to a topic outside --topics (or, by default,
// to one of the internal topics of Kafka or its ecosystem: __consumer_offsets,
// the schema registry's _schemas) fails at once, its last_error naming the
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
		(gen_random_uuid(), 'order', 'registry', 'Evil', '{}', NULL, '_schemas'),
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
		"registry":  `topic "_schemas" is not allowed by --topics ` + b.kafka.Prefix + "outbox.*",
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
		WHERE aggregate_id IN ('internal', 'registry', 'elsewhere')`); err != nil {
		t.Fatal(err)
	}
	drain(b.config())
	for agg, want := range map[string]string{
		"internal": `topic "__consumer_offsets" is refused: it is internal to Kafka (names starting with "__"); to write to it, name it in --topics beside the relay's other topics`,
		"registry": `topic "_schemas" is refused: it is internal to the schema registry (its storage topic); to write to it, name it in --topics beside the relay's other topics`,
	} {
		if got := lastError(agg); got != want {
			t.Errorf("%s: last_error %q, want %q", agg, got, want)
		}
	}
	if recs := b.delivered(t, 1, b.kafka.Prefix+"other"); len(recs) != 1 || string(recs[0].Key) != "elsewhere" {
		t.Errorf("the row naming another topic was not published there: %v", recs)
	}
}
