package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// threeOutboxes is the fleet the tests watch: "orders" healthy (one event ready
// a moment ago, one published), "billing" in a poison storm (50 failed events,
// each blocking an aggregate with one more event behind it), "search"
// unreachable (nothing listens on its port).
func threeOutboxes(t *testing.T) (*File, map[string]*pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	orders, ordersDSN := testenv.Pool(t)
	billing, billingDSN := testenv.Pool(t)
	for _, q := range []struct {
		pool *pgxpool.Pool
		sql  string
	}{
		{orders, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), 'order', '1', 'OrderPlaced', '{}')`},
		{orders, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at)
			VALUES (gen_random_uuid(), 'order', '2', 'OrderPlaced', '{}', now())`},
		{billing, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, attempts, failed_at, last_error)
			SELECT gen_random_uuid(), 'invoice', g::text, 'InvoiceIssued', '{}', now() - interval '20 minutes', 5, now(), 'MESSAGE_TOO_LARGE'
			FROM generate_series(1, 50) g`},
		{billing, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
			SELECT gen_random_uuid(), 'invoice', g::text, 'InvoicePaid', '{}', now() - interval '10 minutes'
			FROM generate_series(1, 50) g`},
	} {
		if _, err := q.pool.Exec(ctx, q.sql); err != nil {
			t.Fatal(err)
		}
	}
	text := `timeout = "2s"
[[outbox]]
name = "orders"
dsn_env = "ORDERS_DSN"
labels = { team = "payments" }
[[outbox]]
name = "billing"
dsn_env = "BILLING_DSN"
labels = { team = "payments", tier = "1" }
[[outbox]]
name = "search"
dsn = "postgres://outboxtop@127.0.0.1:1/search"
labels = { team = "discovery" }
`
	f, err := Parse(filepath.Join(t.TempDir(), "fleet.toml"), text, env("ORDERS_DSN", ordersDSN, "BILLING_DSN", billingDSN))
	if err != nil {
		t.Fatal(err)
	}
	return f, map[string]*pgxpool.Pool{"orders": orders, "billing": billing}
}

