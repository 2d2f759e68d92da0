package wire_test

import (
	"context"
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
