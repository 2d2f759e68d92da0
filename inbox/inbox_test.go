package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/inbox"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var (
	_ inbox.DB      = (*pgxpool.Pool)(nil)
	_ inbox.DB      = (*pgx.Conn)(nil)
	_ inbox.DB      = pgx.Tx(nil)
	_ inbox.PruneDB = (*pgxpool.Pool)(nil)
)

type testBundle struct {
	pool *pgxpool.Pool
	dsn  string
}

// setup gives the test a database with an effects table: apply adds one to
// effects.n for the record's key.
func setup(t *testing.T) *testBundle {
	t.Helper()
	pool, dsn := testenv.Pool(t)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE effects (key text PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &testBundle{pool: pool, dsn: dsn}
}

func record(key string, id string) *kgo.Record {
	return &kgo.Record{
		Topic: "outbox.order", Key: []byte(key), Value: []byte(`{}`),
		Headers: []kgo.RecordHeader{{Key: "event_type", Value: []byte("OrderPaid")}, {Key: "event_id", Value: []byte(id)}},
	}
}

func bump(rec *kgo.Record) inbox.ApplyFunc {
	return func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO effects VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET n = effects.n + 1`, string(rec.Key))
		return err
	}
}

func (b *testBundle) effects(t *testing.T, key string) int {
	t.Helper()
	var n int
	err := b.pool.QueryRow(context.Background(), `SELECT COALESCE((SELECT n FROM effects WHERE key = $1), 0)`, key).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (b *testBundle) inboxRows(t *testing.T, consumer string) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM consumed_event WHERE consumer_name = $1`, consumer).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDuplicateAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	rec := record("o-1", uuid.NewString())
	for i, want := range []bool{true, false, false} {
		applied, err := inbox.Handle(ctx, b.pool, "billing", rec, bump(rec))
		if err != nil {
			t.Fatal(err)
		}
		if applied != want {
			t.Errorf("delivery %d: applied = %v, want %v", i+1, applied, want)
		}
	}
	if n := b.effects(t, "o-1"); n != 1 {
		t.Errorf("effect applied %d times, want 1", n)
	}
	// Another consumer has its own inbox: it applies the event once too.
	for range 2 {
		if _, err := inbox.Handle(ctx, b.pool, "shipping", rec, bump(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.effects(t, "o-1"); n != 2 {
		t.Errorf("effects after a second consumer = %d, want 2", n)
	}
	if b.inboxRows(t, "billing") != 1 || b.inboxRows(t, "shipping") != 1 {
		t.Errorf("want one inbox row per consumer")
	}
}

func TestApplyErrorRollsBackInboxRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	rec := record("o-1", uuid.NewString())
	errDown := errors.New("downstream unavailable")
	applied, err := inbox.Handle(ctx, b.pool, "billing", rec, func(ctx context.Context, tx pgx.Tx) error {
		if err := bump(rec)(ctx, tx); err != nil {
			return err
		}
		return errDown // after a write: it must go too
	})
	if !errors.Is(err, errDown) || applied {
		t.Fatalf("Handle = %v, %v; want false and the apply error", applied, err)
	}
	if b.inboxRows(t, "billing") != 0 || b.effects(t, "o-1") != 0 {
		t.Fatalf("a failed apply left an inbox row or an effect behind")
	}

	// A panic in apply rolls back as well.
	func() {
		defer func() { _ = recover() }()
		_, _ = inbox.Handle(ctx, b.pool, "billing", rec, func(ctx context.Context, tx pgx.Tx) error {
			_ = bump(rec)(ctx, tx)
			panic("boom")
		})
	}()
	if b.inboxRows(t, "billing") != 0 || b.effects(t, "o-1") != 0 {
		t.Fatalf("a panicking apply left an inbox row or an effect behind")
	}

	// The redelivery applies.
	applied, err = inbox.Handle(ctx, b.pool, "billing", rec, bump(rec))
	if err != nil || !applied {
		t.Fatalf("redelivery: applied = %v, err = %v", applied, err)
	}
	if n := b.effects(t, "o-1"); n != 1 {
		t.Errorf("effect applied %d times, want 1", n)
	}
}

// waitForLockWaiter returns once a session of this test's database waits on a
// lock: the second delivery's insert blocked on the first's primary key.
func (b *testBundle) waitForLockWaiter(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var waiting int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Errorf("no delivery blocked on the inbox row: %v", err)
			return
		}
		if waiting > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond) // polling the server's lock table; there is no notification for it
	}
}

