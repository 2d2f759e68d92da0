package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/wire"
)

// TestDebeziumLayout: with the Debezium layout a record is what Debezium's
// outbox event router emits with its defaults for the same row: topic
// outbox.event.<aggregate_type>, key the aggregate id, value the payload, one
// header id holding the event id (and the row's own headers); none of
// outboxtop's own headers. A row header that reads as id fails its event.
func TestDebeziumLayout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var id string
	if err := b.pool.QueryRow(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers)
		VALUES (gen_random_uuid(), 'order', 'o-1', 'OrderPlaced', '{"total": 10}', '{"tenant": "eu"}') RETURNING event_id::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers)
		VALUES (gen_random_uuid(), 'order', 'o-2', 'OrderPlaced', '{}', '{"ID": "forged"}')`)
	topic := b.kafka.Prefix + "outbox.event.order"
	b.kafka.CreateTopics(t, 1, "outbox.event.order")
	cfg := b.config()
	cfg.Layout = LayoutDebezium
	cfg.TopicTemplate = b.kafka.Prefix + DebeziumTopicTemplate
	cfg.Drain = true
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := b.relay(t, cfg).Run(dctx); err != nil {
		t.Fatal(err)
	}
	rec := b.delivered(t, 1, topic)[0]
	var keys []string
	for _, h := range rec.Headers {
		keys = append(keys, h.Key)
	}
	if string(rec.Key) != "o-1" || string(rec.Value) != `{"total": 10}` || header(rec, HeaderDebeziumID) != id ||
		header(rec, "tenant") != "eu" || strings.Join(keys, ",") != "id,tenant" {
		t.Errorf("record: key %q value %q headers %v", rec.Key, rec.Value, rec.Headers)
	}
	if b.count(t, `aggregate_id = 'o-2' AND failed_at IS NOT NULL AND last_error LIKE '%too like the reserved "id"%'`) != 1 {
		t.Error("a row header reading as id did not fail its event")
	}
	if got := (Config{Layout: LayoutDebezium}).WithDefaults().EffectiveTopicTemplate(); got != "outbox.event.{aggregate_type}" {
		t.Errorf("the Debezium layout's default topic template: %q", got)
	}
}

// TestRecordKeys: the key is the aggregate id, the event id, or a field of the
// payload (a string, number or boolean); an event whose payload lacks the
// field fails at once, naming it.
func TestRecordKeys(t *testing.T) {
	t.Parallel()
	e := &event{aggregateID: "o-1", payload: []byte(`{"customer": {"id": 42, "name": "ann", "vip": true, "tags": []}}`)}
	for key, want := range map[string]string{KeyAggregateID: "o-1", KeyEventID: e.id.String(),
		"payload:customer.id": "42", "payload:customer.name": "ann", "payload:customer.vip": "true"} {
		r := &Relay{cfg: Config{Key: key}}
		got, err := r.recordKey(e)
		if err != nil || string(got) != want {
			t.Errorf("key %s: %q, %v; want %q", key, got, err, want)
		}
	}
	for key, says := range map[string]string{"payload:customer.email": `no field "customer.email"`,
		"payload:customer.tags": "not a string, number or boolean", "payload:customer.id.x": "not an object above it"} {
		r := &Relay{cfg: Config{Key: key}}
		if _, err := r.recordKey(e); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("key %s: %v, want an error saying %q", key, err, says)
		}
	}
	for _, bad := range []string{"payload:", "payload:a..b", "aggregate", "payload:a b"} {
		if err := (Config{Schema: wire.DefaultSchema, Key: bad}).Validate(); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
}
