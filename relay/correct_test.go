package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// A corrected copy of a failed event goes out in the failed event's place: a
// poison event (too large for the brokers) blocks its aggregate; the operator
// corrects its payload, and the copy, then the event that waited behind the
// original, reach Kafka in that order. The original is archived, failed,
// linked to the copy; one audit row names both, with the payload's diff; the
// copy's seq is the original's.
func TestCorrectedCopyTakesTheFailedEventsPlace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES
		('00000000-0000-4000-8000-0000000000c1', 'order', 'fix-1', 'OrderPlaced',
			jsonb_build_object('customer', jsonb_build_object('id', 41), 'blob', repeat('x', 30000)))`); err != nil {
		t.Fatal(err)
	}
	// The next event in a transaction of its own, after the first committed:
	// the writers serialized, so no order check may call it of unknown order,
	// before the correction or after it.
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES
		('00000000-0000-4000-8000-0000000000c2', 'order', 'fix-1', 'OrderPaid', '{"n": 2}')`); err != nil {
		t.Fatal(err)
	}
	const original = "00000000-0000-4000-8000-0000000000c1"
	cfg := b.config()
	cfg.MaxMessageBytes = 20_000
	cfg.Drain = true
	drain := func() {
		t.Helper()
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := b.relay(t, cfg).Run(dctx); err != nil {
			t.Fatal(err)
		}
	}
	drain()
	if got := b.count(t, "failed_at IS NOT NULL"); got != 1 {
		t.Fatalf("%d failed events, want the oversized one", got)
	}
	in := b.inspector(t)
	fixed := json.RawMessage(`{"customer": {"id": 42}, "note": "blob dropped"}`)
	c := inspect.Correction{ID: original, Payload: fixed, Reason: "drop the blob", Actor: "alice"}
	diff, err := in.PreviewCorrection(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ch := range diff {
		lines = append(lines, ch.String())
	}
	want := []string{"blob: removed", "customer.id: 41 → 42", `note: added "blob dropped"`}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("diff %q, want %q", lines, want)
	}
	if _, err := in.Correct(ctx, inspect.Correction{ID: original, Payload: json.RawMessage(`{"customer":{"id":41},"blob":"` + strings.Repeat("x", 30000) + `"}`),
		Reason: "same", Actor: "alice"}); !errors.Is(err, inspect.ErrInvalidRequest) {
		t.Fatalf("correcting with the same payload: %v, want it refused", err)
	}
	res, err := in.Correct(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.EventIDs) != 1 || res.Rows != 1 {
		t.Fatalf("correct returned %+v", res)
	}
	copyID := res.EventIDs[0]
	var origSeq, copySeq int64
	var lastErr string
	if err := b.pool.QueryRow(ctx, `SELECT a.seq, e.seq, a.last_error FROM outbox_event_archive a, outbox_event e
		WHERE a.event_id = $1 AND a.failed_at IS NOT NULL AND a.published_at IS NULL AND e.event_id = $2 AND e.correction_of = a.event_id`,
		original, copyID).Scan(&origSeq, &copySeq, &lastErr); err != nil {
		t.Fatalf("the original archived, failed, and the copy linked to it: %v", err)
	}
	if origSeq != copySeq || !strings.HasPrefix(lastErr, "corrected by alice as "+copyID+": drop the blob") {
		t.Fatalf("original seq %d, copy seq %d, original's last_error %q", origSeq, copySeq, lastErr)
	}
	if _, err := in.Correct(ctx, c); !errors.Is(err, inspect.ErrNotCorrectable) {
		t.Fatalf("correcting the archived original again: %v, want ErrNotCorrectable", err)
	}
	drain()
	recs := b.delivered(t, 2, b.topic)
	var got []string
	for _, r := range recs {
		if string(r.Key) == "fix-1" {
			got = append(got, header(r, wire.HeaderEventID))
		}
	}
	if len(got) != 2 || got[0] != copyID || got[1] != "00000000-0000-4000-8000-0000000000c2" {
		t.Fatalf("records of the aggregate, in order: %v, want the copy %s then the event that waited", got, copyID)
	}
	if n := b.count(t, "unserialized"); n != 0 {
		t.Errorf("%d events marked of unknown order: the copy took its original's place, whose order was known", n)
	}
	for _, id := range []string{original, copyID} {
		d, err := in.Detail(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, a := range d.Audit {
			if a.Action == "correct" && a.ID == res.AuditID && len(a.Diff) == 3 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: its audit %+v lacks the correction with its diff", id, d.Audit)
		}
		if id == original && (len(d.CorrectedAs) != 1 || d.CorrectedAs[0] != copyID) {
			t.Errorf("the original's detail says corrected as %v, want %s", d.CorrectedAs, copyID)
		}
	}
	if _, err := in.Correct(ctx, inspect.Correction{ID: copyID, Payload: fixed, Reason: "again", Actor: "alice"}); !errors.Is(err, inspect.ErrNotCorrectable) {
		t.Fatalf("correcting a published event: %v, want ErrNotCorrectable", err)
	}
}
