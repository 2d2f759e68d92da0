package wire_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/wire"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Every row is in exactly the partition state its columns say.
func TestEveryRowIsInOneState(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows := []struct {
		name                  string
		published, failed     string
		leaseUntil, available string
		want                  wire.State
	}{
		{"published", "now()", "NULL", "NULL", "now()", wire.Published},
		{"published-after-failing", "now()", "now()", "NULL", "now()", wire.Published},
		{"failed", "NULL", "now()", "NULL", "now()", wire.Failed},
		{"failed-while-leased", "NULL", "now()", "now() + interval '1 min'", "now()", wire.Failed},
		{"leased", "NULL", "NULL", "now() + interval '1 min'", "now()", wire.Leased},
		{"expired-lease", "NULL", "NULL", "now() - interval '1 min'", "now() - interval '1 s'", wire.Ready},
		{"ready", "NULL", "NULL", "NULL", "now() - interval '1 s'", wire.Ready},
		{"scheduled", "NULL", "NULL", "NULL", "now() + interval '1 min'", wire.Scheduled},
	}
	for _, r := range rows {
		_, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			published_at, failed_at, lease_until, available_at, lease_token)
			VALUES (gen_random_uuid(), 'a', $1, 'e', '{}', `+r.published+`, `+r.failed+`, `+r.leaseUntil+`, `+r.available+`,
			CASE WHEN `+r.leaseUntil+` IS NULL THEN NULL ELSE gen_random_uuid() END)`, r.name)
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		var hits []string
		for _, s := range wire.All {
			cond, _ := wire.SQL(s)
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE aggregate_id = $1 AND `+cond, r.name).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				hits = append(hits, string(s))
			}
		}
		if len(hits) != 1 || hits[0] != string(r.want) {
			t.Errorf("%s: SQL states %v, want [%s]", r.name, hits, r.want)
		}
	}
	var expired int
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE `+wire.ExpiredLeaseSQL).Scan(&expired)
	if expired != 1 {
		t.Errorf("expired leases: %d, want 1", expired)
	}
	if _, err := wire.Parse("bogus"); err == nil {
		t.Error("Parse accepted bogus")
	}
}

// A blocker is a failed or scheduled event with no unpublished event of its
// aggregate before it; HeadSQL is the second half; WaitingSQL is what waits
// behind a blocker.
func TestBlockerAndHead(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// aggregate/event: state, in seq order within each aggregate.
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at, failed_at, available_at) VALUES
		(gen_random_uuid(), 'a', 'failed-head', 'pub', '{}', now(), NULL, now()),
		(gen_random_uuid(), 'a', 'failed-head', 'blocker', '{}', NULL, now(), now()),
		(gen_random_uuid(), 'a', 'failed-head', 'waits', '{}', NULL, NULL, now()),
		(gen_random_uuid(), 'a', 'scheduled-head', 'blocker', '{}', NULL, NULL, now() + interval '1 hour'),
		(gen_random_uuid(), 'a', 'scheduled-head', 'waits', '{}', NULL, NULL, now()),
		(gen_random_uuid(), 'a', 'ready-head', 'head', '{}', NULL, NULL, now()),
		(gen_random_uuid(), 'a', 'ready-head', 'behind', '{}', NULL, now(), now()),
		(gen_random_uuid(), 'a', 'ready-head', 'later', '{}', NULL, NULL, now())`); err != nil {
		t.Fatal(err)
	}
	names := func(cond string) []string {
		rows, err := conn.Query(ctx, `SELECT aggregate_id || '/' || event_type FROM outbox_event o WHERE `+cond+` ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := names(wire.BlockerSQL("outbox_event", "o")), []string{"failed-head/blocker", "scheduled-head/blocker"}; !slices.Equal(got, want) {
		t.Errorf("blockers %v, want %v", got, want)
	}
	if got, want := names("published_at IS NULL AND "+wire.HeadSQL("outbox_event", "o")), []string{"failed-head/blocker", "scheduled-head/blocker", "ready-head/head"}; !slices.Equal(got, want) {
		t.Errorf("unpublished heads %v, want %v", got, want)
	}
	// Waiting: behind a failed or scheduled head. ready-head/later is not
	// waiting yet (its head is ready; the relay publishes that first, and then
	// the failed event behind it heads the aggregate).
	if got, want := names("published_at IS NULL AND "+wire.WaitingSQL("outbox_event", "o")), []string{"failed-head/waits", "scheduled-head/waits"}; !slices.Equal(got, want) {
		t.Errorf("waiting %v, want %v", got, want)
	}
	if _, err := conn.Exec(ctx, `UPDATE outbox_event SET published_at = now() WHERE aggregate_id = 'ready-head' AND event_type = 'head'`); err != nil {
		t.Fatal(err)
	}
	if got, want := names("published_at IS NULL AND "+wire.WaitingSQL("outbox_event", "o")), []string{"failed-head/waits", "scheduled-head/waits", "ready-head/later"}; !slices.Equal(got, want) {
		t.Errorf("waiting once the ready head is published %v, want %v", got, want)
	}
}
