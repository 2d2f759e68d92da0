package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/relay"
)

// The incident profile: the same healthy backlog drained on a clean table and
// beside a storm of trouble on other aggregates.
const (
	healthyEvents  = 100_000
	healthyAggs    = 5_000
	failedEvents   = 1_000_000 // dead, 10 per aggregate
	failedAggs     = 100_000
	scheduledRows  = 200_000 // retries due in an hour, 4 per aggregate
	scheduledAggs  = 50_000
	incidentRepeat = 3
)

// incidentRun is one measurement of the incident profile.
type incidentRun struct {
	Table     string  `json:"table"` // clean, storm, storm-cold
	What      string  `json:"what"`  // relay, ceiling, seed-reference
	Ordering  string  `json:"ordering"`
	Procs     int     `json:"procs"`
	Events    int     `json:"events"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"events_per_second"`
	ClaimP50  float64 `json:"claim_p50_ms,omitempty"`
	ClaimP99  float64 `json:"claim_p99_ms,omitempty"`
}

type incidentResults struct {
	Runs    []incidentRun `json:"runs"`
	Explain string        `json:"explain"`
}

// incidentTemplate loads the healthy backlog and, for storm, the trouble beside
// it. Storm rows are older than the healthy ones (the incident began an hour
// ago) and spread through seq. Each dead or scheduled aggregate also has one
// ready event waiting behind its blocker; settled says whether the relay has
// already seen those (blocked, as a relay that ran through the incident leaves
// them) or meets them for the first time (storm-cold).
func (e *env) incidentTemplate(ctx context.Context, table string) (string, error) {
	name := "incident_" + strings.ReplaceAll(table, "-", "_")
	if _, ok := e.templates[name]; ok {
		return name, nil
	}
	tc, err := e.migratedDB(ctx, name)
	if err != nil {
		return "", err
	}
	defer tc.Close(ctx)
	start := time.Now()
	hot := healthyEvents / 10
	rows := `
		SELECT 'order' AS typ,
		       CASE WHEN g % (` + strconv.Itoa(healthyEvents/hot) + `) = 0 THEN 'hot' ELSE 'o-' || (g % ` + strconv.Itoa(healthyAggs) + `) END AS agg,
		       jsonb_build_object('n', g, 'pad', repeat('x', 216)) AS payload,
		       now() AS avail, NULL::timestamptz AS failed, 0 AS attempts, random() AS k
		FROM generate_series(1, ` + strconv.Itoa(healthyEvents) + `) g`
	if table != "clean" {
		rows += `
		UNION ALL
		SELECT 'payment', 'f-' || (g % ` + strconv.Itoa(failedAggs) + `), jsonb_build_object('n', g),
		       now() - interval '1 hour', now() - interval '30 minutes', 1, random()
		FROM generate_series(1, ` + strconv.Itoa(failedEvents) + `) g
		UNION ALL
		SELECT 'invoice', 's-' || (g % ` + strconv.Itoa(scheduledAggs) + `), jsonb_build_object('n', g),
		       now() + interval '1 hour', NULL, 3, random()
		FROM generate_series(1, ` + strconv.Itoa(scheduledRows) + `) g
		UNION ALL
		SELECT 'payment', 'f-' || g, jsonb_build_object('n', g), now() - interval '1 hour', NULL, 0, 2
		FROM generate_series(0, ` + strconv.Itoa(failedAggs-1) + `) g
		UNION ALL
		SELECT 'invoice', 's-' || g, jsonb_build_object('n', g), now() - interval '1 hour', NULL, 0, 2
		FROM generate_series(0, ` + strconv.Itoa(scheduledAggs-1) + `) g`
	}
	// k orders seq: healthy and blocking rows interleaved, each waiting row after
	// its aggregate's blockers.
	if _, err := tc.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, failed_at, attempts, last_error)
		SELECT gen_random_uuid(), typ, agg, 'Happened', payload, avail, failed, attempts,
		       CASE WHEN failed IS NOT NULL THEN 'kafka: TOPIC_AUTHORIZATION_FAILED' WHEN attempts > 0 THEN 'kafka: UNKNOWN_TOPIC_OR_PARTITION' END
		FROM (`+rows+`) r ORDER BY k`); err != nil {
		return "", err
	}
	if table == "storm" {
		// What the ordered claim leaves behind after meeting the waiting rows.
		if _, err := tc.Exec(ctx, `UPDATE outbox_event SET blocked = true
			WHERE aggregate_type IN ('payment', 'invoice') AND failed_at IS NULL AND available_at <= now()`); err != nil {
			return "", err
		}
	}
	for _, s := range []string{"VACUUM ANALYZE outbox_event", "CHECKPOINT"} {
		if _, err := tc.Exec(ctx, s); err != nil {
			return "", err
		}
	}
	var n int
	_ = tc.QueryRow(ctx, "SELECT count(*) FROM outbox_event").Scan(&n)
	logf("loaded incident table %s (%d rows) in %v", table, n, time.Since(start).Round(time.Millisecond))
	e.templates[name] = name
	return name, nil
}

func (e *env) incidentClone(ctx context.Context, table string) (string, func(), error) {
	tmpl, err := e.incidentTemplate(ctx, table)
	if err != nil {
		return "", nil, err
	}
	return e.cloneOf(ctx, tmpl)
}

// incident runs the incident profile.
func (e *env) incident(ctx context.Context) error {
	res := &incidentResults{}
	e.results.Incident = res
	add := func(r incidentRun) {
		res.Runs = append(res.Runs, r)
		logf("incident %s %s %s ×%d: %.0f events/s (claim p50 %.1f ms, p99 %.1f ms)", r.Table, r.What, r.Ordering, r.Procs, r.PerSecond, r.ClaimP50, r.ClaimP99)
	}
	for i := 0; i < incidentRepeat; i++ {
		r, err := e.seedReference(ctx)
		if err != nil {
			return err
		}
		add(r)
		for _, table := range []string{"clean", "storm"} {
			for _, ord := range []string{"aggregate", "none"} {
				r, err := e.incidentRelays(ctx, table, ord, 1)
				if err != nil {
					return err
				}
				add(r)
			}
		}
	}
	for _, table := range []string{"clean", "storm"} {
		r, err := e.incidentCeiling(ctx, table)
		if err != nil {
			return err
		}
		add(r)
	}
	for i := 0; i < incidentRepeat; i++ {
		r, err := e.incidentRelays(ctx, "clean", "aggregate", 2)
		if err != nil {
			return err
		}
		add(r)
	}
	r, err := e.incidentRelays(ctx, "storm-cold", "aggregate", 1)
	if err != nil {
		return err
	}
	add(r)
	res.Explain, err = e.incidentExplain(ctx)
	return err
}

// incidentRelays runs procs `outboxtop --headless` processes on a fresh copy of
// table and times them from start until every healthy event is published (read
// from their /metrics, so the measurement costs the database nothing).
func (e *env) incidentRelays(ctx context.Context, table, ordering string, procs int) (incidentRun, error) {
	dsn, drop, err := e.incidentClone(ctx, table)
	if err != nil {
		return incidentRun{}, err
	}
	defer drop()
	if ordering == "none" && table != "clean" {
		// Without ordering nothing waits: the rows that wait in ordered mode would
		// have been tried and scheduled again like the others.
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return incidentRun{}, err
		}
		_, err = conn.Exec(ctx, `UPDATE outbox_event SET blocked = false, attempts = 1, available_at = now() + interval '1 hour'
			WHERE aggregate_type IN ('payment', 'invoice') AND failed_at IS NULL AND available_at <= now()`)
		if err == nil {
			_, err = conn.Exec(ctx, "VACUUM ANALYZE outbox_event")
		}
		conn.Close(ctx)
		if err != nil {
			return incidentRun{}, err
		}
	}
	k, err := e.newKafka()
	if err != nil {
		return incidentRun{}, err
	}
	defer k.Close()
	var cmds []*exec.Cmd
	var addrs []string
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
	}()
	start := time.Now()
	for i := 0; i < procs; i++ {
		addr, err := freeAddr()
		if err != nil {
			return incidentRun{}, err
		}
		c := exec.Command(e.binary, "--headless", "--dsn", dsn, "--brokers", strings.Join(k.ListenAddrs(), ","),
			"--ordering", ordering, "--batch-size", fmt.Sprint(defaultBatch), "--log-level", "warn",
			"--metrics-addr", addr)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			return incidentRun{}, err
		}
		cmds, addrs = append(cmds, c), append(addrs, addr)
	}
	deadline := time.Now().Add(5 * time.Minute)
	// When each tenth of the backlog was published: a drain whose last tenths
	// take longest is limited by one aggregate (the hot one), not the claim.
	var tenths []string
	for {
		n := 0
		for _, a := range addrs {
			n += int(scrape(a)["outboxtop_relay_published_total"])
		}
		for len(tenths) < 10 && n >= (len(tenths)+1)*healthyEvents/10 {
			tenths = append(tenths, fmt.Sprintf("%.1f", time.Since(start).Seconds()))
		}
		if n >= healthyEvents {
			logf("incident %s %s ×%d: tenths published at %s s", table, ordering, procs, strings.Join(tenths, " "))
			break
		}
		if time.Now().After(deadline) {
			return incidentRun{}, fmt.Errorf("%s %s: %d of %d published after 5 minutes", table, ordering, n, healthyEvents)
		}
		// Each scrape costs the relay a /metrics rendering: often enough for a
		// 1% reading of a 5 s drain, not so often that it slows what it times.
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	// The relays' own claim durations, every claim of the run (the last, empty
	// ones too), from their histogram.
	buckets := map[float64]float64{}
	for _, a := range addrs {
		addBuckets(scrape(a), "outboxtop_relay_claim_seconds", buckets)
	}
	return incidentRun{Table: table, What: "relay", Ordering: ordering, Procs: procs, Events: healthyEvents,
		Seconds: elapsed.Seconds(), PerSecond: healthyEvents / elapsed.Seconds(),
		ClaimP50: histogramQuantileMs(buckets, 0.50), ClaimP99: histogramQuantileMs(buckets, 0.99)}, nil
}

// addBuckets adds the cumulative bucket counts of histogram name in a relay's
// samples (scrape) to into, by upper bound in seconds.
func addBuckets(samples map[string]float64, name string, into map[float64]float64) {
	for series, n := range samples {
		le, ok := strings.CutPrefix(series, name+`_bucket{le="`)
		if !ok {
			continue
		}
		if bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64); err == nil {
			into[bound] += n
		}
	}
}

