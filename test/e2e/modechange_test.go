package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// Switching the commit order in and out of enforce while a relay claims at
// full speed and a writer inserts: every switch goes through (a try gives up
// on the table lock after 200 ms, long before PostgreSQL's deadlock check
// would pick a victim), neither the relay nor the writer meets a deadlock,
// and every event is published.
func TestCommitOrderChangeBesideAClaimingRelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 500), 'OrderPlaced', '{}' FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	relay := startRelay(t, dsn, k)
	testenv.WaitFor(t, time.Minute, "the relay publishing", func() bool { return count(t, pool, "published_at IS NOT NULL") > 0 })
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
					VALUES (gen_random_uuid(), 'order', 'w-' || ($1::int % 50), 'OrderPlaced', '{}')`, i)
				return err
			}); err != nil {
				writerDone <- err
				return
			}
		}
	}()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for i, mode := range []migrations.CommitOrder{migrations.OrderEnforce, migrations.OrderDetect, migrations.OrderEnforce, migrations.OrderOff, migrations.OrderDetect} {
		var got migrations.CommitOrder
		if _, _, err := migrations.MigrateWith(ctx, conn, "public", migrations.Options{CommitOrder: mode,
			OnOrder: func(o migrations.CommitOrder) { got = o }}); err != nil {
			t.Fatalf("switch %d to %s beside a claiming relay: %v", i, mode, err)
		}
		if got != mode {
			t.Fatalf("switch %d: mode %s, want %s", i, got, mode)
		}
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatalf("the writer, while the mode changed: %v", err)
	}
	n := count(t, pool, "true")
	testenv.WaitFor(t, 2*time.Minute, "everything published", func() bool { return count(t, pool, "published_at IS NOT NULL") == n })
	if log := relay.logText(); strings.Contains(log, "deadlock") || strings.Contains(log, "40P01") {
		t.Errorf("the relay met a deadlock:\n%s", log)
	}
}
