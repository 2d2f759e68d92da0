package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// seedInboxDDL is the seed's inbox, as an application makes it: two columns.
const seedInboxDDL = `
CREATE TABLE consumed_event (
    consumer_name text NOT NULL,
    event_id      uuid NOT NULL,
    PRIMARY KEY (consumer_name, event_id)
);`

// seedDB is an empty database holding exactly the seed's two tables and the
// application's orders table (ids 1 to 1000): events unpublished events and
// consumed inbox rows of consumer billing, the same rows in every database
// (ids and times from their number), so two runs compare row by row.
func seedDB(t *testing.T, events, consumed int) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	dsn := testenv.EmptyDB(t)
	conn := connect(t, dsn)
	for _, stmt := range []string{
		seedDDL,
		seedInboxDDL,
		`CREATE TABLE orders (id integer PRIMARY KEY, status text NOT NULL DEFAULT 'new', updates integer NOT NULL DEFAULT 0)`,
		`INSERT INTO orders (id) SELECT generate_series(1, 1000)`,
		fmt.Sprintf(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
			SELECT md5('event-' || g)::uuid, 'order', 'o-' || (g %% 10007), 'OrderConfirmed', jsonb_build_object('n', g),
			       timestamptz '2026-01-01' + g * interval '1 millisecond', timestamptz '2026-01-01'
			FROM generate_series(1, %d) g`, events),
		fmt.Sprintf(`INSERT INTO consumed_event (consumer_name, event_id)
			SELECT 'billing', md5('event-' || g)::uuid FROM generate_series(1, %d) g`, consumed),
		`ANALYZE outbox_event, consumed_event`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return dsn, conn
}

// consumerRole creates the application's consumer login, billing_svc_<random>
// (roles are the whole cluster's), which records its rows as consumer
// "billing" under the grants the application gave it: SELECT and INSERT on
// the inbox. It is dropped when the test ends; cfg logs in as it.
func consumerRole(t *testing.T, dsn string) (role string, cfg *pgx.ConnConfig) {
	t.Helper()
	ctx := context.Background()
	role = "billing_svc_" + randomSuffix()
	const password = "billing-pw-4kq"
	id := pgx.Identifier{role}.Sanitize()
	conn := connect(t, dsn)
	for _, stmt := range []string{
		`CREATE ROLE ` + id + ` LOGIN PASSWORD '` + password + `'`,
		`GRANT USAGE ON SCHEMA public TO ` + id,
		`GRANT SELECT, INSERT ON consumed_event TO ` + id,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP OWNED BY "+id)
		_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+id)
	})
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password = role, password
	return role, cfg
}

// load is the application at work: producers (BEGIN; UPDATE orders; INSERT
// the seed's five columns; COMMIT) and consumers (BEGIN; INSERT the inbox's
// two columns as consumer billing; read the row back; COMMIT), each on a
// connection of its own, until stopped.
type load struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	errs    []error
	slow    []slowTx       // the transactions that took longer than slowTxTime
	commits []atomic.Int64 // per writer
	longest []atomic.Int64 // per writer: its longest transaction, in ns
	names   []string
}

// slowTx is a writer's transaction that took longer than slowTxTime.
type slowTx struct {
	writer     string
	start, end time.Time
}

const slowTxTime = 400 * time.Millisecond

// stepTimes records when migrate's steps ran, each try from its start
// (OnStart) until the next starts or migrate returns (done), to name the
// steps a writer's wait overlapped. None may hold a writer longer than the
// bound: 001's numbering of the rows present runs in short steps of its own,
// the index builds on the tables the application already had (outbox_event,
// consumed_event) run concurrently after their step, and 025 marks the
// backlog's order unknown with an UPDATE, which inserts do not wait for.
type stepTimes struct {
	mu    sync.Mutex
	steps []slowTx
}

func (s *stepTimes) onStart(_ int32, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.closeLast(now)
	s.steps = append(s.steps, slowTx{writer: name, start: now})
}

func (s *stepTimes) retried() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.steps); n > 0 {
		s.steps[n-1].writer += " (gave up on a lock)"
	}
}

func (s *stepTimes) done() *stepTimes {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLast(time.Now())
	return s
}

func (s *stepTimes) closeLast(now time.Time) {
	if n := len(s.steps); n > 0 && s.steps[n-1].end.IsZero() {
		s.steps[n-1].end = now
	}
}

// during names the steps that ran while tx did.
func (s *stepTimes) during(tx slowTx) string {
	var names []string
	for _, st := range s.steps {
		if tx.start.Before(st.end) && tx.end.After(st.start) || st.end.IsZero() && tx.end.After(st.start) {
			names = append(names, st.writer)
		}
	}
	return strings.Join(names, ", ")
}

func startLoad(t *testing.T, dsn string, consumer *pgx.ConnConfig, producers, consumers int) *load {
	t.Helper()
	ctx := context.Background()
	n := producers + consumers
	l := &load{stop: make(chan struct{}), commits: make([]atomic.Int64, n), longest: make([]atomic.Int64, n)}
	for i := 0; i < n; i++ {
		var conn *pgx.Conn
		var err error
		if i < producers {
			conn, err = pgx.Connect(ctx, dsn)
			l.names = append(l.names, fmt.Sprintf("producer %d", i))
		} else {
			conn, err = pgx.ConnectConfig(ctx, consumer.Copy())
			l.names = append(l.names, fmt.Sprintf("consumer %d", i-producers))
		}
		if err != nil {
			close(l.stop)
			l.wg.Wait()
			t.Fatal(err)
		}
		l.wg.Add(1)
		go l.run(conn, i, i < producers)
	}
	t.Cleanup(l.halt)
	return l
}

func (l *load) run(conn *pgx.Conn, i int, producer bool) {
	defer l.wg.Done()
	ctx := context.Background()
	defer conn.Close(ctx)
	for k := 0; ; k++ {
		select {
		case <-l.stop:
			return
		default:
		}
		start := time.Now()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if producer {
				order := i*100 + k%100 + 1 // each producer its own orders: no waits between them
				if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'confirmed', updates = updates + 1 WHERE id = $1`, order); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
					VALUES (gen_random_uuid(), 'order', $1, 'OrderConfirmed', '{"total": 10}')`, fmt.Sprint(order))
				return err
			}
			var id string
			if err := tx.QueryRow(ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', gen_random_uuid())
				RETURNING event_id::text`).Scan(&id); err != nil {
				return err
			}
			var seen bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM consumed_event WHERE consumer_name = 'billing' AND event_id = $1::uuid)`,
				id).Scan(&seen); err != nil {
				return err
			}
			if !seen {
				return errors.New("the consumer does not see the inbox row it just wrote")
			}
			return nil
		})
		took := time.Since(start)
		if took > slowTxTime {
			l.mu.Lock()
			l.slow = append(l.slow, slowTx{l.names[i], start, start.Add(took)})
			l.mu.Unlock()
		}
		if err != nil {
			l.mu.Lock()
			l.errs = append(l.errs, fmt.Errorf("%s, transaction %d: %w", l.names[i], k, err))
			l.mu.Unlock()
			return
		}
		for {
			if old := l.longest[i].Load(); int64(took) <= old || l.longest[i].CompareAndSwap(old, int64(took)) {
				break
			}
		}
		l.commits[i].Add(1)
	}
}

// counts is how many transactions each writer has committed.
func (l *load) counts() []int64 {
	out := make([]int64, len(l.commits))
	for i := range l.commits {
		out[i] = l.commits[i].Load()
	}
	return out
}

// waitEach waits until every writer has committed more more transactions
// than it had in since, failing when a writer stopped on an error or a
// minute passes.
func (l *load) waitEach(t *testing.T, since []int64, more int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		l.mu.Lock()
		errs := l.errs
		l.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("a writer failed: %v", errs)
		}
		behind := -1
		for i := range l.commits {
			if l.commits[i].Load() < since[i]+more {
				behind = i
				break
			}
		}
		if behind < 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s committed %d transactions in a minute, want %d", l.names[behind], l.commits[behind].Load()-since[behind], more)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// check stops the writers and fails the test if one failed, or waited for
// migrate's locks (waits, from watchWaits) longer than limit. A transaction
// that took longer than limit without such a wait is logged, not failed: on a
// loaded machine (two cores, the rest of the suite beside) a writer can be
// slow for a second without waiting for anything of migrate's.
func (l *load) check(t *testing.T, limit time.Duration, steps *stepTimes, waits []lockWait) {
	t.Helper()
	l.halt()
	for _, err := range l.errs {
		t.Errorf("writer error: %v", err)
	}
	var summary []string
	for i := range l.longest {
		d := time.Duration(l.longest[i].Load())
		summary = append(summary, fmt.Sprintf("%s %d, longest %v", l.names[i], l.commits[i].Load(), d.Round(time.Millisecond)))
	}
	t.Logf("transactions: %s", strings.Join(summary, "; "))
	if steps == nil {
		steps = &stepTimes{}
	}
	var longest time.Duration
	for _, w := range waits {
		took := w.end.Sub(w.start)
		longest = max(longest, took)
		if took > limit {
			t.Errorf("a writer (pid %d, %q) waited %v for migrate's locks, more than %v (migrate ran %s meanwhile)",
				w.pid, w.query, took.Round(time.Millisecond), limit, steps.during(slowTx{start: w.start, end: w.end}))
		}
	}
	t.Logf("%d waits of a writer for migrate's locks seen, the longest %v", len(waits), longest.Round(time.Millisecond))
	for _, s := range l.slow {
		if took := s.end.Sub(s.start); took > limit {
			t.Logf("%s: a transaction took %v, not waiting for migrate's locks (migrate ran %s meanwhile)",
				s.writer, took.Round(time.Millisecond), steps.during(s))
		}
	}
}

// lockWait is a session's wait for a lock that migrate held, or was ahead of
// it in the queue for: from PostgreSQL's own start of the wait (pg_locks'
// waitstart) to the last sample that saw it waiting (sampled every 5 ms). A
// sampler that a loaded machine stalls may see a wait end late, never two
// waits as one: each is its own (pid, waitstart).
type lockWait struct {
	pid        int32
	query      string
	start, end time.Time
}

// watchWaits samples, until the returned function is called, the sessions
// waiting for a lock that the backend pid holds or waits for ahead of them
// (pg_blocking_pids), and returns each wait seen.
func watchWaits(t *testing.T, dsn string, pid uint32) (stop func() []lockWait) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn := connect(t, dsn)
	type key struct {
		pid   int32
		since time.Time
	}
	seen := map[key]*lockWait{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			rows, err := conn.Query(ctx, `SELECT a.pid, a.query, l.waitstart, now() FROM pg_stat_activity a
				JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted AND l.waitstart IS NOT NULL
				WHERE a.wait_event_type = 'Lock' AND $1 = ANY (pg_blocking_pids(a.pid))`, pid)
			if err != nil {
				return
			}
			for rows.Next() {
				var w lockWait
				var now time.Time
				if rows.Scan(&w.pid, &w.query, &w.start, &now) != nil {
					break
				}
				k := key{w.pid, w.start}
				if o := seen[k]; o != nil {
					o.end = now
				} else {
					w.end = now
					seen[k] = &w
				}
			}
			rows.Close()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() []lockWait {
		cancel()
		<-done
		var waits []lockWait
		for _, w := range seen {
			waits = append(waits, *w)
		}
		return waits
	}
}

// asConsumer inserts one more inbox row as role (consumer billing, the two
// columns) and checks that the role reads every billing row the owner does.
func asConsumer(t *testing.T, owner *pgx.Conn, cfg *pgx.ConnConfig) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', gen_random_uuid())`); err != nil {
		t.Fatalf("%s inserting an inbox row of consumer billing: %v", cfg.User, err)
	}
	var mine, all int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM consumed_event WHERE consumer_name = 'billing'`).Scan(&mine); err != nil {
		t.Fatal(err)
	}
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM consumed_event WHERE consumer_name = 'billing'`).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if mine != all || mine == 0 {
		t.Fatalf("%s reads %d of consumer billing's %d inbox rows", cfg.User, mine, all)
	}
}

