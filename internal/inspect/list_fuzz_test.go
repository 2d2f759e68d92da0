package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/wire"
)

// FuzzList runs fuzzed filters, states and sorts through List against a real
// database: a filter that Validate accepts never makes PostgreSQL fail (no syntax
// error, no failed cast), and no input panics. A forged page cursor may fail its
// cast (a data error) but, like the filter, only ever reaches SQL as a parameter.
func FuzzList(f *testing.F) {
	f.Add("failed", "seq", "OrderPlaced", "order", "o-1", "f000", "timeout", "", int64(time.Hour), int64(0), false)
	f.Add("published", "published_at", "x' OR '1'='1", "a\"; DROP TABLE outbox_event; --", "$1", "f0000001-0000-4000-8000-000000000001", "%_\\", "eyJrIjoiJzsgRFJPUCBUQUJMRSB4OyAtLSIsInMiOjF9", int64(0), int64(time.Minute), true)
	f.Add("archived", "archived_at", "", "", "", "------------------------------------", "?", "", int64(1), int64(1<<62), false)
	f.Add("pending", "attempts", "\x00", "", "", "ABCDEF", "", "!!", int64(0), int64(0), true)
	pool, _ := testenv.Pool(f)
	in, err := inspect.New(pool, "public")
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
		VALUES ('f0000001-0000-4000-8000-000000000001', 'order', 'o-1', 'OrderPlaced', '{}', 3, now(), 'timeout'),
		       ('f0000002-0000-4000-8000-000000000002', 'order', 'o-2', 'OrderPlaced', '{}', 1, NULL, NULL)`); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, state, sort, eventType, aggType, aggID, idPrefix, errText, after string, older, newer int64, desc bool) {
		flt := inspect.Filter{EventType: eventType, AggregateType: aggType, AggregateID: aggID, IDPrefix: idPrefix,
			ErrorContains: errText, OlderThan: time.Duration(older), NewerThan: time.Duration(newer)}
		_, err := in.List(ctx, inspect.ListOptions{State: wire.State(state), Filter: flt, Sort: inspect.Sort(sort), Desc: desc, Limit: 5, After: after})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			if after != "" && strings.HasPrefix(pgErr.Code, "22") {
				return // a forged cursor's key fails its cast: a data error, still only a parameter
			}
			t.Fatalf("List(state %q, sort %q, %+v): database error %s: %v", state, sort, flt, pgErr.Code, err)
		}
		if err != nil && !errors.Is(err, inspect.ErrInvalidRequest) {
			t.Fatalf("List(state %q, sort %q, %+v): %v, neither a result nor ErrInvalidRequest", state, sort, flt, err)
		}
	})
}
