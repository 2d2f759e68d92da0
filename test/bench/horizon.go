package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/outbox"
	"github.com/outboxtop/outboxtop/relay"
)

// The horizon profile: one relay under a steady load while a transaction holds
// PostgreSQL's xmin horizon, so no row version the relay's marks leave behind
// can be vacuumed and every scan of the claim index re-reads them. See
// BENCHMARKS.md, "Horizon".
var horizonFlags = struct {
	held, clean, writer, window *time.Duration
	rate                        *int
	orderings                   *string
}{
	held:   flag.Duration("horizon-for", 30*time.Minute, "horizon profile: length of each run with a REPEATABLE READ snapshot held (0: skip those runs)"),
	clean:  flag.Duration("clean-for", 5*time.Minute, "horizon profile: length of each run with no horizon held (0: skip those runs)"),
	writer: flag.Duration("writer-for", 5*time.Minute, "horizon profile: length of the run with a writing transaction held idle (0: skip it)"),
	window: flag.Duration("window", 5*time.Minute, "horizon profile: measurement window"),
	rate:   flag.Int("horizon-rate", 1500, "horizon profile: events/s offered"),
	orderings: flag.String("horizon-orderings", "aggregate,none",
		"horizon profile: the orderings whose clean and held runs to make, comma-separated (the writer run is ordered)"),
}

const (
	horizonAggregates = 5000
	horizonPayload    = 120 // bytes of JSON per event
	clockTicks        = 100 // USER_HZ: the unit of /proc/<pid>/stat's times on Linux
)

// horizonWindow is one window of a horizon run.
type horizonWindow struct {
	Start      float64 `json:"start_seconds"` // since the load started
	Seconds    float64 `json:"seconds"`
	Claims     int     `json:"claims"`
	ClaimMean  float64 `json:"claim_mean_ms"` // from the histogram's sum and count
	ClaimP50   float64 `json:"claim_p50_ms"`  // bucket-interpolated
	ClaimP99   float64 `json:"claim_p99_ms"`
	MarkP50    float64 `json:"mark_p50_ms"`
	Offered    int     `json:"offered"`
	Published  int     `json:"published"`
	OfferedPS  float64 `json:"offered_per_second"` // committed by the writers
	PerSecond  float64 `json:"published_per_second"`
	Backlog    int     `json:"backlog_end"`
	BacklogMax int     `json:"backlog_max"` // committed less in Kafka, sampled every second
	DeadTuples int64   `json:"dead_tuples"` // outbox_event's n_dead_tup at the window's end
	RelayCPUus float64 `json:"relay_cpu_us_per_event"`
	DBCPUus    float64 `json:"db_cpu_us_per_event"`
}

// horizonRun is one relay run of the horizon profile.
type horizonRun struct {
	Horizon  string          `json:"horizon"` // clean, held, writer
	Ordering string          `json:"ordering"`
	Offered  int             `json:"offered_per_second"`
	Writers  int             `json:"writers"`
	Seconds  float64         `json:"seconds"`
	Windows  []horizonWindow `json:"windows"`
	Explain  string          `json:"explain,omitempty"` // the claim at the end of the run
}

type horizonResults struct {
	Rate       int          `json:"offered_per_second"`
	Aggregates int          `json:"aggregates"`
	Payload    int          `json:"payload_bytes"`
	Window     float64      `json:"window_seconds"`
	Runs       []horizonRun `json:"runs"`
}

var horizonWhat = map[string]string{
	"clean":  "no other transaction",
	"held":   "a REPEATABLE READ snapshot (BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM outbox_event) taken before the load and left idle in transaction",
	"writer": "a transaction that inserted a row into a scratch table (so it holds an xid) before the load and was left idle in transaction",
}

