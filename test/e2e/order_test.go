package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// The writers of these tests take no application lock: 8 connections insert
// events of the same 50 aggregates in random order, one to three aggregates a
// transaction, by INSERT or COPY, holding transactions open while others
// commit. Their commits go one at a time through the test (a mutex), so the
// test knows the commit order exactly, and the Kafka records are read back
// with kcat, which shares no code with the relay's client.
const (
	orderWriters    = 8
	orderAggregates = 50
	orderTxns       = 40 // per writer
)

// orderEvent is one committed event as the writers logged it.
type orderEvent struct {
	id     string
	agg    string
	commit int // the commit's place in the commit order
	pos    int // its place in its transaction
}

// orderLog is the writers' log, shared.
type orderLog struct {
	mu      sync.Mutex // held for every COMMIT (and, detecting, every statement)
	commits int
	events  []orderEvent
	// detecting: the lock each aggregate's trigger holds (the transaction
	// whose try succeeded), and the events it should have marked.
	holder   map[string]int
	held     map[int][]string
	marked   map[string]bool
	deadlock int
}

// With the order enforced, every aggregate's records reach Kafka in commit
// order, whatever the writers do; a transaction that the database ends with a
// deadlock (40P01) is tried again.
func TestCommitOrderEnforcedForEveryWriter(t *testing.T) {
	t.Parallel()
	log, pool, recs := runOrderWriters(t, migrations.OrderEnforce)
	byAgg := kafkaOrder(t, recs)
	commitOrder := logOrder(log)
	for agg, want := range commitOrder {
		if got := byAgg[agg]; !slices.Equal(got, want) {
			t.Errorf("aggregate %s: Kafka order %v, commit order %v", agg, got, want)
		}
	}
	if n := countUnserialized(t, pool); n != 0 {
		t.Errorf("%d rows marked unserialized with the order enforced", n)
	}
	t.Logf("%d events in %d transactions, all in commit order on Kafka; %d deadlocks tried again", len(log.events), log.commits, log.deadlock)
}

// With the order only detected (the default: nothing on the writers' path),
// the relay publishes, among the events it can see, seq order; here it starts
// once every writer has committed, so aggregates whose writers overlapped
// reach Kafka out of commit order. Every one of them is marked unserialized
// (order unknown) by the relay's order check, and only aggregates whose
// writers did overlap are: an event inserted while another open transaction
// had inserted an event of its aggregate.
func TestCommitOrderDetected(t *testing.T) {
	t.Parallel()
	log, pool, recs := runOrderWriters(t, migrations.OrderDetect)
	byAgg := kafkaOrder(t, recs)
	commitOrder := logOrder(log)
	var reordered []string
	for agg, want := range commitOrder {
		if !slices.Equal(byAgg[agg], want) {
			reordered = append(reordered, agg)
		}
	}
	if len(reordered) == 0 {
		t.Fatal("no aggregate was committed out of seq order: the writers did not interleave enough to test anything")
	}
	overlapped := map[string]bool{}
	for _, e := range log.events {
		if log.marked[e.id] {
			overlapped[e.agg] = true
		}
	}
	markedAggs := map[string]bool{}
	rows, err := pool.Query(context.Background(), `SELECT DISTINCT aggregate_id FROM outbox_event WHERE unserialized`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var agg string
		if err := rows.Scan(&agg); err != nil {
			t.Fatal(err)
		}
		markedAggs[agg] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for agg := range markedAggs {
		if !overlapped[agg] {
			t.Errorf("aggregate %s marked unserialized, but no two of its writers overlapped", agg)
		}
	}
	for _, agg := range reordered {
		if !markedAggs[agg] {
			t.Errorf("aggregate %s reached Kafka out of commit order and is not counted", agg)
		}
	}
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	s, err := in.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Order.Mode != "detect" || s.Order.Unserialized != int64(len(markedAggs)) || s.Order.Bound != inspect.Exact {
		t.Errorf("Overview's order = %+v, want detect with %d unserialized aggregates", s.Order, len(markedAggs))
	}
	t.Logf("%d events in %d transactions: %d aggregates reached Kafka out of commit order, %d counted unserialized, %d had overlapping writers",
		len(log.events), log.commits, len(reordered), len(markedAggs), len(overlapped))
}

// Writers that lock their aggregates before inserting (the seed's UPDATE of
// the order row does the same) are never counted, though a relay that starts
// after them meets many of one aggregate's events committed together.
func TestCommitOrderDetectedNoFalseAlarm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	testenv.CommitOrder(t, pool, migrations.OrderDetect)
	if _, err := pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY)
		; INSERT INTO orders SELECT 'o-' || g FROM generate_series(0, 49) g`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range orderWriters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range orderTxns {
				aggs := pickAggregates(rng)
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					sorted := slices.Sorted(slices.Values(aggs))
					if _, err := tx.Exec(ctx, `SELECT 1 FROM orders WHERE id = ANY($1) ORDER BY id FOR UPDATE`, sorted); err != nil {
						return err
					}
					for _, a := range aggs {
						if _, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
							VALUES (gen_random_uuid(), 'order', $1, 'OrderChanged', '{}')`, a); err != nil {
							return err
						}
						time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The relay meets every aggregate's events together, each unpublished
	// event beside its neighbours, and checks each pair.
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	n := count(t, pool, "true")
	startRelay(t, dsn, k)
	testenv.WaitFor(t, 2*time.Minute, "everything published", func() bool { return count(t, pool, "published_at IS NOT NULL") == n })
	if n := countUnserialized(t, pool); n != 0 {
		t.Errorf("%d rows marked unserialized, but every writer locked its aggregates first", n)
	}
}

