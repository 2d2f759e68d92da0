package cmd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// The same through both names of the relay: the relay command and --headless,
// which deployed units keep.
func TestHeadlessDrainPublishesSeedRows(t *testing.T) {
	t.Parallel()
	for _, form := range [][]string{{"--headless"}, {"relay"}} {
		t.Run(form[0], func(t *testing.T) {
			t.Parallel()
			drainPublishesSeedRows(t, form)
		})
	}
}

func drainPublishesSeedRows(t *testing.T, form []string) {
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
	// A drain ends on its own: what it serves on /metrics while it runs is
	// TestDeployKitNamesOnlyExportedMetrics's to check.
	r := run(t, nil, append(form, "--drain", "--dsn", dsn, "--brokers", strings.Join(k.Brokers, ","),
		"--topic-template", k.Prefix+"outbox.{aggregate_type}", "--log-level", "warn",
		"--metrics-addr", "127.0.0.1:0", "--shutdown-timeout", "5s")...)
	if r.code != ExitOK {
		t.Fatalf("headless drain: exit %d, stderr %q", r.code, r.err)
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

// get fetches path from the metrics server at addr; "" when it does not answer.
func get(t *testing.T, addr, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// logBuffer is a command's stderr that a test reads while the command writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var metricsAddrLine = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// metricsAddr waits for the log line that says where --metrics-addr 127.0.0.1:0
// was bound: the port is the kernel's choice, never guessed free beforehand.
func metricsAddr(t *testing.T, log *logBuffer) string {
	t.Helper()
	var addr string
	testenv.WaitFor(t, 30*time.Second, "the metrics server's address in the log", func() bool {
		if m := metricsAddrLine.FindStringSubmatch(log.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return addr
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
	testenv.WaitFor(t, 30*time.Second, "50 events archived, none left in the outbox", func() bool {
		var archived, left int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox_event_archive WHERE published_at IS NOT NULL),
			(SELECT count(*) FROM outbox_event)`).Scan(&archived, &left)
		return err == nil && archived == 50 && left == 0
	})
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
