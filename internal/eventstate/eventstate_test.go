package eventstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/eventstate"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The SQL conditions and Of agree, and every row is in exactly one partition state.
func TestSQLAndGoAgree(t *testing.T) {
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
		want                  eventstate.State
	}{
		{"published", "now()", "NULL", "NULL", "now()", eventstate.Published},
		{"published-after-failing", "now()", "now()", "NULL", "now()", eventstate.Published},
		{"failed", "NULL", "now()", "NULL", "now()", eventstate.Failed},
		{"failed-while-leased", "NULL", "now()", "now() + interval '1 min'", "now()", eventstate.Failed},
		{"leased", "NULL", "NULL", "now() + interval '1 min'", "now()", eventstate.Leased},
		{"expired-lease", "NULL", "NULL", "now() - interval '1 min'", "now() - interval '1 s'", eventstate.Ready},
		{"ready", "NULL", "NULL", "NULL", "now() - interval '1 s'", eventstate.Ready},
		{"scheduled", "NULL", "NULL", "NULL", "now() + interval '1 min'", eventstate.Scheduled},
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
		for _, s := range eventstate.All {
			cond, _ := eventstate.SQL(s)
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
		var pub, fail, lease *time.Time
		var avail, now time.Time
		if err := conn.QueryRow(ctx, `SELECT published_at, failed_at, lease_until, available_at, now() FROM outbox_event WHERE aggregate_id = $1`, r.name).
			Scan(&pub, &fail, &lease, &avail, &now); err != nil {
			t.Fatal(err)
		}
		z := func(p *time.Time) time.Time {
			if p == nil {
				return time.Time{}
			}
			return *p
		}
		if got := eventstate.Of(now, z(pub), z(fail), z(lease), avail); got != r.want {
			t.Errorf("%s: Of = %s, want %s", r.name, got, r.want)
		}
	}
	var expired int
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE `+eventstate.ExpiredLeaseSQL).Scan(&expired)
	if expired != 1 {
		t.Errorf("expired leases: %d, want 1", expired)
	}
	if _, err := eventstate.Parse("bogus"); err == nil {
		t.Error("Parse accepted bogus")
	}
}
