package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const seedDDL = `
CREATE TABLE outbox_event (
    event_id       uuid PRIMARY KEY,
    aggregate_type text NOT NULL,
    aggregate_id   text NOT NULL,
    event_type     text NOT NULL,
    payload        jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    available_at   timestamptz NOT NULL DEFAULT now(),
    attempts       integer NOT NULL DEFAULT 0,
    lease_token    uuid,
    lease_until    timestamptz,
    published_at   timestamptz
);
CREATE INDEX outbox_ready_idx
    ON outbox_event (available_at, created_at, event_id)
    WHERE published_at IS NULL;`

const seedInsert = `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
VALUES (gen_random_uuid(), 'order', $1, 'OrderConfirmed', '{"total": 10}')`

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func tables(t *testing.T, conn *pgx.Conn, schema string) map[string]bool {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

func TestApplyTwiceOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	for i := 0; i < 2; i++ {
		v, err := migrations.Apply(ctx, conn, "public", nil)
		if err != nil {
			t.Fatalf("apply %d: %v", i+1, err)
		}
		if int(v) != count(t) {
			t.Fatalf("apply %d: version %d, want %d", i+1, v, count(t))
		}
	}
	got := tables(t, conn, "public")
	for _, want := range []string{"outbox_event", "consumed_event", "outbox_event_archive", "outbox_audit", migrations.VersionTable} {
		if !got[want] {
			t.Errorf("table %s missing; have %v", want, got)
		}
	}
	if _, err := conn.Exec(ctx, seedInsert, "o-1"); err != nil {
		t.Fatalf("seed-style insert: %v", err)
	}
}

func TestUpgradesHandMadeSeedTableKeepingRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	if _, err := conn.Exec(ctx, seedDDL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := conn.Exec(ctx, seedInsert, "o-"+string(rune('a'+i%5))); err != nil {
			t.Fatal(err)
		}
	}
	// One row already published by some earlier relay: it must stay published.
	if _, err := conn.Exec(ctx, `UPDATE outbox_event SET published_at = now(), attempts = 1
		WHERE event_id = (SELECT event_id FROM outbox_event LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatalf("apply on seed table: %v", err)
	}
	var total, withSeq, distinctSeq, published int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(seq), count(DISTINCT seq), count(published_at) FROM outbox_event`).
		Scan(&total, &withSeq, &distinctSeq, &published); err != nil {
		t.Fatal(err)
	}
	if total != 50 || withSeq != 50 || distinctSeq != 50 || published != 1 {
		t.Fatalf("after upgrade: total=%d withSeq=%d distinctSeq=%d published=%d; want 50,50,50,1", total, withSeq, distinctSeq, published)
	}
	// The new columns are there and the seed's insert still works, getting a seq
	// after the existing rows.
	var maxOld int64
	if err := conn.QueryRow(ctx, `SELECT max(seq) FROM outbox_event`).Scan(&maxOld); err != nil {
		t.Fatal(err)
	}
	var seq int64
	var topic, lastErr *string
	if err := conn.QueryRow(ctx, seedInsert+` RETURNING seq, topic, last_error`, "o-new").Scan(&seq, &topic, &lastErr); err != nil {
		t.Fatalf("seed insert after upgrade: %v", err)
	}
	if seq <= maxOld || topic != nil || lastErr != nil {
		t.Fatalf("new row: seq=%d (old max %d) topic=%v last_error=%v", seq, maxOld, topic, lastErr)
	}
	// Applying again changes nothing.
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	var after int
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event`).Scan(&after)
	if after != 51 {
		t.Fatalf("rows after second apply: %d, want 51", after)
	}
}

// Defect 7: the seed relay updates rows (lease, attempts, published_at), which
// moves them in the heap; numbering seq in physical order then put some events
// of an aggregate out of created_at order. seq must follow (created_at, event_id).
func TestUpgradeNumbersSeqInSeedOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	if _, err := conn.Exec(ctx, seedDDL); err != nil {
		t.Fatal(err)
	}
	// 1,000 rows over 10 aggregates, one created_at each (two share one, where
	// event_id decides), then what the seed relay does to some of them.
	if _, err := conn.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 10), 'OrderConfirmed', '{}',
		       timestamptz '2026-01-01' + (g / 2) * interval '1 millisecond'
		FROM generate_series(1, 1000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE outbox_event SET attempts = 1, lease_token = gen_random_uuid(), lease_until = now()
		WHERE created_at < timestamptz '2026-01-01' + interval '100 milliseconds'`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE outbox_event SET published_at = now(), lease_until = NULL
		WHERE aggregate_id = 'o-3'`); err != nil {
		t.Fatal(err)
	}
	// The test means something only if the heap is out of seed order now.
	var shuffled bool
	if err := conn.QueryRow(ctx, `SELECT array_agg(event_id ORDER BY ctid) <> array_agg(event_id ORDER BY created_at, event_id) FROM outbox_event`).Scan(&shuffled); err != nil || !shuffled {
		t.Fatalf("physical order still equals seed order (%v)", err)
	}
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatalf("apply on seed table: %v", err)
	}
	var inOrder bool
	var n, maxSeq int64
	if err := conn.QueryRow(ctx, `SELECT array_agg(seq ORDER BY created_at, event_id) = array_agg(seq ORDER BY seq), count(*), max(seq) FROM outbox_event`).
		Scan(&inOrder, &n, &maxSeq); err != nil {
		t.Fatal(err)
	}
	if !inOrder || n != 1000 || maxSeq != 1000 {
		t.Fatalf("seq in seed order: %v, rows %d, max seq %d", inOrder, n, maxSeq)
	}
	var seq int64
	// Inserts go on while the rows present are numbered, so they are
	// numbered past what the table could hold then: a gap, as a rolled-back
	// insert leaves.
	if err := conn.QueryRow(ctx, seedInsert+` RETURNING seq`, "o-new").Scan(&seq); err != nil || seq <= 1000 {
		t.Fatalf("next insert: seq %d, %v; want one past 1000", seq, err)
	}
	var identity string
	if err := conn.QueryRow(ctx, `SELECT is_identity || ' ' || identity_generation FROM information_schema.columns
		WHERE table_name = 'outbox_event' AND column_name = 'seq'`).Scan(&identity); err != nil || identity != "YES ALWAYS" {
		t.Fatalf("seq identity: %q, %v", identity, err)
	}
}

func TestConcurrentApplyIsSerialized(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.EmptyDB(t)
	var wg sync.WaitGroup
	var applied atomic.Int32
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(ctx)
			from, to, err := migrations.Migrate(ctx, conn, "outbox", nil)
			if err == nil && from != to {
				applied.Add(1)
				if from != 0 || int(to) != count(t) {
					err = fmt.Errorf("applied from %d to %d", from, to)
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent apply: %v", err)
		}
	}
	// Each reports what it applied itself: one did the work, the others nothing.
	if n := applied.Load(); n != 1 {
		t.Fatalf("%d concurrent migrations report having applied migrations, want 1", n)
	}
	conn := connect(t, dsn)
	if !tables(t, conn, "outbox")["outbox_event"] {
		t.Fatal("outbox.outbox_event missing")
	}
	if tables(t, conn, "public")["outbox_event"] {
		t.Fatal("public.outbox_event created although the schema was outbox")
	}
	v, err := migrations.Version(ctx, conn, "outbox")
	if err != nil || int(v) != count(t) {
		t.Fatalf("version %d, %v", v, err)
	}
}

// outboxtop_inserted, which the relays poll for wake-ups, moves with every
// event inserted, in every commit-order mode (the enforcing trigger draws seq
// from another sequence, the identity still counts), and the insert itself
// sends nothing: no NOTIFY, whose database-wide lock every producer's commit
// would queue on.
func TestInsertedCountsEveryInsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DB(t)
	listener := connect(t, dsn)
	if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{"outboxtop_public"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	writer := connect(t, dsn)
	inserted := func() int64 {
		var n int64
		if err := writer.QueryRow(ctx, `SELECT outboxtop_inserted()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, mode := range []migrations.CommitOrder{migrations.OrderDetect, migrations.OrderEnforce, migrations.OrderOff} {
		if _, _, err := migrations.MigrateWith(ctx, writer, "public", migrations.Options{CommitOrder: mode}); err != nil {
			t.Fatal(err)
		}
		// A change of mode moves the sequence seq comes from (setval), after
		// which its last value is unknown until the next insert draws one.
		if _, err := writer.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), 'order', 'o-0', 'OrderPlaced', '{}')`); err != nil {
			t.Fatal(err)
		}
		before := inserted()
		if _, err := writer.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', 'o-' || g, 'OrderPlaced', '{}' FROM generate_series(1, 100) g`); err != nil {
			t.Fatal(err)
		}
		if after := inserted(); after != before+100 {
			t.Errorf("%s: outboxtop_inserted went from %d to %d over 100 inserts", mode, before, after)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if n, err := listener.WaitForNotification(wctx); err == nil {
		t.Fatalf("an insert sent a notification: %+v", n)
	}
}