func TestPollRowsWorstFirst(t *testing.T) {
	t.Parallel()
	f, _ := threeOutboxes(t)
	p, err := NewPoller(f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rows := p.Poll(context.Background())
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != "search billing orders" {
		t.Fatalf("order %v, want unreachable, then the poison storm, then the healthy one", names)
	}
	search, billing, orders := rows[0], rows[1], rows[2]
	if search.Reachable || search.Level != Unknown || !strings.Contains(search.Reason, "connect") || search.Condition() != search.Reason {
		t.Errorf("search %+v", search)
	}
	if !billing.Reachable || billing.Level != Warning || billing.Failed != 50 || billing.Blocked != 50 || billing.Publishable != 0 ||
		billing.Pending != 50 || billing.Crossed[0] != "failed 50 > 0" || billing.Condition() != "failed 50 > 0" {
		t.Errorf("billing %+v", billing)
	}
	if !orders.Reachable || orders.Level != OK || orders.Publishable != 1 || orders.Failed != 0 || orders.Condition() != "ok" ||
		orders.RateIn != nil || orders.Labels["team"] != "payments" {
		t.Errorf("orders %+v", orders)
	}
	// A second poll has a rate of events added.
	for _, r := range p.Poll(context.Background()) {
		if r.Reachable && r.RateIn == nil {
			t.Errorf("%s: no rate in after two polls", r.Name)
		}
	}
	b, err := json.Marshal(rows[1])
	if err != nil || !strings.Contains(string(b), `"level":"WARNING"`) || !strings.Contains(string(b), `"failed":50`) {
		t.Errorf("json %s (%v)", b, err)
	}
}

// A database where a session holds the outbox table locked (and sleeps) costs
// its own row a timeout; the others are read in the same poll.
func TestPollAHangingOutboxDoesNotHoldUpTheOthers(t *testing.T) {
	t.Parallel()
	f, pools := threeOutboxes(t)
	for k := range f.Outboxes {
		f.Outboxes[k].Timeout = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder, err := pools["orders"].Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	defer func() {
		cancel()
		<-held // the connection is the holder's until its statement returns
		holder.Release()
	}()
	go func() {
		defer close(held)
		_, _ = holder.Exec(ctx, `BEGIN; LOCK TABLE outbox_event IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT`)
	}()
	testenv.WaitFor(t, 10*time.Second, "the lock to be held", func() bool {
		var n int
		err := pools["orders"].QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = 'outbox_event' AND l.mode = 'AccessExclusiveLock' AND l.granted`).Scan(&n)
		return err == nil && n > 0
	})
	p, err := NewPoller(f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rows := p.Poll(ctx)
	select {
	case <-held:
		t.Fatal("the lock holder ended before the poll returned: the poll waited for it")
	default:
	}
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Name] = r
	}
	if o := got["orders"]; o.Reachable || o.Level != Unknown || !(strings.Contains(o.Reason, "lock") || strings.Contains(o.Reason, "no answer")) {
		t.Errorf("orders (locked) %+v", o)
	}
	if b := got["billing"]; !b.Reachable || b.Failed != 50 {
		t.Errorf("billing read beside the locked one: %+v", b)
	}
	if rows[0].Name != "orders" && rows[0].Name != "search" {
		t.Errorf("order %v", rows)
	}
}

// Run polls on each outbox's schedule and tells the watcher.
func TestRunPollsUntilStopped(t *testing.T) {
	t.Parallel()
	f, _ := threeOutboxes(t)
	for k := range f.Outboxes {
		f.Outboxes[k].PollInterval = 50 * time.Millisecond
	}
	p, err := NewPoller(f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if rows := p.Rows(); len(rows) != 3 || rows[0].Polled || rows[0].Condition() != "polling…" {
		t.Fatalf("before polling: %+v", rows)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	select {
	case <-p.Updated():
	case <-time.After(20 * time.Second):
		t.Fatal("no poll reported")
	}
	testenv.WaitFor(t, 20*time.Second, "every outbox polled twice", func() bool {
		for _, r := range p.Rows() {
			if !r.Polled || (r.Reachable && r.RateIn == nil) {
				return false
			}
		}
		return true
	})
	cancel()
	<-done
}

func TestOpenGivesAConsolePoolOfItsOwn(t *testing.T) {
	t.Parallel()
	f, _ := threeOutboxes(t)
	p, err := NewPoller(f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pool, o, err := p.Open(context.Background(), "billing", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM public.outbox_event WHERE failed_at IS NOT NULL`).Scan(&n); err != nil || n != 50 || o.Name != "billing" {
		t.Fatalf("billing pool: %d, %v, %+v", n, err, o)
	}
	// A console's actions wait for a frozen claim to be ended, as the CLI's do;
	// the poller's own pools give up within a poll.
	var lt string
	if err := pool.QueryRow(context.Background(), `SHOW lock_timeout`).Scan(&lt); err != nil || lt != "15s" {
		t.Errorf("console pool lock_timeout %q (%v), want 15s (inspect.ActionLockTimeout)", lt, err)
	}
	// Its sessions search only the built-ins, as every session outboxtop opens.
	var path string
	if err := pool.QueryRow(context.Background(), `SHOW search_path`).Scan(&path); err != nil || path != pgsql.SearchPath {
		t.Errorf("console pool search_path %q (%v), want %q", path, err, pgsql.SearchPath)
	}
	if _, _, err := p.Open(context.Background(), "search", 4); err == nil || !strings.Contains(err.Error(), `outbox "search"`) {
		t.Errorf("unreachable: %v", err)
	}
	if _, _, err := p.Open(context.Background(), "nope", 4); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no outbox %q", "nope")) {
		t.Errorf("unknown: %v", err)
	}
}
