package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestHeadlessDrainPublishesSeedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DB(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const n = 20_000
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 700), 'OrderPlaced', jsonb_build_object('n', g)
		FROM generate_series(1, $1) g`, n); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	done := make(chan result, 1)
	go func() {
		done <- run(t, nil, "--headless", "--drain", "--dsn", dsn, "--brokers", strings.Join(k.Brokers, ","),
			"--topic-template", k.Prefix+"outbox.{aggregate_type}", "--log-level", "warn",
			"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port), "--shutdown-timeout", "5s")
	}()
	// While it runs, the health endpoints answer.
	deadline := time.Now().Add(30 * time.Second)
	var metrics string
	for time.Now().Before(deadline) && !strings.Contains(metrics, "outboxtop_relay_published_total") {
		metrics = get(t, port, "/metrics")
		time.Sleep(20 * time.Millisecond)
	}
	r := <-done
	if r.code != ExitOK {
		t.Fatalf("headless drain: exit %d, stderr %q", r.code, r.err)
	}
	for _, want := range []string{"outboxtop_relay_published_total", "outboxtop_backlog_events{state=\"ready\"}", "outboxtop_relay_broker_reachable"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var published int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL AND kafka_offset IS NOT NULL`).Scan(&published); err != nil {
		t.Fatal(err)
	}
	if published != n {
		t.Fatalf("published %d, want %d; stderr:\n%s", published, n, r.err)
	}
	recs := k.Consume(t, n, time.Minute, k.Prefix+"outbox.order")
	ids := map[string]bool{}
	for _, rec := range recs {
		for _, h := range rec.Headers {
			if h.Key == "event_id" {
				ids[string(h.Value)] = true
			}
		}
	}
	var missing int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE NOT (event_id::text = ANY($1))`, keys(ids)).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if missing != 0 || len(ids) != n {
		t.Fatalf("%d events missing from Kafka (%d distinct read)", missing, len(ids))
	}
}

func TestHeadlessRefusesUnmigratedSchemaAndBadFlags(t *testing.T) {
	t.Parallel()
	dsn := testenv.EmptyDB(t)
	r := run(t, nil, "--headless", "--dsn", dsn, "--brokers", "127.0.0.1:9")
	if r.code != ExitFailure || !strings.Contains(r.err, "outboxtop migrate") {
		t.Fatalf("unmigrated: exit %d, %q", r.code, r.err)
	}
	for _, args := range [][]string{
		{"--headless", "--dsn", dsn}, // no brokers
		{"--headless", "--dsn", dsn, "--brokers", "k:9092", "--ordering", "sideways"},    // bad enum
		{"--headless", "--dsn", dsn, "--brokers", "k:9092", "--topic-template", "a/{x}"}, // bad template
		{"--headless", "--dsn", dsn, "--brokers", "k:9092", "--log-format", "xml"},
		{"--drain", "--dsn", dsn},
	} {
		if r := run(t, nil, args...); r.code != ExitUsage || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.err)
		}
	}
}

func get(t *testing.T, port int, path string) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestHeadlessArchivesPublishedEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, dsn := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.order")
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'OrderPlaced', '{}' FROM generate_series(1, 50) g`); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--headless", "--dsn", dsn, "--brokers", strings.Join(k.Brokers, ","),
			"--topic-template", k.Prefix + "outbox.{aggregate_type}", "--log-level", "warn",
			"--archive-after", "1ms", "--archive-retention", "1h", "--retention-interval", "1s"},
			IO{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(string) string { return "" }})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var archived, left int
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox_event_archive WHERE published_at IS NOT NULL),
			(SELECT count(*) FROM outbox_event)`).Scan(&archived, &left); err != nil {
			t.Fatal(err)
		}
		if archived == 50 && left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("archived %d, %d left in the outbox", archived, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