// TestMigrateAdoptsTheSeedUnderLoad: migrate on a database holding exactly
// the seed's two tables, with 50,000 unpublished events, while the
// application writes: six producers and two consumers, the consumers a login
// (billing_svc) that is not the inbox's owner and records consumer name
// billing. No writer fails; none waits a second for a lock of migrate's, in
// any step (the rows present numbered, every index built); migrate succeeds;
// the inbox gets consumed_at (the rows there the migration's time, the finite
// check validated) and no row-level security, so the consumer keeps
// inserting and reading its rows, also once the grants `outboxtop grants
// --role consumer` prints are applied to it.
func TestMigrateAdoptsTheSeedUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const events, consumed = 50000, 1000
	dsn, owner := seedDB(t, events, consumed)
	role, consumer := consumerRole(t, dsn)
	l := startLoad(t, dsn, consumer, 6, 2)
	l.waitEach(t, l.counts(), 20)

	conn := connect(t, dsn)
	stopWatch := watchWaits(t, dsn, conn.PgConn().PID())
	var before, after time.Time
	if err := owner.QueryRow(ctx, `SELECT now()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	var retries []migrations.LockRetry
	var steps stepTimes
	from, to, err := migrations.MigrateWith(ctx, conn, "public", migrations.Options{
		OnStart:  steps.onStart,
		LockWait: time.Minute,
		OnLockRetry: func(r migrations.LockRetry) {
			steps.retried()
			retries = append(retries, r)
		},
	})
	if err != nil {
		l.halt()
		t.Fatalf("migrate under load: %v", err)
	}
	steps.done()
	if err := owner.QueryRow(ctx, `SELECT now()`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	for _, r := range retries {
		t.Logf("retried: %s", r)
	}
	// The writers go on after it.
	l.waitEach(t, l.counts(), 20)
	l.check(t, time.Second, &steps, stopWatch())

	if from != 0 || int(to) != count(t) {
		t.Fatalf("migrated from %d to %d, want 0 to %d", from, to, count(t))
	}
	var rls bool
	var policies int
	var comment *string
	if err := owner.QueryRow(ctx, `SELECT c.relrowsecurity, (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid),
			col_description(c.oid, (SELECT attnum FROM pg_attribute WHERE attrelid = c.oid AND attname = 'consumed_at')::integer)
		FROM pg_class c WHERE c.oid = 'consumed_event'::regclass`).Scan(&rls, &policies, &comment); err != nil {
		t.Fatal(err)
	}
	if rls || policies != 0 {
		t.Errorf("the adopted inbox got row-level security %v and %d policies", rls, policies)
	}
	if comment == nil || !strings.HasPrefix(*comment, "outboxtop: adopted:") {
		t.Errorf("the adopted inbox's consumed_at is not marked adopted: %v", comment)
	}
	// consumed_at: every row has one; the rows there before read the time
	// of the migration that added it; 016's check is validated by 017.
	var missing, outside int
	var validated bool
	if err := owner.QueryRow(ctx, `SELECT count(*) FILTER (WHERE consumed_at IS NULL),
			count(*) FILTER (WHERE event_id = ANY (SELECT md5('event-' || g)::uuid FROM generate_series(1, $1) g)
			                 AND consumed_at NOT BETWEEN $2 AND $3),
			(SELECT convalidated FROM pg_constraint WHERE conname = 'consumed_event_consumed_at_finite')
		FROM consumed_event`, consumed, before, after).Scan(&missing, &outside, &validated); err != nil {
		t.Fatal(err)
	}
	if missing != 0 || outside != 0 || !validated {
		t.Errorf("consumed_at: %d rows without one, %d old rows not stamped with the migration's time, check validated %v",
			missing, outside, validated)
	}
	var total, numbered int
	if err := owner.QueryRow(ctx, `SELECT count(*), count(seq) FROM outbox_event`).Scan(&total, &numbered); err != nil {
		t.Fatal(err)
	}
	var produced int64
	for i := 0; i < 6; i++ {
		produced += l.commits[i].Load()
	}
	if total != events+int(produced) || numbered != total {
		t.Errorf("outbox_event holds %d rows (%d with a seq), want %d", total, numbered, events+int(produced))
	}

	asConsumer(t, owner, consumer)
	grants, err := migrations.GrantSQL("consumer", "public", role)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, grants); err != nil {
		t.Fatalf("the printed consumer grants on the adopted inbox: %v\n%s", err, grants)
	}
	asConsumer(t, owner, consumer)
}

// TestConsumerGrantsOnACreatedInbox: on the inbox migrate creates, row-level
// security holds: a role granted what `outboxtop grants --role consumer`
// prints writes and reads the inbox named after it, and neither writes nor
// sees another consumer's.
func TestConsumerGrantsOnACreatedInbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DB(t)
	owner := connect(t, dsn)
	role, cfg := consumerRole(t, dsn)
	grants, err := migrations.GrantSQL("consumer", "public", role)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, grants); err != nil {
		t.Fatalf("the printed consumer grants on a created inbox: %v", err)
	}
	if _, err := owner.Exec(ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', gen_random_uuid())`); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ($1, gen_random_uuid())`, role); err != nil {
		t.Fatalf("writing its own inbox: %v", err)
	}
	var pgErr *pgconn.PgError
	if _, err := conn.Exec(ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', gen_random_uuid())`); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("writing consumer billing's inbox under role %s: %v, want 42501", role, err)
	}
	var seen, own int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE consumer_name = $1) FROM consumed_event`, role).Scan(&seen, &own); err != nil {
		t.Fatal(err)
	}
	if seen != 1 || own != 1 {
		t.Errorf("the consumer sees %d inbox rows, %d its own; want only its 1", seen, own)
	}
}

// TestMigrateRetriesBehindAnIdleTransaction: an application session idle in
// transaction after inserting an event holds outbox_event while migrate
// runs, and producers and a consumer keep writing. Migrate's first step gives
// up on its lock after 500 ms, again and again, saying each time which step
// waited on whom; no writer waits a second behind it (nor at all, but for
// the backlog's steps once they run); and migrate completes once the idle
// transaction ends, its event kept and numbered.
func TestMigrateRetriesBehindAnIdleTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, owner := seedDB(t, 5000, 100)
	_, consumer := consumerRole(t, dsn)

	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "orders-app"
	idle, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close(ctx)
	tx, err := idle.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var held string
	if err := tx.QueryRow(ctx, seedInsert+` RETURNING event_id::text`, "o-idle").Scan(&held); err != nil {
		t.Fatal(err)
	}
	idlePID := idle.PgConn().PID()

	l := startLoad(t, dsn, consumer, 3, 1)
	l.waitEach(t, l.counts(), 10)

	conn := connect(t, dsn)
	stopWatch := watchWaits(t, dsn, conn.PgConn().PID())
	retries := make(chan migrations.LockRetry, 1000)
	done := make(chan error, 1)
	var steps stepTimes
	go func() {
		_, _, err := migrations.MigrateWith(ctx, conn, "public", migrations.Options{
			OnStart:  steps.onStart,
			LockWait: time.Minute,
			OnLockRetry: func(r migrations.LockRetry) {
				steps.retried()
				select {
				case retries <- r:
				default:
				}
			},
		})
		done <- err
	}()
	next := func() migrations.LockRetry {
		t.Helper()
		select {
		case r := <-retries:
			return r
		case err := <-done:
			t.Fatalf("migrate ended (%v) while the idle transaction held outbox_event", err)
		case <-time.After(30 * time.Second):
			t.Fatal("migrate did not retry within 30 s")
		}
		return migrations.LockRetry{}
	}
	first := next()
	t.Logf("retry: %s", first)
	if first.Step != "001_outbox_event.sql: seq added" {
		t.Errorf("the first retry is of %s, want 001_outbox_event.sql: seq added", first.Step)
	}
	for _, want := range []string{fmt.Sprintf("pid %d ", idlePID), "application orders-app", "idle in transaction since",
		"RowExclusiveLock on outbox_event"} {
		if !strings.Contains(first.Holders, want) {
			t.Errorf("the retry names %q, not %q", first.Holders, want)
		}
	}
	if line := first.String(); !strings.HasPrefix(line, "001_outbox_event.sql: seq added gave up after 500ms waiting for a lock (held by pid ") ||
		!strings.Contains(line, "and was rolled back; trying it again in ") {
		t.Errorf("the retry's line: %q", line)
	}
	// It keeps trying, pausing longer each time, and the writers go on.
	second := next()
	if second.Step != first.Step || second.Pause <= first.Pause || second.Waited <= first.Waited {
		t.Errorf("the second retry: %+v after %+v", second, first)
	}
	l.waitEach(t, l.counts(), 10)
	next()

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("migrate after the idle transaction ended: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("migrate did not finish within a minute of the idle transaction's end")
	}
	l.waitEach(t, l.counts(), 10)
	l.check(t, time.Second, steps.done(), stopWatch())
	var seq *int64
	if err := owner.QueryRow(ctx, `SELECT seq FROM outbox_event WHERE event_id = $1::uuid`, held).Scan(&seq); err != nil || seq == nil {
		t.Fatalf("the idle transaction's event: seq %v, %v", seq, err)
	}
	if v, err := migrations.Version(ctx, owner, "public"); err != nil || int(v) != count(t) {
		t.Fatalf("version %d (%v), want %d", v, err, count(t))
	}
}

// TestMigrateGivesUpAfterLockWait: a step that keeps giving up on its locks
// for --lock-wait fails with ErrStepLocked, naming the step and the session,
// and leaves the steps before it applied and itself not.
func TestMigrateGivesUpAfterLockWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, owner := seedDB(t, 100, 10)
	holder := connect(t, dsn)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The inbox, not the outbox: 001 completes, 002 waits.
	if _, err := tx.Exec(ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', gen_random_uuid())`); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	var retries int
	_, _, err = migrations.MigrateWith(ctx, conn, "public", migrations.Options{
		LockWait:    2 * time.Second,
		OnLockRetry: func(migrations.LockRetry) { retries++ },
	})
	if !errors.Is(err, migrations.ErrStepLocked) || !strings.Contains(err.Error(), "002_consumed_event.sql kept giving up on a lock") ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d ", holder.PgConn().PID())) {
		t.Fatalf("migrate behind a held inbox: %v", err)
	}
	if retries == 0 {
		t.Error("no retry before giving up")
	}
	if v, err := migrations.Version(ctx, owner, "public"); err != nil || v != 1 {
		t.Fatalf("version %d (%v), want 1: 001 applied, 002 not", v, err)
	}
	var hasConsumedAt bool
	if err := owner.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'consumed_event'::regclass
		AND attname = 'consumed_at' AND NOT attisdropped)`).Scan(&hasConsumedAt); err != nil || hasConsumedAt {
		t.Fatalf("consumed_at added by the step that gave up: %v (%v)", hasConsumedAt, err)
	}
}

// adoptState is schemaState plus the comments on the schema's relations,
// columns and triggers (the adopted inbox's mark among them).
func adoptState(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	out := schemaState(t, conn, "public")
	rows, err := conn.Query(context.Background(), `
		SELECT 'comment ' || c.relname || coalesce('.' || a.attname, '') || ' ' || d.description
		FROM pg_description d JOIN pg_class c ON d.classoid = 'pg_class'::regclass AND d.objoid = c.oid
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid AND d.objsubid > 0
		WHERE c.relnamespace = 'public'::regnamespace
		UNION ALL
		SELECT 'comment trigger ' || g.tgname || ' ' || d.description
		FROM pg_description d JOIN pg_trigger g ON d.classoid = 'pg_trigger'::regclass AND d.objoid = g.oid
		JOIN pg_class c ON c.oid = g.tgrelid WHERE c.relnamespace = 'public'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	comments, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return append(out, comments...)
}