// histogramQuantileMs is PromQL's histogram_quantile over cumulative buckets
// (seconds): the q-quantile, linear within the bucket it falls in, in
// milliseconds; 0 without observations. A quantile in the +Inf bucket is the
// highest finite bound.
func histogramQuantileMs(buckets map[float64]float64, q float64) float64 {
	bounds := slices.Sorted(maps.Keys(buckets))
	if len(bounds) == 0 || buckets[bounds[len(bounds)-1]] == 0 {
		return 0
	}
	rank := q * buckets[bounds[len(bounds)-1]]
	lower, below := 0.0, 0.0
	for _, b := range bounds {
		n := buckets[b]
		if n >= rank {
			if math.IsInf(b, 1) {
				return lower * 1000
			}
			return (lower + (b-lower)*(rank-below)/(n-below)) * 1000
		}
		lower, below = b, n
	}
	return lower * 1000
}

// scrape reads a relay's /metrics: each sample's value by its series (the
// name and labels as written); nil until the relay answers.
func scrape(addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	samples := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			samples[line[:i]] = v
		}
	}
	return samples
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// incidentCeiling is the relay's own claim and mark with no broker, best of 1–2
// loops, with every claim timed.
func (e *env) incidentCeiling(ctx context.Context, table string) (incidentRun, error) {
	var best incidentRun
	tmpl, err := e.incidentTemplate(ctx, table)
	if err != nil {
		return best, err
	}
	for loops := 1; loops <= 2; loops++ {
		var res relay.CeilingResult
		if err := e.onCopy(ctx, tmpl, func(pool *pgxpool.Pool) (err error) {
			res, err = relay.MeasureCeiling(ctx, pool, relay.Config{Ordering: relay.OrderAggregate, BatchSize: defaultBatch}, loops)
			return err
		}); err != nil {
			return best, err
		}
		if res.Events != healthyEvents {
			return best, fmt.Errorf("ceiling on %s marked %d of %d", table, res.Events, healthyEvents)
		}
		r := incidentRun{Table: table, What: "ceiling", Ordering: "aggregate", Procs: loops, Events: res.Events,
			Seconds: res.Elapsed.Seconds(), PerSecond: float64(res.Events) / res.Elapsed.Seconds()}
		r.ClaimP50, r.ClaimP99 = quantileMs(res.Claims, 0.50), quantileMs(res.Claims, 0.99)
		if r.PerSecond > best.PerSecond {
			best = r
		}
	}
	return best, nil
}

func quantileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / float64(time.Millisecond)
}

// seedReference is the physical reference a user compares with: the seed's own
// claim (batch 1,000) and a mark by event_id and lease token, no
// broker, on the clean table; best of 1–4 loops.
func (e *env) seedReference(ctx context.Context) (incidentRun, error) {
	claim := seedClaim(defaultBatch)
	const mark = `UPDATE outbox_event SET published_at = now()
WHERE event_id = ANY($1::uuid[]) AND lease_token = $2`
	var best incidentRun
	tmpl, err := e.incidentTemplate(ctx, "clean")
	if err != nil {
		return best, err
	}
	for loops := 1; loops <= 4; loops++ {
		total := 0
		var elapsed time.Duration
		if err := e.onCopy(ctx, tmpl, func(pool *pgxpool.Pool) error {
			var err error
			total, elapsed, err = seedLoops(ctx, pool, claim, mark, loops)
			return err
		}); err != nil {
			return best, err
		}
		if total != healthyEvents {
			return best, fmt.Errorf("seed reference marked %d of %d", total, healthyEvents)
		}
		if rate := float64(total) / elapsed.Seconds(); rate > best.PerSecond {
			best = incidentRun{Table: "clean", What: "seed-reference", Ordering: "none", Procs: loops, Events: total,
				Seconds: elapsed.Seconds(), PerSecond: rate}
		}
	}
	return best, nil
}

