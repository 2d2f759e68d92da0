package relay

import (
	"context"
	"strings"
	"testing"
	"time"

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