// horizon runs the horizon profile: clean and held, ordered and unordered, then
// the writer run, each on a fresh copy of an empty migrated database and a
// fresh broker.
func (e *env) horizon(ctx context.Context) error {
	f := horizonFlags
	if *f.window <= 0 || *f.rate <= 0 {
		return errors.New("--window and --horizon-rate must be positive")
	}
	for _, o := range strings.Split(*f.orderings, ",") {
		if o != string(relay.OrderAggregate) && o != string(relay.OrderNone) {
			return fmt.Errorf("--horizon-orderings: %q is no ordering (aggregate, none)", o)
		}
	}
	res := &horizonResults{Rate: *f.rate, Aggregates: horizonAggregates, Payload: horizonPayload, Window: f.window.Seconds()}
	e.results.Horizon = res
	for _, r := range []struct {
		horizon string
		ord     relay.Ordering
		d       time.Duration
	}{
		{"clean", relay.OrderAggregate, *f.clean},
		{"held", relay.OrderAggregate, *f.held},
		{"clean", relay.OrderNone, *f.clean},
		{"held", relay.OrderNone, *f.held},
		{"writer", relay.OrderAggregate, *f.writer},
	} {
		if r.d <= 0 || r.horizon != "writer" && !slices.Contains(strings.Split(*f.orderings, ","), string(r.ord)) {
			continue
		}
		logf("horizon %s, ordering %s, %v at %d/s: %s", r.horizon, r.ord, r.d, *f.rate, horizonWhat[r.horizon])
		run, err := e.horizonRun(ctx, r.horizon, r.ord, r.d, *f.window, *f.rate)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.horizon, r.ord, err)
		}
		res.Runs = append(res.Runs, run)
		logf("horizon %s %s: %s", run.Horizon, run.Ordering, run.verdict())
		if e.save != nil {
			if err := e.save(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *env) horizonRun(ctx context.Context, horizon string, ord relay.Ordering, d, window time.Duration, rate int) (horizonRun, error) {
	run := horizonRun{Horizon: horizon, Ordering: string(ord), Offered: rate}
	dsn, drop, err := e.clone(ctx, backlog{Events: 0, Payload: horizonPayload, Aggregates: horizonAggregates})
	if err != nil {
		return run, err
	}
	defer drop()
	stats, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return run, err
	}
	defer stats.Close(context.Background())

	// The session holding the horizon, opened before the relay and the load.
	if horizon != "clean" {
		hold, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return run, err
		}
		defer hold.Close(context.Background())
		if horizon == "writer" {
			if _, err := hold.Exec(ctx, "CREATE TABLE horizon_scratch (n int)"); err != nil {
				return run, err
			}
			if _, err := hold.Exec(ctx, "BEGIN"); err != nil {
				return run, err
			}
			if _, err := hold.Exec(ctx, "INSERT INTO horizon_scratch VALUES (1)"); err != nil {
				return run, err
			}
		} else {
			var n int
			if _, err := hold.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
				return run, err
			}
			if err := hold.QueryRow(ctx, "SELECT count(*) FROM outbox_event").Scan(&n); err != nil {
				return run, err
			}
		}
		defer func() { _, _ = hold.Exec(context.Background(), "ROLLBACK") }()
		var xmin, xid, state string
		if err := stats.QueryRow(ctx, `SELECT coalesce(backend_xmin::text, '-'), coalesce(backend_xid::text, '-'), state
			FROM pg_stat_activity WHERE pid = $1`, hold.PgConn().PID()).Scan(&xmin, &xid, &state); err != nil {
			return run, err
		}
		logf("horizon held by pid %d: %s, backend_xmin %s, backend_xid %s", hold.PgConn().PID(), state, xmin, xid)
	}

	k, err := e.newKafka()
	if err != nil {
		return run, err
	}
	defer k.Close()
	addr, err := freeAddr()
	if err != nil {
		return run, err
	}
	relayCmd := exec.Command(e.binary, "--headless", "--dsn", dsn, "--brokers", strings.Join(k.ListenAddrs(), ","),
		"--ordering", string(ord), "--log-level", "warn", "--metrics-addr", addr)
	relayCmd.Stderr = os.Stderr
	if err := relayCmd.Start(); err != nil {
		return run, err
	}
	defer func() {
		_ = relayCmd.Process.Signal(syscall.SIGTERM)
		_ = relayCmd.Wait()
	}()
	for i := 0; scrape(addr) == nil; i++ {
		if i == 100 {
			return run, errors.New("the relay's /metrics does not answer after 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	postmaster, err := pgtemp.ServerPID(e.cluster.Dir())
	if err != nil {
		return run, err
	}

	// Writers: single-event transactions, paced as latency.go paces them, and
	// twice as many: at 1,500/s, 15 writers waiting on their commits' fsync
	// offered only 900–1,300/s on a loaded 2-core machine.
	writers := min(64, max(4, rate/50))
	run.Writers = writers
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return run, err
	}
	pcfg.MaxConns = int32(writers)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return run, err
	}
	defer pool.Close()
	// Every second: the backlog, events committed less records in the topic,
	// read from the broker: a scrape of the relay's /metrics runs its backlog
	// collector, a database read, and scraping every second would add one every
	// 2 s, a load that grows with the dead tuples. Every window: the relay's
	// histograms, counters and CPU, the cluster's CPU and dead tuples.
	kcl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...))
	if err != nil {
		return run, err
	}
	defer kcl.Close()
	adm := kadm.NewClient(kcl)
	inTopic := func() (int64, error) {
		offs, err := adm.ListEndOffsets(ctx, "outbox.order")
		if err == nil {
			err = offs.Error()
		}
		var n int64
		offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n, err
	}
	var offered, seq atomic.Int64
	type sample struct {
		at                  time.Time
		metrics             map[string]float64
		offered             int64
		relayTicks, dbTicks int64
	}
	read := func() (sample, error) {
		m := sample{at: time.Now(), metrics: scrape(addr), offered: offered.Load()}
		if m.metrics == nil {
			return m, errors.New("the relay's /metrics stopped answering")
		}
		self, _, _, err := procTicks(relayCmd.Process.Pid)
		if err != nil {
			return m, err
		}
		m.relayTicks = self
		m.dbTicks, err = clusterTicks(postmaster)
		return m, err
	}
	prev, err := read()
	if err != nil {
		return run, err
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	failed := make(chan error, 1)
	interval := time.Duration(float64(time.Second) * float64(writers) / float64(rate))
	pad := strings.Repeat("x", horizonPayload-27) // {"n":"0000000001","pad":"…"}
	start := time.Now()
	prev.at = start
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := start.Add(time.Duration(w) * interval / time.Duration(writers))
			for loadCtx.Err() == nil {
				if wait := time.Until(next); wait > 0 {
					time.Sleep(wait)
				}
				next = next.Add(interval)
				n := seq.Add(1)
				_, err := outbox.Add(loadCtx, pool, outbox.Event{AggregateType: "order",
					AggregateID: "o-" + strconv.FormatInt(n%horizonAggregates, 10), EventType: "OrderPlaced",
					Payload: json.RawMessage(fmt.Sprintf(`{"n":"%010d","pad":"%s"}`, n, pad))})
				if err != nil {
					if loadCtx.Err() == nil {
						select {
						case failed <- err:
						default:
						}
					}
					return
				}
				offered.Add(1)
			}
		}()
	}
	stopWriters := func() error {
		stopLoad()
		wg.Wait()
		select {
		case err := <-failed:
			return err
		default:
			return nil
		}
	}
	defer func() { _ = stopWriters() }()

	backlogMax := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := range int((d + window - 1) / window) {
		end := start.Add(min(time.Duration(i+1)*window, d))
		for time.Now().Before(end) {
			select {
			case err := <-failed:
				return run, fmt.Errorf("writer: %w", err)
			case <-tick.C:
			}
			if n, err := inTopic(); err == nil {
				backlogMax = max(backlogMax, int(offered.Load()-n))
			}
		}
		cur, err := read()
		if err != nil {
			return run, err
		}
		n, err := inTopic()
		if err != nil {
			return run, fmt.Errorf("reading the topic's end offsets: %w", err)
		}
		w := horizonWindow{Start: prev.at.Sub(start).Seconds(), Seconds: cur.at.Sub(prev.at).Seconds(),
			Offered:   int(cur.offered - prev.offered),
			Published: int(cur.metrics["outboxtop_relay_published_total"] - prev.metrics["outboxtop_relay_published_total"]),
			Backlog:   max(0, int(offered.Load()-n))}
		w.BacklogMax = max(backlogMax, w.Backlog)
		w.PerSecond, w.OfferedPS = float64(w.Published)/w.Seconds, float64(w.Offered)/w.Seconds
		claims, marks := bucketDelta(prev.metrics, cur.metrics, "outboxtop_relay_claim_seconds"), bucketDelta(prev.metrics, cur.metrics, "outboxtop_relay_mark_seconds")
		w.Claims = int(cur.metrics["outboxtop_relay_claim_seconds_count"] - prev.metrics["outboxtop_relay_claim_seconds_count"])
		w.ClaimP50, w.ClaimP99 = histogramQuantileMs(claims, 0.50), histogramQuantileMs(claims, 0.99)
		if w.Claims > 0 {
			w.ClaimMean = (cur.metrics["outboxtop_relay_claim_seconds_sum"] - prev.metrics["outboxtop_relay_claim_seconds_sum"]) * 1000 / float64(w.Claims)
		}
		w.MarkP50 = histogramQuantileMs(marks, 0.50)
		if w.Published > 0 {
			w.RelayCPUus = float64(cur.relayTicks-prev.relayTicks) * 1e6 / clockTicks / float64(w.Published)
			w.DBCPUus = float64(cur.dbTicks-prev.dbTicks) * 1e6 / clockTicks / float64(w.Published)
		}
		if err := stats.QueryRow(ctx, `SELECT coalesce((SELECT n_dead_tup FROM pg_stat_user_tables
			WHERE relid = 'outbox_event'::regclass), 0)`).Scan(&w.DeadTuples); err != nil {
			return run, err
		}
		run.Windows = append(run.Windows, w)
		logf("horizon %s %s %s: claim mean %.1f ms, p50 %.1f ms, p99 %.1f ms (%d claims), mark p50 %.1f ms, %.0f/s offered, %.0f/s published, backlog %d (max %d), %d dead tuples, relay %.0f µs/event, db %.0f µs/event",
			horizon, ord, w.label(), w.ClaimMean, w.ClaimP50, w.ClaimP99, w.Claims, w.MarkP50, w.OfferedPS, w.PerSecond, w.Backlog, w.BacklogMax, w.DeadTuples, w.RelayCPUus, w.DBCPUus)
		prev, backlogMax = cur, 0
	}
	run.Seconds = time.Since(start).Seconds()
	// The claim as the relay runs it, under the same load and horizon.
	run.Explain = claimExplain(ctx, stats, ord)
	if strings.Contains(run.Explain, "not run: ") || strings.Contains(run.Explain, "failed: ") {
		logf("horizon %s %s: the claim's EXPLAIN did not complete (results.md says why)", horizon, ord)
	}
	if err := stopWriters(); err != nil {
		return run, fmt.Errorf("writer: %w", err)
	}
	return run, nil
}