// seedLoops runs loops concurrent loops of the seed's claim and mark on pool
// until a claim finds nothing, and returns the events marked and the time taken.
func seedLoops(ctx context.Context, pool *pgxpool.Pool, claim, mark string, loops int) (int, time.Duration, error) {
	start := time.Now()
	errs := make(chan error, loops)
	counts := make(chan int, loops)
	for l := 0; l < loops; l++ {
		go func() {
			n := 0
			defer func() { counts <- n }()
			for {
				token := uuid.New()
				rows, err := pool.Query(ctx, claim, token)
				if err != nil {
					errs <- err
					return
				}
				var ids []uuid.UUID
				for rows.Next() {
					var id uuid.UUID
					var typ, agg string
					var payload []byte
					if err := rows.Scan(&id, &typ, &agg, &payload); err != nil {
						rows.Close()
						errs <- err
						return
					}
					ids = append(ids, id)
				}
				rows.Close()
				if len(ids) == 0 {
					errs <- rows.Err()
					return
				}
				if _, err := pool.Exec(ctx, mark, ids, token); err != nil {
					errs <- err
					return
				}
				n += len(ids)
			}
		}()
	}
	total := 0
	var firstErr error
	for l := 0; l < loops; l++ {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
		total += <-counts
	}
	return total, time.Since(start), firstErr
}

// incidentExplain is EXPLAIN (ANALYZE, BUFFERS) of one ordered claim on the storm
// table, rolled back.
func (e *env) incidentExplain(ctx context.Context) (string, error) {
	dsn, drop, err := e.incidentClone(ctx, "storm")
	if err != nil {
		return "", err
	}
	defer drop()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	claim, err := os.ReadFile("relay/sql/claim_ordered.sql")
	if err != nil {
		return "", err
	}
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+pgsql.Qualify(string(claim), "public"),
		pgx.StrictNamedArgs{"batch": defaultBatch, "token": uuid.New(), "lease_ms": 60000, "holder": "bench:1", "skip_types": []string{}, "skip_ids": []string{},
			// A relay's first claim: from the start of the index, no earlier snapshot, no hints.
			"from_at": pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, "from_seq": int64(math.MinInt64),
			"xmax": (*uint64)(nil), "xip": []uint64{}, "hints": "{}", "max_payload": 1_000_000, "batch_bytes": 16 << 20})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		b.WriteString(line + "\n")
	}
	return b.String(), rows.Err()
}

func (r *incidentResults) markdown(b *strings.Builder) {
	b.WriteString("### Incident: the healthy backlog clean and beside the storm\n\n")
	fmt.Fprintf(b, "Healthy: %s events, %s aggregates, 10%% in one hot aggregate. Storm: %s failed (%s aggregates), %s scheduled retries (%s aggregates), and one waiting event behind each.\n\n",
		human(healthyEvents), human(healthyAggs), human(failedEvents), human(failedAggs), human(scheduledRows), human(scheduledAggs))
	b.WriteString("| table | what | ordering | relays / loops | runs | median events/s | min–max | claim p50 | claim p99 |\n|---|---|---|---:|---:|---:|---|---:|---:|\n")
	type key struct {
		table, what, ord string
		procs            int
	}
	var order []key
	groups := map[key][]incidentRun{}
	for _, run := range r.Runs {
		k := key{run.Table, run.What, run.Ordering, run.Procs}
		if run.What != "relay" {
			k.procs = 0
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], run)
	}
	for _, k := range order {
		runs := groups[k]
		rates := make([]float64, len(runs))
		var p50, p99 float64
		for i, run := range runs {
			rates[i] = run.PerSecond
			p50, p99 = max(p50, run.ClaimP50), max(p99, run.ClaimP99)
		}
		slices.Sort(rates)
		procs := fmt.Sprint(k.procs)
		if k.procs == 0 {
			procs = "best of loops"
		}
		claims := [2]string{"", ""}
		if p99 > 0 {
			claims = [2]string{fmt.Sprintf("%.1f ms", p50), fmt.Sprintf("%.1f ms", p99)}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %.0f | %.0f–%.0f | %s | %s |\n", k.table, k.what, k.ord, procs,
			len(runs), rates[len(rates)/2], rates[0], rates[len(rates)-1], claims[0], claims[1])
	}
	b.WriteString("\n```\n" + r.Explain + "```\n\n")
}