// rowState is what the seed's rows are: each event with its seq (once there
// is one), each inbox row, as counts and digests.
func rowState(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), `SELECT
		(SELECT count(*) || ' events ' || md5(string_agg(event_id || ' ' || coalesce(to_jsonb(e) ->> 'seq', '-') || ' ' ||
			aggregate_id || ' ' || payload::text || ' ' || created_at::text, ',' ORDER BY event_id)) FROM outbox_event e) || ', ' ||
		(SELECT count(*) || ' inbox rows ' || md5(string_agg(consumer_name || ' ' || event_id, ',' ORDER BY consumer_name, event_id))
		 FROM consumed_event)`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMigrateInterruptedAtEachStepEndsTheSame: migrate on the seed's two
// tables is interrupted in each of its steps, every numbered file and the
// function files, at the latest moment there is: the file's statements have
// all run and its transaction waits to record the version (a session holds
// the version's row), or, for the function files, the transaction has
// applied some and waits for a table lock. Every other step the context is
// cancelled, otherwise the backend is terminated from another session. The
// step changed nothing (the schema is what the steps before it left, the
// function files left no function), and a second migrate then ends with
// exactly the schema (columns, indexes, constraints, triggers, policies,
// grants, comments, per table) and rows of an uninterrupted one.
func TestMigrateInterruptedAtEachStepEndsTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const events, consumed = 2000, 300
	_, ref := seedDB(t, events, consumed)
	seeded := rowState(t, ref)
	if _, _, err := migrations.MigrateWith(ctx, ref, "public", migrations.Options{}); err != nil {
		t.Fatal(err)
	}
	wantSchema, wantRows := adoptState(t, ref), rowState(t, ref)
	if !strings.HasPrefix(wantRows, fmt.Sprintf("%d events ", events)) || seeded[strings.Index(seeded, ", "):] != wantRows[strings.Index(wantRows, ", "):] {
		t.Fatalf("an uninterrupted migrate changed the rows: %s, then %s", seeded, wantRows)
	}

	files, err := filepath.Glob("[0-9]*.sql")
	if err != nil || len(files) != count(t) {
		t.Fatalf("numbered files %v (%v)", files, err)
	}
	steps := append(files, "functions")
	for i, step := range steps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			dsn, owner := seedDB(t, events, consumed)
			blocker := connect(t, dsn)
			conn := connect(t, dsn)
			pid := conn.PgConn().PID()
			mctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var blockErr error
			var btx pgx.Tx
			hold := func(sql string) {
				if btx, blockErr = blocker.Begin(ctx); blockErr == nil {
					_, blockErr = btx.Exec(ctx, sql)
				}
			}
			// A numbered step: when it starts, the steps before it have
			// committed and the version's row is free; the test reads the
			// schema then, and holds the row, where the step's transaction
			// will wait once its statements have run.
			started, read := make(chan struct{}), make(chan struct{})
			onStart := func(version int32, name string) {
				if name == step {
					hold(`SELECT version FROM outboxtop_schema_version FOR UPDATE`)
					close(started)
					<-read
				}
			}
			wait := `EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'transactionid'
				AND query ILIKE 'update %outboxtop_schema_version%')`
			if step == "functions" {
				// When the last numbered step starts, outbox_attempt (022) is
				// there and that step leaves it alone; the function files'
				// trigger on it waits for the lock held here, the files before
				// it applied in the same transaction.
				close(started)
				onStart = func(version int32, name string) {
					if name == files[len(files)-1] {
						hold(`LOCK TABLE outbox_attempt IN ROW EXCLUSIVE MODE`)
					}
				}
				wait = `EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted AND relation = to_regclass('outbox_attempt'))`
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := migrations.MigrateWith(mctx, conn, "public", migrations.Options{OnStart: onStart, LockWait: time.Minute})
				done <- err
			}()
			ended := false
			defer func() {
				if !ended { // failed before: stop migrate before its connection is closed
					cancel()
					<-done
				}
			}()
			var committed []string
			select {
			case <-started:
				if step != "functions" {
					committed = adoptState(t, owner)
				}
				close(read)
			case err := <-done:
				ended = true
				t.Fatalf("migrate ended (%v) before it started %s", err, step)
			}
			deadline := time.Now().Add(time.Minute)
			for {
				var waiting bool
				if err := owner.QueryRow(ctx, `SELECT `+wait, pid).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting {
					break
				}
				select {
				case err := <-done:
					ended = true
					t.Fatalf("migrate ended (%v) before it waited in %s (blocker: %v)", err, step, blockErr)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("migrate did not wait in %s within a minute (blocker: %v)", step, blockErr)
				}
				time.Sleep(2 * time.Millisecond)
			}
			how := "context cancelled"
			if i%2 == 0 {
				cancel()
			} else {
				how = "backend terminated"
				var ok bool
				if err := owner.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
					t.Fatalf("terminating migrate's backend: %v, %v", ok, err)
				}
			}
			ended = true
			if err := <-done; err == nil {
				t.Fatalf("migrate interrupted in %s (%s) reports success", step, how)
			}
			if btx != nil {
				_ = btx.Rollback(ctx)
			}
			// The step changed nothing: the version is the steps' before it,
			// and so is everything else.
			if v, err := migrations.Version(ctx, owner, "public"); err != nil || int(v) != i { // the functions come after the last file
				t.Fatalf("interrupted in %s: version %d (%v), want %d", step, v, err, i)
			}
			if step == "functions" {
				var functions, triggers int
				if err := owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace),
					(SELECT count(*) FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
					 WHERE c.relnamespace = 'public'::regnamespace AND NOT g.tgisinternal)`).Scan(&functions, &triggers); err != nil {
					t.Fatal(err)
				}
				if functions != 0 || triggers != 0 {
					t.Fatalf("interrupted in the function files (%s): %d functions and %d triggers left behind", how, functions, triggers)
				}
			} else if d := diffStates(committed, adoptState(t, owner)); d != "" {
				t.Fatalf("interrupted in %s (%s), the step left changes behind:\n%s", step, how, d)
			}
			again := connect(t, dsn)
			if _, to, err := migrations.MigrateWith(ctx, again, "public", migrations.Options{LockWait: time.Minute}); err != nil || int(to) != count(t) {
				t.Fatalf("migrate after an interruption in %s (%s): version %d, %v", step, how, to, err)
			}
			if d := diffStates(wantSchema, adoptState(t, owner)); d != "" {
				t.Errorf("interrupted in %s (%s), then migrated: the schema differs from an uninterrupted run's (- uninterrupted, + this):\n%s", step, how, d)
			}
			if got := rowState(t, owner); got != wantRows {
				t.Errorf("interrupted in %s (%s), then migrated: rows %s, want %s", step, how, got, wantRows)
			}
		})
	}
}

// TestEveryStepRunsInATransaction: what makes a step complete or change
// nothing. tern runs a file in a transaction unless the file asks it not to,
// and a SET LOCAL (the lock timeout) outside one would be a warning and no
// bound at all.
func TestEveryStepRunsInATransaction(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("[0-9]*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(body), "tern: disable-tx") {
			t.Errorf("%s runs outside a transaction", f)
		}
	}
}