// bucketDelta is histogram name's cumulative buckets in cur less those in
// prev: the observations between two scrapes.
func bucketDelta(prev, cur map[string]float64, name string) map[float64]float64 {
	was, is := map[float64]float64{}, map[float64]float64{}
	addBuckets(prev, name, was)
	addBuckets(cur, name, is)
	for b := range is {
		is[b] -= was[b]
	}
	return is
}

// procTicks reads utime+stime of process pid, the same of its reaped children
// (cutime+cstime), and its parent, from /proc/<pid>/stat.
func procTicks(pid int) (self, children int64, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from the
	// last ')'. After it: state (3), ppid (4), … utime (14), stime (15),
	// cutime (16), cstime (17).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return n(11) + n(12), n(13) + n(14), int(n(1)), nil
}

// clusterTicks is the CPU time of the whole PostgreSQL cluster: the postmaster,
// its live children (backends, autovacuum, checkpointer, WAL writer…) and the
// children it has reaped, whose time the kernel adds to its cutime and cstime.
func clusterTicks(postmaster int) (int64, error) {
	self, reaped, _, err := procTicks(postmaster)
	if err != nil {
		return 0, err
	}
	total := self + reaped
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == postmaster {
			continue
		}
		if self, _, ppid, err := procTicks(pid); err == nil && ppid == postmaster {
			total += self // a child that ended since is in the postmaster's cutime
		}
	}
	return total, nil
}

