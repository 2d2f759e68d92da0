package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/relay"
)

// drainRun is one throughput measurement.
type drainRun struct {
	Backlog   backlog `json:"backlog"`
	Kind      string  `json:"kind"`             // relay, ceiling, seed
	Binary    string  `json:"binary,omitempty"` // relay: "" this tree, else the --baseline's short revision
	Ordering  string  `json:"ordering"`
	Procs     int     `json:"procs"` // relay processes, or ceiling loops
	BatchSize int     `json:"batch_size"`
	Events    int     `json:"events"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"events_per_second"`
	MaxRSSMB  float64 `json:"max_rss_mb,omitempty"`
}

// relayDrain runs procs `outboxtop --headless --drain` processes on a fresh copy
// of b and returns the rate at which they emptied it.
func (e *env) relayDrain(ctx context.Context, b backlog, ordering string, procs, batch int) (drainRun, error) {
	return e.relayDrainOf(ctx, "", b, ordering, procs, batch)
}

// relayDrainOf is relayDrain with the binary rev: "" this tree's, else the
// baseline's, on a copy of a backlog its own migrations made.
func (e *env) relayDrainOf(ctx context.Context, rev string, b backlog, ordering string, procs, batch int) (drainRun, error) {
	bin := e.binary
	if rev != "" {
		bin = e.base.path
	}
	dsn, drop, err := e.cloneFor(ctx, b, rev)
	if err != nil {
		return drainRun{}, err
	}
	defer drop()
	k, err := e.newKafka()
	if err != nil {
		return drainRun{}, err
	}
	defer k.Close()
	args := []string{"--headless", "--drain", "--dsn", dsn, "--brokers", strings.Join(k.ListenAddrs(), ","),
		"--ordering", ordering, "--batch-size", fmt.Sprint(batch), "--log-level", "warn"}
	cmds := make([]*exec.Cmd, procs)
	hwm := make([]chan int64, procs)
	start := time.Now()
	for i := range cmds {
		cmds[i] = exec.Command(bin, args...)
		cmds[i].Stderr = os.Stderr
		if err := cmds[i].Start(); err != nil {
			return drainRun{}, err
		}
		hwm[i] = make(chan int64, 1)
		go func(pid int, out chan<- int64) { out <- watchHWM(pid) }(cmds[i].Process.Pid, hwm[i])
	}
	var maxRSS int64
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			return drainRun{}, fmt.Errorf("relay%s: %w", forRev(rev), err)
		}
		maxRSS = max(maxRSS, <-hwm[i])
	}
	elapsed := time.Since(start)
	n, err := published(ctx, dsn)
	if err != nil {
		return drainRun{}, err
	}
	if n != b.Events {
		return drainRun{}, fmt.Errorf("drain%s published %d of %d", forRev(rev), n, b.Events)
	}
	r := drainRun{Backlog: b, Kind: "relay", Binary: rev, Ordering: ordering, Procs: procs, BatchSize: batch, Events: n,
		Seconds: elapsed.Seconds(), PerSecond: float64(n) / elapsed.Seconds(), MaxRSSMB: float64(maxRSS) / 1024}
	logf("relay%s %s ×%d batch %d on %s: %.0f events/s, max RSS %.0f MB", forRev(rev), ordering, procs, batch, b, r.PerSecond, r.MaxRSSMB)
	return r, nil
}

// ceiling is relay.MeasureCeiling, best of 1–4 loops, each on a fresh copy.
func (e *env) ceiling(ctx context.Context, b backlog, ordering string, batch int) (drainRun, error) {
	var best drainRun
	tmpl, err := e.template(ctx, b)
	if err != nil {
		return best, err
	}
	for loops := 1; loops <= 4; loops++ {
		var res relay.CeilingResult
		if err := e.onCopy(ctx, tmpl, func(pool *pgxpool.Pool) (err error) {
			res, err = relay.MeasureCeiling(ctx, pool, relay.Config{Ordering: relay.Ordering(ordering), BatchSize: batch}, loops)
			return err
		}); err != nil {
			return best, err
		}
		n, elapsed := res.Events, res.Elapsed
		if n != b.Events {
			return best, fmt.Errorf("ceiling marked %d of %d", n, b.Events)
		}
		rate := float64(n) / elapsed.Seconds()
		logf("ceiling %s loops=%d on %s: %.0f events/s", ordering, loops, b, rate)
		if rate > best.PerSecond {
			best = drainRun{Backlog: b, Kind: "ceiling", Ordering: ordering, Procs: loops, BatchSize: batch,
				Events: n, Seconds: elapsed.Seconds(), PerSecond: rate}
		}
	}
	return best, nil
}

