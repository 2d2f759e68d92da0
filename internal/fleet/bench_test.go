package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// BenchmarkFleet20 polls 20 outboxes, 20 databases on one PostgreSQL server,
// each with 1,000 pending and 10 failed events: what refreshing a fleet of
// twenty costs that server. It starts a cluster of its own with
// pg_stat_statements loaded (fsync on, as BENCHMARKS.md's other numbers). In
// "one-hanging", a session holds outbox 0's table locked while it sleeps in
// pg_sleep: that outbox's poll takes its timeout (1 s), and the metrics say
// whether the 19 others paid for it. Numbers belong in BENCHMARKS.md, measured
// on a quiet machine (load average below 1.5):
//
//	go test ./internal/fleet -run XXX -bench Fleet20 -benchtime 20x
//
// Metrics, per poll round of all 20:
//
//	ms/poll          wall time of the round (Poll returns when the slowest ends)
//	stmts/poll       statements the server ran for the fleet (pg_stat_statements
//	                 calls in the 20 databases; a statement cut short by a lock
//	                 or a timeout is not counted)
//	exec-ms/poll     their execution time summed (pg_stat_statements)
//	cpu-ms/poll      CPU time of the fleet's backends (utime+stime from /proc,
//	                 application_name "outboxtop fleet"): the cost the server
//	                 pays, planning and protocol included
//	poll-ms/poll     the outboxes' own poll times summed (client side)
//	max-healthy-ms   the slowest poll of an outbox that was not hung
func BenchmarkFleet20(b *testing.B) {
	const n = 20
	ctx := context.Background()
	c, err := pgtemp.Start(ctx, pgtemp.Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"}})
	if errors.Is(err, pgtemp.ErrNoBinaries) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	admin, err := pgxpool.New(ctx, c.DSN("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(admin.Close)
	for _, q := range []string{`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`, `CREATE DATABASE fleet_template`} {
		if _, err := admin.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	tconn, err := pgx.Connect(ctx, c.DSN("fleet_template"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, tconn, "public", nil); err != nil {
		b.Fatal(err)
	}
	if _, err := tconn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', (g % 200)::text, 'OrderPlaced', '{}' FROM generate_series(1, 1000) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'invoice', g::text, 'InvoiceIssued', '{}', 5, now(), 'boom' FROM generate_series(1, 10) g`); err != nil {
		b.Fatal(err)
	}
	_ = tconn.Close(ctx)
	env := map[string]string{}
	var text strings.Builder
	text.WriteString("timeout = \"1s\"\n")
	var first *pgxpool.Pool
	for k := range n {
		name := fmt.Sprintf("o%02d", k)
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE fleet_template"); err != nil {
			b.Fatal(err)
		}
		if k == 0 {
			if first, err = pgxpool.New(ctx, c.DSN(name)); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(first.Close)
		}
		env["DSN_"+name] = c.DSN(name)
		fmt.Fprintf(&text, "[[outbox]]\nname = %q\ndsn_env = \"DSN_%s\"\n", name, name)
	}
	for k := range n { // statistics in each database, as autovacuum would have them
		conn, err := pgx.Connect(ctx, c.DSN(fmt.Sprintf("o%02d", k)))
		if err != nil {
			b.Fatal(err)
		}
		_, err = conn.Exec(ctx, "ANALYZE outbox_event")
		_ = conn.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
	}
	f, err := Parse(filepath.Join(b.TempDir(), "fleet.toml"), text.String(), func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	statements := func() (calls int64, ms float64) {
		err := admin.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time), 0)::float8
			FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname ~ '^o[0-9]{2}$'`).Scan(&calls, &ms)
		if err != nil {
			b.Fatal(err)
		}
		return calls, ms
	}
	cpu := func() map[int]time.Duration {
		rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = 'outboxtop fleet'`)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		out := map[int]time.Duration{}
		for _, pid := range pids {
			if t, ok := procCPU(int(pid)); ok {
				out[int(pid)] = t
			}
		}
		return out
	}
	run := func(b *testing.B) {
		p, err := NewPoller(f, Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		p.Poll(ctx) // connect, and warm the plans
		if _, err := admin.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
			b.Fatal(err)
		}
		cpuBefore := cpu()
		var polls, healthy time.Duration
		start := time.Now()
		for b.Loop() {
			for _, r := range p.Poll(ctx) {
				polls += r.Took.Duration()
				if r.Reachable {
					healthy = max(healthy, r.Took.Duration())
				}
			}
		}
		wall := time.Since(start)
		calls, execMS := statements()
		var backend time.Duration
		for pid, t := range cpu() {
			backend += t - cpuBefore[pid] // a backend started since counts whole
		}
		per := float64(b.N)
		b.ReportMetric(float64(wall.Microseconds())/1000/per, "ms/poll")
		b.ReportMetric(float64(calls)/per, "stmts/poll")
		b.ReportMetric(execMS/per, "exec-ms/poll")
		b.ReportMetric(float64(backend.Microseconds())/1000/per, "cpu-ms/poll")
		b.ReportMetric(float64(polls.Microseconds())/1000/per, "poll-ms/poll")
		b.ReportMetric(float64(healthy.Microseconds())/1000, "max-healthy-ms")
	}
	b.Run("all-healthy", run)
	b.Run("one-hanging", func(b *testing.B) {
		release := holdLock(b, first)
		defer release()
		run(b)
	})
}

// holdLock has a session of pool take outbox_event's ACCESS EXCLUSIVE lock
// and sleep in pg_sleep holding it, until release.
func holdLock(b *testing.B, pool *pgxpool.Pool) (release func()) {
	ctx := context.Background()
	hctx, cancel := context.WithCancel(ctx)
	holder, err := pool.Acquire(hctx)
	if err != nil {
		b.Fatal(err)
	}
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = holder.Exec(hctx, `BEGIN; LOCK TABLE outbox_event IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3600); COMMIT`)
	}()
	testenv.WaitFor(b, 10*time.Second, "the lock to be held", func() bool {
		var locked bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = 'outbox_event' AND l.mode = 'AccessExclusiveLock' AND l.granted)`).Scan(&locked)
		return err == nil && locked
	})
	return func() { cancel(); <-held; holder.Release() }
}

// procCPU is the user+system CPU time of process pid (Linux /proc; false
// elsewhere or when it is gone).
func procCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	// utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 a
	// second on Linux).
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, true
}
