package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/wire"
)

// A row's headers become record headers after the relay's own (strings as they
// are, other JSON values as JSON, nulls dropped); a row that names a reserved
// header fails with a last_error saying which (defect 6: it used to publish the
// record with two event_id headers).
func TestRowHeadersAndReservedNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers) VALUES
		(gen_random_uuid(), 'order', 'ok', 'Good', '{}', '{"traceparent": "00-abc-01", "n": 5, "gone": null}'),
		(gen_random_uuid(), 'order', 'spoof', 'Spoof', '{}', '{"event_id": "000", "aggregate_id": "someone-else", "event_type": "Spoofed"}')`); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.Drain = true
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := b.relay(t, cfg).Run(dctx); err != nil {
		t.Fatal(err)
	}
	var lastError string
	if err := b.pool.QueryRow(ctx, `SELECT last_error FROM outbox_event WHERE aggregate_id = 'spoof' AND failed_at IS NOT NULL AND published_at IS NULL`).Scan(&lastError); err != nil {
		t.Fatalf("spoofing event not failed: %v", err)
	}
	if !strings.Contains(lastError, `"aggregate_id" is reserved`) {
		t.Fatalf("last_error %q does not name the reserved header", lastError)
	}
	recs := b.delivered(t, 1, b.topic)
	if len(recs) != 1 {
		t.Fatalf("%d records, want the good one only", len(recs))
	}
	rec := recs[0]
	count := map[string]int{}
	for _, h := range rec.Headers {
		count[h.Key]++
	}
	for _, name := range wire.ReservedHeaders() {
		if count[name] != 1 {
			t.Errorf("header %s appears %d times", name, count[name])
		}
	}
	if header(rec, "traceparent") != "00-abc-01" || header(rec, "n") != "5" || count["gone"] != 0 {
		t.Errorf("row headers: %v", rec.Headers)
	}
	if got := rec.Headers[len(wire.ReservedHeaders())].Key; got != "n" {
		t.Errorf("row headers come after the relay's, sorted: first is %q", got)
	}
}

// TestLookalikeHeadersAreRefused: a row's header that reads as a reserved
// one — another case or width, white space, an invisible code point, a dotted
// or dotless i — makes the event poison, its error naming the reserved header,
// as the exact name does; a consumer comparing names loosely would take it for
// the relay's own. A name merely near one passes.
func TestLookalikeHeadersAreRefused(t *testing.T) {
	t.Parallel()
	r := &Relay{cfg: Config{TopicTemplate: wire.DefaultTopicTemplate, MaxMessageBytes: 1 << 20}}
	record := func(name string) error {
		h, _ := json.Marshal(map[string]string{name: "x"})
		_, err := r.record(&event{id: uuid.New(), aggregateType: "order", aggregateID: "1", eventType: "E", payload: []byte(`{}`), headers: h})
		return err
	}
	for _, name := range []string{"Event_ID", "event_id ", "event\u200b_id", "event_id\u034f", "event_id\ufe0f",
		"event_id\U000e0100", "event_id\u3164", "event_id\u2800", "event_id\u115f", "ｅｖｅｎｔ_ｉｄ", "event_ıd", "EVENT_İD",
		"event_id\U0001d173", "event_i\u0307d"} {
		err := record(name)
		if !errors.As(err, new(permanentError)) || !strings.Contains(err.Error(), `is too like the reserved "event_id"`) {
			t.Errorf("header %+q: %v, want the event refused as too like event_id", name, err)
		}
	}
	for _, name := range []string{"event_ids", "x-event_id", "traceparent", "event_іd" /* Cyrillic і */} {
		if err := record(name); err != nil {
			t.Errorf("header %+q: %v", name, err)
		}
	}
}
