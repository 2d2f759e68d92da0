package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// A fragment may use jsonb's ? operators: placeholders are written where a value
// is added, and nothing rewrites a ? afterwards (the old rewriter turned the first
// ? of a fragment into a placeholder, whichever it was).
func TestWhereLeavesJSONBQuestionMarksAlone(t *testing.T) {
	t.Parallel()
	var w where
	w.add(`headers ? 'traceparent'`)
	w.add(`headers ?| array['a', 'b'] AND event_type = ` + w.arg("OrderPaid"))
	w.addFilter(Filter{AggregateID: "?", Words: []string{"?"}, OlderThan: time.Minute}, "created_at")
	want := `(headers ? 'traceparent') AND (headers ?| array['a', 'b'] AND event_type = $1) AND (aggregate_id = $2) AND ` +
		`(strpos(lower(event_type), lower($3)) > 0 OR strpos(lower(aggregate_type || '/' || aggregate_id), lower($3)) > 0
			OR strpos(event_id::text, lower($3)) > 0 OR strpos(lower(coalesce(last_error, '')), lower($3)) > 0) AND ` +
		`(created_at <= now() - $4::interval)`
	if got := w.sql(); got != want {
		t.Fatalf("sql:\n%s\nwant:\n%s", got, want)
	}
	if len(w.args) != 4 || w.args[0] != "OrderPaid" || w.args[1] != "?" || w.args[2] != "?" || w.args[3] != "60000000 microseconds" {
		t.Fatalf("args %q", w.args)
	}
	// PostgreSQL parses it and binds every parameter.
	pool, _ := testenv.Pool(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at)
		VALUES (gen_random_uuid(), 'order', '?', 'OrderPaid', '{}', '{"traceparent": "00", "a": "1"}', now() - interval '1 hour'),
		       (gen_random_uuid(), 'order', '?', 'OrderPaid', '{}', '{"a": "1"}', now() - interval '1 hour'),
		       (gen_random_uuid(), 'order', '?', 'OrderPaid', '{}', '{"traceparent": "00", "a": "1"}', now())`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox_event WHERE "+w.sql(), w.args...).Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d, %v; want 1 (the others lack traceparent or are too new)", n, err)
	}
}
