package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/wire"
)

// TestCloudEventsHeaders: with CloudEvents beside the relay's own headers a
// record carries both, with only CloudEvents' it carries no event_id header;
// the attributes are the row's; a row's own header that reads as a
// CloudEvents one fails its event while the relay sets them, and passes when
// it does not.
func TestCloudEventsHeaders(t *testing.T) {
	t.Parallel()
	for _, mode := range []CloudEventsMode{CloudEventsBeside, CloudEventsOnly, CloudEventsOff} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			var id string
			if err := b.pool.QueryRow(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
				VALUES (gen_random_uuid(), 'order', 'o-1', 'OrderPlaced', '{"total": 10}', '2026-12-01 09:30:00.123456+00')
				RETURNING event_id::text`).Scan(&id); err != nil {
				t.Fatal(err)
			}
			b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers)
				VALUES (gen_random_uuid(), 'order', 'o-2', 'OrderPlaced', '{}', '{"CE_Type": "forged"}')`)
			cfg := b.config()
			cfg.CloudEvents = mode
			cfg.CloudEventsSource = "/shop/{aggregate_type}"
			cfg.Drain = true
			r := b.relay(t, cfg)
			dctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := r.Run(dctx); err != nil {
				t.Fatal(err)
			}
			want := 1
			if mode == CloudEventsOff {
				want = 2
			}
			recs := b.delivered(t, want, b.topic)
			rec := recsByKey(recs, "o-1")
			ce := map[string]string{wire.HeaderCESpecVersion: "1.0", wire.HeaderCEID: id, wire.HeaderCEType: "OrderPlaced",
				wire.HeaderCESource: "/shop/order", wire.HeaderCESubject: "o-1", wire.HeaderCETime: "2026-12-01T09:30:00.123456Z",
				wire.HeaderContentType: "application/json"}
			for k, v := range ce {
				if got := header(rec, k); (mode != CloudEventsOff) != (got == v) || mode == CloudEventsOff && got != "" {
					t.Errorf("%s: header %s = %q, want %q", mode, k, got, map[bool]string{true: "", false: v}[mode == CloudEventsOff])
				}
			}
			if got := header(rec, wire.HeaderEventID); (mode == CloudEventsOnly) != (got == "") {
				t.Errorf("%s: event_id header %q", mode, got)
			}
			forged := b.count(t, "aggregate_id = 'o-2' AND failed_at IS NOT NULL AND last_error LIKE '%too like the reserved \"ce_type\"%'")
			if (mode != CloudEventsOff) != (forged == 1) {
				t.Errorf("%s: the row's CE_Type header failed its event: %v", mode, forged == 1)
			}
			if mode == CloudEventsOff && !strings.Contains(header(recsByKey(recs, "o-2"), "CE_Type"), "forged") {
				t.Errorf("off: the row's own CE_Type header did not pass")
			}
		})
	}
}

// recsByKey is the record of recs with key, or an empty one.
func recsByKey(recs []*kgo.Record, key string) *kgo.Record {
	for _, r := range recs {
		if string(r.Key) == key {
			return r
		}
	}
	return &kgo.Record{}
}