func countUnserialized(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	return count(t, pool, "unserialized")
}

func pickAggregates(rng *rand.Rand) []string {
	n := 1 + rng.IntN(3)
	var aggs []string
	for len(aggs) < n {
		a := fmt.Sprintf("o-%d", rng.IntN(orderAggregates))
		if !slices.Contains(aggs, a) {
			aggs = append(aggs, a)
		}
	}
	return aggs
}

// runOrderWriters runs the writers against a database in mode, then a relay
// until every event is published, and returns the log and the records kcat read.
func runOrderWriters(t *testing.T, mode migrations.CommitOrder) (*orderLog, *pgxpool.Pool, [][2]string) {
	t.Helper()
	ctx := context.Background()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed (scripts/test installs it): the records are read back with it")
	}
	pool, dsn := testenv.Pool(t)
	testenv.CommitOrder(t, pool, mode)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	log := &orderLog{holder: map[string]int{}, held: map[int][]string{}, marked: map[string]bool{}}
	detecting := mode == migrations.OrderDetect
	var wg sync.WaitGroup
	for w := range orderWriters {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := range orderTxns {
				txn := w*orderTxns + i
				for {
					err := writeOrderTxn(ctx, conn, rng, log, txn, detecting)
					var pgErr *pgconn.PgError
					if errors.As(err, &pgErr) && pgErr.Code == "40P01" && !detecting {
						log.mu.Lock()
						log.deadlock++
						log.mu.Unlock()
						continue // ended by the deadlock detector: nothing was written, write it again
					}
					if err != nil {
						t.Error(err)
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	n := count(t, pool, "true")
	if n != len(log.events) {
		t.Fatalf("%d events in the table, %d committed by the writers", n, len(log.events))
	}
	startRelay(t, dsn, k)
	testenv.WaitFor(t, 2*time.Minute, "everything published", func() bool { return count(t, pool, "published_at IS NOT NULL") == n })
	return log, pool, kcatRead(t, k.Brokers, k.Prefix+"outbox.order", n)
}

// writeOrderTxn writes one transaction of events of one to three aggregates,
// in random order, by INSERT or by COPY, and commits it under the log's mutex.
// Detecting, every statement runs under it too, so the test knows which
// transactions were open at each insert (and nothing waits for a lock then).
func writeOrderTxn(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, log *orderLog, txn int, detecting bool) error {
	aggs := pickAggregates(rng)
	var evs []orderEvent
	for _, a := range aggs {
		for range 1 + rng.IntN(2) {
			evs = append(evs, orderEvent{id: uuid.NewString(), agg: a})
		}
	}
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	for i := range evs {
		evs[i].pos = i
	}
	step := func(f func() error) error {
		if detecting {
			log.mu.Lock()
			defer log.mu.Unlock()
		}
		return f()
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The rows go in by statements of one or several events.
	for start := 0; start < len(evs); {
		end := start + 1 + rng.IntN(len(evs)-start)
		part := evs[start:end]
		useCopy := rng.IntN(3) == 0
		err := step(func() error {
			if useCopy {
				rows := make([][]any, len(part))
				for i, e := range part {
					rows[i] = []any{e.id, "order", e.agg, "OrderChanged", []byte(`{"e":"` + e.id + `"}`)}
				}
				_, err := tx.CopyFrom(ctx, pgx.Identifier{"outbox_event"},
					[]string{"event_id", "aggregate_type", "aggregate_id", "event_type", "payload"}, pgx.CopyFromRows(rows))
				if err != nil {
					return err
				}
			} else {
				var ids, aggs []string
				for _, e := range part {
					ids, aggs = append(ids, e.id), append(aggs, e.agg)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
					SELECT i::uuid, 'order', a, 'OrderChanged', jsonb_build_object('e', i)
					FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(i, a, n) ORDER BY n`, ids, aggs); err != nil {
					return err
				}
			}
			if detecting {
				log.inserted(txn, part)
			}
			return nil
		})
		if err != nil {
			return err
		}
		start = end
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // others insert and commit meanwhile
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	log.commits++
	for _, e := range evs {
		e.commit = log.commits
		log.events = append(log.events, e)
	}
	if detecting {
		for _, a := range log.held[txn] {
			delete(log.holder, a)
		}
		delete(log.held, txn)
	}
	return nil
}

// inserted records, detecting, what the trigger should do with part: a row
// whose aggregate another open transaction holds is marked; the first row of
// an aggregate no one holds takes it. Called under the mutex.
func (l *orderLog) inserted(txn int, part []orderEvent) {
	for _, e := range part {
		h, held := l.holder[e.agg]
		switch {
		case !held:
			l.holder[e.agg] = txn
			l.held[txn] = append(l.held[txn], e.agg)
		case h != txn:
			l.marked[e.id] = true
		}
	}
}

// logOrder is each aggregate's events in commit order (within a transaction,
// in insertion order).
func logOrder(l *orderLog) map[string][]string {
	evs := slices.Clone(l.events)
	slices.SortStableFunc(evs, func(a, b orderEvent) int {
		if a.commit != b.commit {
			return a.commit - b.commit
		}
		return a.pos - b.pos
	})
	out := map[string][]string{}
	for _, e := range evs {
		out[e.agg] = append(out[e.agg], e.id)
	}
	return out
}

// kafkaOrder is each aggregate's events in the order of their first records
// (per partition, by offset: one aggregate's records share a partition).
func kafkaOrder(t *testing.T, recs [][2]string) map[string][]string {
	t.Helper()
	seen := map[string]bool{}
	out := map[string][]string{}
	for _, r := range recs {
		var v struct {
			E string `json:"e"`
		}
		if err := json.Unmarshal([]byte(r[1]), &v); err != nil || v.E == "" {
			t.Fatalf("record %q: not an event of the writers (%v)", r[1], err)
		}
		if seen[v.E] {
			continue // a duplicate (at least once)
		}
		seen[v.E] = true
		out[r[0]] = append(out[r[0]], v.E)
	}
	return out
}

// kcatRead reads topic from the start to its end with kcat: key and value of
// every record, partition by partition in offset order. It fails unless it
// read at least want records.
func kcatRead(t *testing.T, brokers []string, topic string, want int) [][2]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "kcat", "-C", "-b", strings.Join(brokers, ","), "-t", topic,
		"-o", "beginning", "-e", "-q", "-f", "%p\t%k\t%s\n")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat: %v: %s", err, errb.String())
	}
	byPart := map[string][][2]string{}
	var parts []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 {
			t.Fatalf("kcat printed %q", sc.Text())
		}
		if _, ok := byPart[f[0]]; !ok {
			parts = append(parts, f[0])
		}
		byPart[f[0]] = append(byPart[f[0]], [2]string{f[1], f[2]})
	}
	var recs [][2]string
	for _, p := range parts {
		recs = append(recs, byPart[p]...)
	}
	if len(recs) < want {
		t.Fatalf("kcat read %d records of %s, want at least %d: %s", len(recs), topic, want, errb.String())
	}
	return recs
}