// A schema name wire refuses is refused before anything is created.
func TestRejectsBadSchemaName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	for _, bad := range []string{"", "1abc", `a"b`, "a;drop table x", "a b"} {
		if _, err := migrations.Apply(ctx, conn, bad, nil); err == nil || !strings.Contains(err.Error(), "invalid schema name") {
			t.Errorf("schema %q: %v", bad, err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname NOT IN ('public', 'information_schema')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d schemas created (%v)", n, err)
	}
}

// count is the number of embedded migrations; it is also the number of .sql
// files beside the package, so a misnamed file cannot hide from Count.
func count(t *testing.T) int {
	t.Helper()
	n, err := migrations.Count()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.sql")
	if err != nil || len(files) != n {
		t.Fatalf("Count() = %d, %d .sql files (%v)", n, len(files), err)
	}
	return n
}

// A hand-made table whose payload is text would migrate and then break archive
// with a type error; migrate refuses it, naming the column, and changes nothing.
func TestRefusesAnExistingTableWithWrongColumnTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	if _, err := conn.Exec(ctx, strings.Replace(seedDDL, "payload        jsonb", "payload        text", 1)); err != nil {
		t.Fatal(err)
	}
	_, err := migrations.Apply(ctx, conn, "public", nil)
	if err == nil || !strings.Contains(err.Error(), "outbox_event.payload is text, outboxtop needs jsonb") {
		t.Fatalf("migrate over payload text: %v", err)
	}
	if v, err := migrations.Version(ctx, conn, "public"); err != nil || v != 0 {
		t.Fatalf("version %d (%v) after the refusal, want 0", v, err)
	}
}

// A schema migrated by a newer outboxtop is refused, naming both versions.
func TestRefusesASchemaNewerThanTheBinary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.DB(t))
	newer := count(t) + 1
	if _, err := conn.Exec(ctx, `UPDATE outboxtop_schema_version SET version = $1`, newer); err != nil {
		t.Fatal(err)
	}
	_, err := migrations.Apply(ctx, conn, "public", nil)
	want := fmt.Sprintf("is at version %d, this outboxtop knows versions up to %d", newer, count(t))
	if !errors.Is(err, migrations.ErrNewerSchema) || !strings.Contains(err.Error(), want) {
		t.Fatalf("migrate of a newer schema: %v; want %q", err, want)
	}
}
