// Package e2e runs the outboxtop binary as separate processes against a real
// PostgreSQL and Kafka (kfake, or the real broker in OUTBOXTOP_TEST_KAFKA_BROKERS):
// crashes, restarts, several relays at once, signals.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "outboxtop-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "outboxtop")
	build := exec.Command("go", "build", "-race", "-o", binary, "github.com/outboxtop/outboxtop")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building outboxtop:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	testenv.Main(m, func() { os.RemoveAll(dir) })
}

// relays numbers the relay processes a run starts.
var relays atomic.Int64

type relayProc struct {
	app    string // its database sessions' application_name
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	err    error // valid once exited is closed
}

// wait waits for the process to exit, at most timeout, and reports its error.
func (p *relayProc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("relay did not exit within %v; log:\n%s", timeout, p.logText())
		return nil
	}
}

func startRelay(t *testing.T, dsn string, k *testenv.Kafka, extra ...string) *relayProc {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "relay-*.log")
	if err != nil {
		t.Fatal(err)
	}
	// Its own application_name: the test can see its database sessions.
	app := fmt.Sprintf("e2e-relay-%d", relays.Add(1))
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	dsn += sep + "application_name=" + app
	args := append([]string{"--headless", "--dsn", dsn, "--brokers", strings.Join(k.Brokers, ","),
		"--topic-template", k.Prefix + "outbox.{aggregate_type}", "--log-format", "json"}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &relayProc{cmd: cmd, log: logf, exited: make(chan struct{}), app: app}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

func (p *relayProc) logText() string {
	b, _ := os.ReadFile(p.log.Name())
	return string(b)
}

func count(t *testing.T, pool *pgxpool.Pool, where string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox_event WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Three relay processes share the backlog; one is SIGKILLed mid-batch and a new
// one started. Nothing is lost, duplicates come only from the killed process's
// batches, first deliveries keep per-aggregate order, and SIGTERM ends each
// process with exit 0.
func TestKilledRelayLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	const batch, inFlight = 500, 4
	insert := func(k int) {
		if _, err := pool.Exec(context.WithoutCancel(ctx), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', 'o-' || (g % 3000), 'OrderPlaced', jsonb_build_object('n', g)
			FROM generate_series(1, $1) g ORDER BY g`, k); err != nil {
			t.Error(err)
		}
	}
	insert(30_000)
	flags := []string{"--batch-size", fmt.Sprint(batch), "--in-flight", fmt.Sprint(inFlight),
		"--lease", "6s", "--publish-timeout", "3s", "--shutdown-timeout", "10s"}
	procs := []*relayProc{startRelay(t, dsn, k, append(flags, "--log-level", "debug")...), startRelay(t, dsn, k, flags...), startRelay(t, dsn, k, flags...)}

	// Keep the order service writing until the kill, so there is always work to hold.
	stopWriting := make(chan struct{})
	writerDone := make(chan struct{})
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopWriting) }); <-writerDone }
	t.Cleanup(stop)
	go func() {
		defer close(writerDone)
		for {
			select {
			case <-stopWriting:
				return
			case <-time.After(50 * time.Millisecond):
				insert(50) // about 1,000 events/s, well below what the relays drain
			}
		}
	}()
	testenv.WaitFor(t, time.Minute, "relaying under way", func() bool { return count(t, pool, "published_at IS NOT NULL") >= 1_000 })
	orphans := killMidBatch(t, pool, procs[0])
	stop()
	n := count(t, pool, "true")
	procs = append(procs[1:], startRelay(t, dsn, k, flags...))

	testenv.WaitFor(t, 2*time.Minute, "everything published", func() bool { return count(t, pool, "published_at IS NOT NULL") == n })
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(t, 20*time.Second); err != nil {
			t.Fatalf("relay exited with %v after SIGTERM; log:\n%s", err, p.logText())
		}
	}

	recs := k.Consume(t, n, time.Minute, k.Prefix+"outbox.order")
	copies := firstDeliveries(t, pool, recs)
	if len(copies) != n {
		t.Fatalf("lost events: %d distinct delivered of %d", len(copies), n)
	}
	// Only events of the killed process's batches may have been published twice.
	reclaimed := count(t, pool, "attempts > 1")
	dups := len(recs) - n
	if dups > orphans || reclaimed < orphans {
		t.Fatalf("%d duplicates, %d events claimed twice, %d leased by the killed relay: duplicates must come only from its batches", dups, reclaimed, orphans)
	}
	t.Logf("delivered %d records for %d events: killed relay held %d events, %d duplicates", len(recs), n, orphans, dups)
}

// killMidBatch SIGKILLs p while it holds leased events, and returns how many. It
// stops p, reads the lease tokens of the batches p claimed from its debug log, and
// kills it when one of them still holds events; otherwise it lets p run a little
// and tries again.
func killMidBatch(t *testing.T, pool *pgxpool.Pool, p *relayProc) int {
	t.Helper()
	ctx := context.Background()
	tokenRE := regexp.MustCompile(`"msg":"claimed batch","lease_token":"([0-9a-f-]{36})"`)
	for try := 0; try < 200; try++ {
		select {
		case <-p.exited:
			t.Fatalf("relay exited before it could be killed (%v); log:\n%s", p.err, p.logText())
		default:
		}
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		var tokens []string
		for _, m := range tokenRE.FindAllStringSubmatch(p.logText(), -1) {
			tokens = append(tokens, m[1])
		}
		var held int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_event
			WHERE published_at IS NULL AND lease_until > now() AND lease_token::text = ANY($1)`, tokens).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held > 0 {
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = p.wait(t, 10*time.Second)
			// A statement the relay sent just before it stopped (a mark) still runs
			// and commits in its server session: count again once those sessions
			// are gone.
			testenv.WaitFor(t, 30*time.Second, "the killed relay's database sessions to end", func() bool {
				var n int
				err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, p.app).Scan(&n)
				return err == nil && n == 0
			})
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_event
				WHERE published_at IS NULL AND lease_until > now() AND lease_token::text = ANY($1)`, tokens).Scan(&held); err != nil {
				t.Fatal(err)
			}
			return held
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("never caught the relay holding a batch; log:\n%s", p.logText())
	return 0
}

// firstDeliveries checks recs against the outbox: it fails the test when a first
// delivery of an aggregate's event comes after a later one (seq order), and
// returns how many times each event id was delivered.
func firstDeliveries(t *testing.T, pool *pgxpool.Pool, recs []*kgo.Record) map[string]int {
	t.Helper()
	seqOf, aggOf := map[string]int64{}, map[string]string{}
	rows, err := pool.Query(context.Background(), `SELECT event_id::text, seq, aggregate_id FROM outbox_event`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, agg string
		var seq int64
		if err := rows.Scan(&id, &seq, &agg); err != nil {
			t.Fatal(err)
		}
		seqOf[id], aggOf[id] = seq, agg
	}
	copies := map[string]int{}
	last := map[string]int64{}
	for _, r := range recs { // per partition, in offset order
		var id string
		for _, h := range r.Headers {
			if h.Key == "event_id" {
				id = string(h.Value)
			}
		}
		copies[id]++
		if copies[id] > 1 {
			continue
		}
		agg := aggOf[id]
		if prev, ok := last[agg]; ok && seqOf[id] < prev {
			t.Fatalf("aggregate %s: seq %d first delivered after %d", agg, seqOf[id], prev)
		}
		last[agg] = seqOf[id]
	}
	return copies
}
