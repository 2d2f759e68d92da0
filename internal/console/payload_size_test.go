package console

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// bytesFigure finds every byte count a text gives.
var bytesFigure = regexp.MustCompile(`(\d+) bytes`)

// TestOnePayloadSize: a payload written compact (a Java service's
// serializer), longer as PostgreSQL's JSON text and longer still
// pretty-printed, has one size wherever the console gives one — the detail's
// heading, where the detail cuts its print, the field editor's refusal and the
// trace's record, when the relay wrote it — the bytes of its JSON text
// (octet_length(payload::text)), labelled so. The detail's cut mark gave the
// pretty print's length and the field editor refused with it.
func TestOnePayloadSize(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	for _, ev := range []struct {
		id   string
		keys int
	}{
		{"f7000000-0000-4000-8000-000000000001", 5_000},  // past the detail's 64 KiB
		{"f7000000-0000-4000-8000-000000000002", 13_500}, // past the field editor's 256 KiB when pretty, not as text
	} {
		if _, err := b.pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			created_at, available_at, failed_at, attempts, last_error)
			SELECT $1, 'Order', 'java-1', 'OrderPlaced',
				(SELECT jsonb_object_agg(lpad(g::text, 5, '0'), 'v' || g) FROM generate_series(1, $2) g),
				$3, $3, $3, 1, 'record too large'`, ev.id, ev.keys, b.base); err != nil {
			t.Fatal(err)
		}
		var text, pretty int
		if err := b.pool.QueryRow(ctx, `SELECT octet_length(payload::text), octet_length(jsonb_pretty(payload)) FROM outbox_event WHERE event_id = $1`,
			ev.id).Scan(&text, &pretty); err != nil {
			t.Fatal(err)
		}
		want := strconv.Itoa(text)
		check := func(where, s, label string) {
			t.Helper()
			figs := bytesFigure.FindAllStringSubmatch(s, -1)
			for _, f := range figs {
				if f[1] != want {
					t.Errorf("%s of %s gives %s bytes; its one size is %s (as JSON text)", where, ev.id, f[1], want)
				}
			}
			if len(figs) == 0 || !strings.Contains(s, label) {
				t.Errorf("%s of %s does not say %q:\n%s", where, ev.id, label, tail(s))
			}
		}
		d := loadDetail(ctx, b.in, func() time.Time { return b.base }, ev.id)
		if d.err != nil {
			t.Fatal(d.err)
		}
		// Only the payload's part: the seeded event's last error has no figure.
		check("the detail", d.content[strings.Index(d.content, "PAYLOAD"):], "PAYLOAD ("+want+" bytes as JSON text)")
		if ev.keys == 5_000 && !strings.Contains(d.content, "cut: the rest of the payload") {
			t.Errorf("the detail of %s (%d bytes pretty) is not cut:\n%s", ev.id, pretty, tail(d.content))
		}
		if ev.keys == 13_500 {
			if text > fieldEditorMax || pretty <= fieldEditorMax {
				t.Fatalf("the payload is %d bytes as text and %d pretty: the case needs text ≤ %d < pretty", text, pretty, fieldEditorMax)
			}
			// Within the editor's bound by its one size, the editor opens it.
			if msg := readPayloadText(ctx, b.in, ev.id).(correctFieldMsg); msg.err != nil {
				t.Errorf("the field editor refused %s: %v", ev.id, msg.err)
			}
		}
		// The trace of the record the relay wrote (the payload's JSON text as
		// its value) gives the same figure and no note; another value's size
		// is said to differ.
		tr, err := b.in.Trace(ctx, ev.id)
		if err != nil {
			t.Fatal(err)
		}
		p, o := int32(0), int64(7)
		tr.KafkaTopic, tr.KafkaPartition, tr.KafkaOffset = "orders", &p, &o
		tr.Kafka = &inspect.RecordCheck{Topic: "orders", Offset: 7, Found: true, Key: "java-1", ValueBytes: text}
		check("the trace", traceText(tr, true, b.base), "value "+want+" bytes")
		tr.Kafka.ValueBytes = text - 40 // compact, as another writer serialized it
		if s := traceText(tr, true, b.base); !strings.Contains(s, "value "+strconv.Itoa(text-40)+" bytes") ||
			!strings.Contains(s, "not the payload's "+want+" bytes as JSON text") {
			t.Errorf("the trace of a record of another size:\n%s", s)
		}
	}
}

// The field editor refuses a payload past its bound by the payload's one size.
func TestFieldEditorRefusesByTheOneSize(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	const id = "f7000000-0000-4000-8000-000000000003"
	if _, err := b.pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
		created_at, available_at, failed_at, attempts, last_error)
		SELECT $1, 'Order', 'java-2', 'OrderPlaced', (SELECT jsonb_object_agg(lpad(g::text, 6, '0'), repeat('v', 20)) FROM generate_series(1, 12000) g),
			$2, $2, $2, 1, 'record too large'`, id, b.base); err != nil {
		t.Fatal(err)
	}
	var text int
	if err := b.pool.QueryRow(ctx, `SELECT octet_length(payload::text) FROM outbox_event WHERE event_id = $1`, id).Scan(&text); err != nil {
		t.Fatal(err)
	}
	msg := readPayloadText(ctx, b.in, id).(correctFieldMsg)
	if msg.err == nil || !strings.Contains(msg.err.Error(), "the payload is "+strconv.Itoa(text)+" bytes as JSON text, over the") {
		t.Errorf("the field editor on %d bytes as JSON text: %v", text, msg.err)
	}
}

// tail is the end of a long text, for a failure's message.
func tail(s string) string {
	if len(s) > 600 {
		return "…" + s[len(s)-600:]
	}
	return s
}