func TestConcurrentDeliveriesApplyOnce(t *testing.T) {
	t.Parallel()
	for _, firstFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("first fails %v", firstFails), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t)
			rec := record("o-1", uuid.NewString())

			inFirst := make(chan struct{})
			release := make(chan struct{})
			var calls atomic.Int32
			errFirst := errors.New("first delivery fails")
			first := func(ctx context.Context, tx pgx.Tx) error {
				calls.Add(1)
				if err := bump(rec)(ctx, tx); err != nil {
					return err
				}
				close(inFirst)
				<-release
				if firstFails {
					return errFirst
				}
				return nil
			}
			second := func(ctx context.Context, tx pgx.Tx) error {
				calls.Add(1)
				return bump(rec)(ctx, tx)
			}

			var wg sync.WaitGroup
			var applied1, applied2 bool
			var err1, err2 error
			wg.Add(2)
			go func() { defer wg.Done(); applied1, err1 = inbox.Handle(ctx, b.pool, "billing", rec, first) }()
			<-inFirst // the first holds the inbox row, uncommitted
			go func() { defer wg.Done(); applied2, err2 = inbox.Handle(ctx, b.pool, "billing", rec, second) }()
			b.waitForLockWaiter(t)
			close(release)
			wg.Wait()

			if firstFails {
				if !errors.Is(err1, errFirst) || applied1 {
					t.Errorf("first: %v, %v; want false and its error", applied1, err1)
				}
				if err2 != nil || !applied2 {
					t.Errorf("second: %v, %v; want it to apply after the first rolled back", applied2, err2)
				}
			} else {
				if err1 != nil || !applied1 {
					t.Errorf("first: %v, %v; want applied", applied1, err1)
				}
				if err2 != nil || applied2 {
					t.Errorf("second: %v, %v; want it to see the conflict and skip", applied2, err2)
				}
			}
			wantCalls := int32(1)
			if firstFails {
				wantCalls = 2
			}
			if c := calls.Load(); c != wantCalls {
				t.Errorf("apply ran %d times, want %d", c, wantCalls)
			}
			if n := b.effects(t, "o-1"); n != 1 {
				t.Errorf("effect committed %d times, want 1", n)
			}
		})
	}
}

func TestEventIDHeaderRequired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	id := uuid.NewString()
	cases := []struct {
		name    string
		headers []kgo.RecordHeader
		want    error
	}{
		{"missing", []kgo.RecordHeader{{Key: "event_type", Value: []byte("OrderPaid")}}, inbox.ErrNoEventID},
		{"no headers", nil, inbox.ErrNoEventID},
		{"wrong case key", []kgo.RecordHeader{{Key: "Event_ID", Value: []byte(id)}}, inbox.ErrNoEventID},
		{"empty", []kgo.RecordHeader{{Key: "event_id"}}, inbox.ErrMalformedEventID},
		{"not a uuid", []kgo.RecordHeader{{Key: "event_id", Value: []byte("order-42")}}, inbox.ErrMalformedEventID},
		{"nil uuid", []kgo.RecordHeader{{Key: "event_id", Value: []byte(uuid.Nil.String())}}, inbox.ErrMalformedEventID},
		{"two that disagree", []kgo.RecordHeader{{Key: "event_id", Value: []byte(id)}, {Key: "event_id", Value: []byte(uuid.NewString())}}, inbox.ErrMalformedEventID},
	}
	for _, c := range cases {
		rec := &kgo.Record{Topic: "outbox.order", Key: []byte("o-1"), Headers: c.headers}
		applied, err := inbox.Handle(ctx, b.pool, "billing", rec, func(context.Context, pgx.Tx) error {
			t.Errorf("%s: apply ran for a record without a valid event id", c.name)
			return nil
		})
		if !errors.Is(err, c.want) || applied {
			t.Errorf("%s: Handle = %v, %v; want false, %v", c.name, applied, err, c.want)
		}
	}
	if n := b.inboxRows(t, "billing"); n != 0 {
		t.Errorf("%d inbox rows written for invalid records", n)
	}

	// The same id twice is not a conflict.
	rec := &kgo.Record{Key: []byte("o-1"), Headers: []kgo.RecordHeader{{Key: "event_id", Value: []byte(id)}, {Key: "event_id", Value: []byte(id)}}}
	got, err := inbox.EventID(rec)
	if err != nil || got.String() != id {
		t.Errorf("EventID = %v, %v; want %s", got, err, id)
	}
	if _, err := inbox.Handle(ctx, b.pool, "", rec, bump(rec)); err == nil {
		t.Errorf("empty consumer name accepted")
	}
}

func TestHandleInCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	rec := record("o-1", uuid.NewString())
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := inbox.Handle(ctx, tx, "billing", rec, bump(rec))
	if err != nil || !applied {
		t.Fatalf("Handle in a transaction: %v, %v", applied, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if b.inboxRows(t, "billing") != 0 || b.effects(t, "o-1") != 0 {
		t.Errorf("the outer rollback did not take the inbox row and effect with it")
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	// 25 old and 5 recent rows for billing, 10 old rows for shipping.
	_, err := b.pool.Exec(ctx, `
		INSERT INTO consumed_event (consumer_name, event_id, consumed_at)
		SELECT 'billing', gen_random_uuid(), now() - interval '2 days' - i * interval '1 minute' FROM generate_series(1, 25) i;
		INSERT INTO consumed_event (consumer_name, event_id, consumed_at)
		SELECT 'billing', gen_random_uuid(), now() - interval '1 minute' FROM generate_series(1, 5);
		INSERT INTO consumed_event (consumer_name, event_id, consumed_at)
		SELECT 'shipping', gen_random_uuid(), now() - interval '2 days' FROM generate_series(1, 10);`)
	if err != nil {
		t.Fatal(err)
	}
	store := inbox.Store{PruneBatch: 7} // several batches, the last one short
	n, err := store.Prune(ctx, b.pool, "billing", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n != 25 {
		t.Errorf("pruned %d rows, want 25", n)
	}
	if b.inboxRows(t, "billing") != 5 || b.inboxRows(t, "shipping") != 10 {
		t.Errorf("billing keeps %d (want 5), shipping %d (want 10)", b.inboxRows(t, "billing"), b.inboxRows(t, "shipping"))
	}
	if n, err := inbox.Prune(ctx, b.pool, "billing", 24*time.Hour); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v; want 0", n, err)
	}
	if _, err := inbox.Prune(ctx, b.pool, "billing", -time.Hour); err == nil {
		t.Errorf("negative age accepted")
	}
}

func TestStoreSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	conn, err := pgx.Connect(ctx, b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, "shop", nil); err != nil {
		t.Fatal(err)
	}
	store := inbox.Store{Schema: "shop"}
	rec := record("o-1", uuid.NewString())
	for range 2 {
		if _, err := store.Handle(ctx, b.pool, "billing", rec, bump(rec)); err != nil {
			t.Fatal(err)
		}
	}
	var inShop, inPublic int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM shop.consumed_event), (SELECT count(*) FROM public.consumed_event)`).
		Scan(&inShop, &inPublic); err != nil {
		t.Fatal(err)
	}
	if inShop != 1 || inPublic != 0 || b.effects(t, "o-1") != 1 {
		t.Errorf("shop %d, public %d, effects %d; want 1, 0, 1", inShop, inPublic, b.effects(t, "o-1"))
	}
}