// sqlCode is a statement without its comments and string literals.
var sqlCode = regexp.MustCompile(`(?s)--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'`)

// claimFiles are the relay's claim statements, by ordering.
var claimFiles = map[relay.Ordering]string{relay.OrderAggregate: "relay/sql/claim_ordered.sql", relay.OrderNone: "relay/sql/claim_unordered.sql"}

// claimStatements are claimFiles' text when the relay was built (main.go reads
// them just before the build: the files may be edited during a long run), or
// the error reading them.
var claimStatements = map[relay.Ordering]string{}

// claimSettings is the first statement of the relay's claim transaction
// (relay/sql/claim_timeouts.sql: JIT and sorting off, the timeouts), which the
// EXPLAIN runs first so that its plan is the one the relay's claim gets.
var claimSettings string

func readClaimStatements() {
	for ord, file := range claimFiles {
		if b, err := os.ReadFile(file); err == nil {
			claimStatements[ord] = string(b)
		}
	}
	if b, err := os.ReadFile("relay/sql/claim_timeouts.sql"); err == nil {
		claimSettings = string(b)
	}
}

// claimExplain is EXPLAIN (ANALYZE, BUFFERS) of the relay's claim for ord, in a
// transaction rolled back, as text, or why it could not be run. The statement is
// the relay's own file (claimStatements), and its parameters are the ones the
// file uses, named (@batch, …) or positional ($1, …, named by the file's header
// comment), given values below: the relay's default batch and lease, a fresh
// token, holder 'bench', nothing to pass over, no head hints. A statement that
// reads from a position (@from_at) is explained twice: from a position a second
// back with the current snapshot as the previous claim's (a claim in the
// steady state), and from the start (the relay's first claim; the rescue,
// sql/rescue.sql, walks the same entries beside the claims). A parameter this does not
// know is reported by name: add its value to values.
func claimExplain(ctx context.Context, conn *pgx.Conn, ord relay.Ordering) string {
	file, text := claimFiles[ord], claimStatements[ord]
	if text == "" {
		return fmt.Sprintf("not run: %s was not readable when the relay was built\n", file)
	}
	stmt := pgsql.Qualify(text, "public")
	code := sqlCode.ReplaceAllString(stmt, " ")
	var xmax uint64
	var xip []uint64
	if err := conn.QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot()), ARRAY(SELECT pg_snapshot_xip(pg_current_snapshot()))").Scan(&xmax, &xip); err != nil {
		return fmt.Sprintf("not run: reading the snapshot: %v\n", err)
	}
	d := relay.DefaultConfig
	values := func(deep bool) map[string]any {
		v := map[string]any{"batch": d.BatchSize, "token": uuid.New(), "lease_ms": d.Lease.Milliseconds(), "holder": "bench",
			"skip_types": []string{}, "skip_ids": []string{}, "hints": "{}",
			"from_at": pgtype.Timestamptz{Time: time.Now().Add(-time.Second), Valid: true}, "from_seq": int64(math.MinInt64),
			"xmax": &xmax, "xip": xip, "max_payload": d.MaxMessageBytes, "batch_bytes": max(16<<20, d.MaxMessageBytes)}
		if deep {
			v["from_at"] = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
			v["xmax"], v["xip"] = (*uint64)(nil), []uint64{}
		}
		return v
	}
	// A positional parameter's description in the header → its value's name.
	described := []struct{ word, name string }{{"batch", "batch"}, {"token", "token"}, {"millisecond", "lease_ms"},
		{"holder", "holder"}, {"name", "holder"}}
	variants := []string{"steady"}
	if strings.Contains(code, "@from_at") {
		variants = append(variants, "deep")
	}
	var out strings.Builder
	for _, variant := range variants {
		vals := values(variant == "deep")
		var args []any
		named := pgx.StrictNamedArgs{}
		for _, m := range regexp.MustCompile(`@([A-Za-z_]\w*)`).FindAllStringSubmatch(code, -1) {
			v, ok := vals[m[1]]
			if !ok {
				return out.String() + fmt.Sprintf("not run: %s has a parameter @%s the bench does not know (add its value to claimExplain)\n", file, m[1])
			}
			named[m[1]] = v
		}
		if len(named) > 0 {
			args = []any{named}
		} else {
			n := 0
			for _, m := range regexp.MustCompile(`\$(\d+)`).FindAllStringSubmatch(code, -1) {
				i, _ := strconv.Atoi(m[1])
				n = max(n, i)
			}
			for i := 1; i <= n; i++ {
				m := regexp.MustCompile(`\$` + strconv.Itoa(i) + `\b\s*([^,.;$]*)`).FindStringSubmatch(text)
				name := ""
				for _, w := range described {
					if m != nil && strings.Contains(strings.ToLower(m[1]), w.word) {
						name = w.name
						break
					}
				}
				if name == "" {
					return out.String() + fmt.Sprintf("not run: %s has a parameter $%d the bench does not know (add its value to claimExplain)\n", file, i)
				}
				args = append(args, vals[name])
			}
		}
		if len(variants) > 1 {
			fmt.Fprintf(&out, "-- %s claim\n", map[string]string{"steady": "steady-state (from a second back, the current snapshot as the previous claim's)", "deep": "deep (from the start of the index)"}[variant])
		}
		if err := explainInto(ctx, conn, &out, claimSettings, "EXPLAIN (ANALYZE, BUFFERS) "+stmt, args); err != nil {
			out.WriteString("failed: " + err.Error() + "\n")
		}
	}
	return out.String()
}

