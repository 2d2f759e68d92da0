package inspect_test

import (
	"context"
	"slices"
	"testing"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/wire"
)

// The actions' functions decide states with outboxtop_state
// (migrations/functions/outboxtop_state.sql), a restatement of wire's conditions: on rows in
// every combination of the columns the states read, both select the same rows
// for every state.
func TestStateFunctionIsWires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.Pool(t)
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			published_at, failed_at, lease_token, lease_until, available_at)
		SELECT gen_random_uuid(), 'order', 'o' || row_number() OVER (), 'E', '{}',
			p, f, CASE WHEN l IS NOT NULL THEN gen_random_uuid() END, l, a
		FROM unnest(ARRAY[NULL, now() - interval '1 min']::timestamptz[]) p,
		     unnest(ARRAY[NULL, now() - interval '1 min']::timestamptz[]) f,
		     unnest(ARRAY[NULL, now() - interval '1 min', now() + interval '1 min']::timestamptz[]) l,
		     unnest(ARRAY[now() - interval '1 min', now() + interval '1 min']::timestamptz[]) a`); err != nil {
		t.Fatal(err)
	}
	seqs := func(where string) []int64 {
		t.Helper()
		var s []int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(seq ORDER BY seq), '{}') FROM outbox_event WHERE `+where).Scan(&s); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		return s
	}
	for _, st := range wire.All {
		cond, err := wire.SQL(st)
		if err != nil {
			t.Fatal(err)
		}
		want := seqs(cond)
		if len(want) == 0 {
			t.Fatalf("no row is %s", st)
		}
		if got := seqs(`outboxtop_state(published_at, failed_at, lease_until, available_at) = '` + string(st) + `'`); !slices.Equal(got, want) {
			t.Errorf("outboxtop_state says %s for %v, wire for %v", st, got, want)
		}
	}
}