// seed is the seed's relay (the hand-written outbox relay outboxtop replaces): claim one with the seed's CTE,
// produce it, mark it; for d.
func (e *env) seed(ctx context.Context, b backlog, d time.Duration) (drainRun, error) {
	dsn, drop, err := e.clone(ctx, b)
	if err != nil {
		return drainRun{}, err
	}
	defer drop()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return drainRun{}, err
	}
	defer conn.Close(ctx)
	k, err := e.newKafka()
	if err != nil {
		return drainRun{}, err
	}
	defer k.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...))
	if err != nil {
		return drainRun{}, err
	}
	defer cl.Close()
	claim := seedClaim(1)
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		var id, typ, agg string
		var payload []byte
		token := fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		if err := conn.QueryRow(ctx, claim, token).Scan(&id, &typ, &agg, &payload); err != nil {
			if err == pgx.ErrNoRows {
				break
			}
			return drainRun{}, err
		}
		rec := &kgo.Record{Topic: "outbox." + typ, Key: []byte(agg), Value: payload,
			Headers: []kgo.RecordHeader{{Key: "event_id", Value: []byte(id)}}}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return drainRun{}, err
		}
		if _, err := conn.Exec(ctx, `UPDATE outbox_event SET published_at = now() WHERE event_id = $1 AND lease_token = $2`, id, token); err != nil {
			return drainRun{}, err
		}
		n++
	}
	elapsed := time.Since(start)
	r := drainRun{Backlog: b, Kind: "seed", Ordering: "none", Procs: 1, BatchSize: 1, Events: n,
		Seconds: elapsed.Seconds(), PerSecond: float64(n) / elapsed.Seconds()}
	logf("seed one-at-a-time on %s: %.0f events/s", b, r.PerSecond)
	return r, nil
}

// seedClaim is the seed's claim (FOR UPDATE SKIP LOCKED, a lease, attempts + 1) with the given batch size.
func seedClaim(batch int) string {
	return `
WITH picked AS (
    SELECT event_id FROM outbox_event
    WHERE published_at IS NULL
      AND available_at <= now()
      AND (lease_until IS NULL OR lease_until < now())
    ORDER BY available_at, created_at, event_id
    LIMIT ` + fmt.Sprint(batch) + `
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_event AS e
SET lease_token = $1, lease_until = now() + interval '30 seconds', attempts = attempts + 1
FROM picked
WHERE e.event_id = picked.event_id
RETURNING e.event_id, e.aggregate_type, e.aggregate_id, e.payload`
}

func published(ctx context.Context, dsn string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL").Scan(&n)
	return n, err
}

const defaultBatch = 1000

func (e *env) throughput(ctx context.Context) error {
	var backlogs []backlog
	for _, size := range e.prof.sizes {
		for _, payload := range e.prof.payloads {
			backlogs = append(backlogs, backlog{Events: size, Payload: payload, Aggregates: 5000})
		}
		if !e.prof.noHot {
			backlogs = append(backlogs, backlog{Events: size, Payload: 256, Aggregates: 5000, HotShare: 0.10})
		}
	}
	// With --baseline every relay configuration runs with both binaries, the
	// order alternating from one configuration to the next (this tree first,
	// then the baseline first, ...), so a drift of the machine's speed falls on
	// both sides alike. The references run once, on this tree's schema.
	sides := [][]string{{""}}
	if e.base != nil {
		sides = [][]string{{"", e.base.Rev}, {e.base.Rev, ""}}
	}
	config := 0
	for _, b := range backlogs {
		if e.base != nil { // load both templates before the first run of b
			if _, err := e.template(ctx, b); err != nil {
				return err
			}
			if _, err := e.templateOf(ctx, b, e.base.Rev); err != nil {
				return err
			}
		}
		seed, err := e.seed(ctx, b, 10*time.Second)
		if err != nil {
			return err
		}
		e.results.Throughput = append(e.results.Throughput, seed)
		for _, ord := range []string{"aggregate", "none"} {
			c, err := e.ceiling(ctx, b, ord, defaultBatch)
			if err != nil {
				return err
			}
			e.results.Throughput = append(e.results.Throughput, c)
			for _, procs := range e.prof.procs {
				for _, rev := range sides[config%len(sides)] {
					r, err := e.relayDrainOf(ctx, rev, b, ord, procs, defaultBatch)
					if err != nil {
						return err
					}
					e.results.Throughput = append(e.results.Throughput, r)
				}
				config++
			}
		}
	}
	return nil
}

func (e *env) batchSweep(ctx context.Context) error {
	b := backlog{Events: e.prof.sizes[0], Payload: 256, Aggregates: 5000}
	for _, procs := range e.prof.procs {
		for _, batch := range e.prof.batchSweep {
			r, err := e.relayDrain(ctx, b, "aggregate", procs, batch)
			if err != nil {
				return err
			}
			e.results.BatchSweep = append(e.results.BatchSweep, r)
		}
	}
	return nil
}

func (e *env) memory(ctx context.Context) error {
	b := backlog{Events: e.prof.memory, Payload: 256, Aggregates: 5000}
	r, err := e.relayDrain(ctx, b, "aggregate", 1, defaultBatch)
	if err != nil {
		return err
	}
	e.results.Memory = &r
	return nil
}

// watchHWM polls a process's peak resident set (VmHWM, in kB) until it exits and
// returns the last value read. Rusage's maxrss is no use here: Linux carries the
// parent's peak into a child across fork and exec, and this process holds kfake.
func watchHWM(pid int) int64 {
	var last int64
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return last
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "VmHWM:"), "kB")), &kb)
				if kb > last {
					last = kb
				}
			}
		}
		if strings.Contains(string(b), "State:\tZ") {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
}