// explainInto runs an EXPLAIN in a transaction it rolls back, after settings
// (the claim transaction's first statement, with a 5 s lock timeout), writing
// its lines; it gives up after 5 minutes.
func explainInto(ctx context.Context, conn *pgx.Conn, out *strings.Builder, settings, explain string, args []any) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The claim locks the rows it finds before it rechecks them, and keeps
	// those locks until the rollback, rows the relay has claimed among them:
	// the relay's mark of those waits (and gives up after its lock timeout), so
	// a claim that reads for minutes is cut short.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '300s'"); err != nil {
		return err
	}
	if settings == "" {
		return errors.New("relay/sql/claim_timeouts.sql was not readable when the bench started: the plan would not be the relay's")
	}
	if _, err := tx.Exec(ctx, settings, "5s", "300s"); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, explain, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		out.WriteString(line + "\n")
	}
	return rows.Err()
}

func (w horizonWindow) label() string {
	mmss := func(s float64) string { t := int(s + 0.5); return fmt.Sprintf("%d:%02d", t/60, t%60) }
	return mmss(w.Start) + "–" + mmss(w.Start+w.Seconds)
}

// verdict sets the run beside the targets: claim p99 of the last window at most
// twice the first's, and the backlog never above 10 s of offered load.
func (r horizonRun) verdict() string {
	if len(r.Windows) == 0 {
		return "no window"
	}
	first, last := r.Windows[0], r.Windows[len(r.Windows)-1]
	backlog := 0
	for _, w := range r.Windows {
		backlog = max(backlog, w.BacklogMax)
	}
	met := map[bool]string{true: "met", false: "missed"}
	ratio := 0.0
	if first.ClaimP99 > 0 {
		ratio = last.ClaimP99 / first.ClaimP99
	}
	return fmt.Sprintf("claim p99 last window %.1f ms / first %.1f ms = %.2f× (target ≤ 2×: %s); backlog max %d (target ≤ %d, 10 s of offered load: %s)",
		last.ClaimP99, first.ClaimP99, ratio, met[ratio <= 2], backlog, 10*r.Offered, met[backlog <= 10*r.Offered])
}

