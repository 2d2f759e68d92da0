package e2e

import (
	"context"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// Of two relay processes, one frozen (SIGSTOP) inside its claim transaction
// holds only the rows of the aggregates it was claiming: the other keeps
// publishing the rest while it is stopped, the server ends the frozen transaction within twice
// --lock-timeout, and once the process runs again nothing is lost and first
// deliveries keep per-aggregate order.
func TestRelayFrozenInItsClaimStallsNoOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	const lockTimeout = time.Second
	flags := []string{"--batch-size", "200", "--lock-timeout", lockTimeout.String(), "--lease", "30s"}
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 2000), 'OrderPlaced', jsonb_build_object('n', g)
		FROM generate_series(1, 60000) g ORDER BY g`); err != nil {
		t.Fatal(err)
	}
	frozen := startRelay(t, dsn, k, flags...)
	healthy := startRelay(t, dsn, k, flags...)
	testenv.WaitFor(t, time.Minute, "relaying under way", func() bool { return count(t, pool, "published_at IS NOT NULL") >= 2_000 })

	pid, state := freezeInClaim(t, pool, frozen)
	stoppedAt := time.Now()
	t.Logf("frozen in its claim: backend %d %s", pid, state)

	// writing: the backend was seen blocked sending to the frozen process
	// (its socket buffers full): the claim's tcp_user_timeout ends it 2 ×
	// --lock-timeout after the buffers filled, which is after the idle timeout
	// when only the FATAL that ends the session did not fit — so up to twice
	// the bound (relay's package doc).
	var writing bool
	backendAlive := func() bool {
		var n int
		var wait string
		if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(max(wait_event), '') FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n, &wait); err != nil {
			t.Fatal(err)
		}
		writing = writing || n == 1 && wait == "ClientWrite"
		return n == 1
	}
	// The other relay publishes past the rows the frozen transaction holds,
	// before the server ends it.
	before := count(t, pool, "published_at IS NOT NULL")
	testenv.WaitFor(t, 30*time.Second, "the healthy relay publishing while the other is frozen", func() bool {
		return count(t, pool, "published_at IS NOT NULL") >= before+1_000
	})
	published := time.Since(stoppedAt)
	heldMeanwhile := backendAlive()
	// The server ends the frozen transaction (idle_in_transaction_session_timeout
	// and tcp_user_timeout = 2 × --lock-timeout): its rows are free again.
	testenv.WaitFor(t, 4*lockTimeout+10*time.Second, "the frozen claim's backend ended by the server", func() bool {
		return !backendAlive()
	})
	ended := time.Since(stoppedAt)
	bound := 2 * lockTimeout
	if writing {
		bound = 4 * lockTimeout
	}
	t.Logf("healthy relay published 1,000 after %v (frozen claim still open: %v); frozen claim ended after %v (seen blocked writing: %v)",
		published.Round(10*time.Millisecond), heldMeanwhile, ended.Round(10*time.Millisecond), writing)
	if !heldMeanwhile {
		t.Errorf("the healthy relay published only once the frozen claim had ended (%v): it waited for the frozen rows", published)
	}
	if ended > bound+2*time.Second {
		t.Errorf("the frozen claim held its rows for %v: the bound is %v", ended, bound)
	}
	if strings.Contains(healthy.logText(), `"level":"ERROR"`) {
		t.Errorf("the healthy relay logged errors:\n%s", healthy.logText())
	}

	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	n := count(t, pool, "true")
	testenv.WaitFor(t, 2*time.Minute, "everything published", func() bool { return count(t, pool, "published_at IS NOT NULL") == n })
	for _, p := range []*relayProc{frozen, healthy} {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(t, 20*time.Second); err != nil {
			t.Fatalf("relay exited with %v after SIGTERM; log:\n%s", err, p.logText())
		}
	}
	recs := k.Consume(t, n, time.Minute, k.Prefix+"outbox.order")
	if copies := firstDeliveries(t, pool, recs); len(copies) != n {
		t.Fatalf("lost events: %d distinct delivered of %d", len(copies), n)
	}
}

// freezeInClaim stops p with SIGSTOP until the moment its connection is inside
// the ordered claim's transaction (the statement running or done and the
// transaction open), and returns that backend's pid and state.
func freezeInClaim(t *testing.T, pool *pgxpool.Pool, p *relayProc) (int, string) {
	t.Helper()
	for range 5_000 {
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		var pid int
		var state string
		err := pool.QueryRow(context.Background(), `SELECT pid, state FROM pg_stat_activity
			WHERE application_name = $1 AND xact_start IS NOT NULL
			  AND query LIKE '-- The ordered claim%'`, p.app).Scan(&pid, &state)
		if err == nil {
			return pid, state
		}
		if !strings.Contains(err.Error(), "no rows") {
			t.Fatal(err)
		}
		if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	}
	t.Fatalf("never caught the relay inside its claim; log:\n%s", p.logText())
	return 0, ""
}