func (h *horizonResults) markdown(b *strings.Builder) {
	b.WriteString("### Horizon: the relay while a transaction holds the xmin horizon\n\n")
	fmt.Fprintf(b, "One `outboxtop --headless` relay, kfake, %s events/s offered in single-event transactions, %s aggregates, %d B payloads, "+
		"from an empty migrated table; windows of %v. Offered/s is what the writers committed (below the target rate when commits are slow). Claim and mark quantiles are bucket-interpolated from the relay's histograms "+
		"(as PromQL's histogram_quantile); the claim mean is exact (the histogram's sum ÷ count). Backlog: events committed less records in the topic (read from the broker), sampled every second. "+
		"CPU per event: the relay process's utime+stime, and the whole cluster's (postmaster, its children, the children it reaped: "+
		"the writers' inserts and autovacuum included) ÷ events published in the window. "+
		"Targets (not enforced): claim p99 of the last window ≤ 2× the first; backlog ≤ 10 s of offered load.\n\n",
		human(h.Rate), human(h.Aggregates), h.Payload, time.Duration(h.Window*float64(time.Second)))
	for _, r := range h.Runs {
		fmt.Fprintf(b, "#### %s, ordering %s, %v\n\n%s. %s.\n\n", r.Horizon, r.Ordering,
			time.Duration(r.Seconds*float64(time.Second)).Round(time.Second), strings.ToUpper(horizonWhat[r.Horizon][:1])+horizonWhat[r.Horizon][1:], r.verdict())
		b.WriteString("| window | claim mean | claim p50 | claim p99 | mark p50 | offered/s | published/s | backlog max | backlog end | dead tuples | relay CPU µs/event | DB CPU µs/event |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, w := range r.Windows {
			fmt.Fprintf(b, "| %s | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.0f | %.0f | %d | %d | %d | %.0f | %.0f |\n", w.label(), w.ClaimMean, w.ClaimP50, w.ClaimP99,
				w.MarkP50, w.OfferedPS, w.PerSecond, w.BacklogMax, w.Backlog, w.DeadTuples, w.RelayCPUus, w.DBCPUus)
		}
		b.WriteString("\n")
		if r.Explain != "" {
			b.WriteString("The claim at the end of the run, `EXPLAIN (ANALYZE, BUFFERS)`, rolled back:\n\n```\n" + r.Explain + "```\n\n")
		}
	}
}

func (h *horizonResults) plot(dir string) error {
	var lines []series
	for _, r := range h.Runs {
		if r.Horizon == "writer" {
			continue
		}
		s := series{Name: r.Horizon + ", ordering " + r.Ordering}
		for _, w := range r.Windows {
			s.X = append(s.X, (w.Start+w.Seconds)/60)
			s.Y = append(s.Y, w.ClaimP99)
		}
		lines = append(lines, s)
	}
	svg := lineChart("Claim p99 per window, with and without a held snapshot", "minutes into the run", "ms (bucket-interpolated)", false, lines)
	if svg == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "horizon-claim.svg"), []byte(svg), 0o644)
}
