package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/migrations"
)

// The producer part: what adopting outboxtop costs an application's writers,
// measured with pgbench on the seed's plain table, on a fresh migrate and on the
// seed's table upgraded in place, alternated round by round.
var (
	producerFor    = flag.Duration("producer-for", 30*time.Second, "producer part: length of each pgbench run")
	producerRounds = flag.Int("producer-rounds", 3, "producer part: rounds, each running every database once")
)

const (
	producerClients = 16
	producerThreads = 4
	producerOrders  = 100_000
	producerBacklog = 50_000 // unpublished rows in the seed's table when it is upgraded
	producerPayload = `{"order_id": ":aid", "status": "confirmed", "currency": "EUR", "total_cents": 12990, "items": 3, "customer": "c-000042", "channel": "web", "note": "producer bench"}`
)

const seedDDL = `
CREATE TABLE outbox_event (
    event_id uuid PRIMARY KEY, aggregate_type text NOT NULL, aggregate_id text NOT NULL,
    event_type text NOT NULL, payload jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), available_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0, lease_token uuid, lease_until timestamptz, published_at timestamptz);
CREATE INDEX outbox_ready_idx ON outbox_event (available_at, created_at, event_id) WHERE published_at IS NULL;
CREATE TABLE consumed_event (consumer_name text NOT NULL, event_id uuid NOT NULL, PRIMARY KEY (consumer_name, event_id));`

const ordersDDL = `
CREATE TABLE orders (id int PRIMARY KEY, status text, version int NOT NULL DEFAULT 0);
INSERT INTO orders (id, status) SELECT g, 'new' FROM generate_series(1, 100000) g;`

var producerDBs = []string{"seed", "fresh", "upgraded"}

var errInPlace = errors.New("migrate in place failed")

var producerShapes = []struct {
	name, what string
	aids       map[string]int // variable → random(1, n), updated and inserted in this order
}{
	{"random", "one of 100k orders", map[string]int{"aid": producerOrders}},
	{"hot", "one of 10 hot orders", map[string]int{"aid": 10}},
	{"pair", "two of 100k orders, in random order", map[string]int{"aid1": producerOrders, "aid2": producerOrders}},
}

func producerScript(aids map[string]int) string {
	var set, body strings.Builder
	for _, aid := range slices.Sorted(maps.Keys(aids)) {
		fmt.Fprintf(&set, "\\set %s random(1, %d)\n", aid, aids[aid])
		fmt.Fprintf(&body, "UPDATE orders SET status = 'confirmed', version = version + 1 WHERE id = :%s;\n", aid)
		fmt.Fprintf(&body, "INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) "+
			"VALUES (gen_random_uuid(), 'order', :%s, 'OrderConfirmed', '%s');\n", aid, strings.ReplaceAll(producerPayload, ":aid", ":"+aid))
	}
	return set.String() + "BEGIN;\n" + body.String() + "COMMIT;\n"
}

// producerRun is one pgbench run of one shape on one database.
type producerRun struct {
	Shape     string  `json:"shape"`
	Database  string  `json:"database"`
	Round     int     `json:"round"`
	TPS       float64 `json:"tps"`
	Txns      int     `json:"transactions"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	Over1s    int     `json:"over_1s"` // transactions that took more than a second
	Failed    int     `json:"failed"`
	Deadlocks int     `json:"deadlock_failures"`
	Aborted   int     `json:"aborted_clients"`
}

type producerResults struct {
	Seconds    float64             `json:"seconds"`
	Rounds     int                 `json:"rounds"`
	Clients    int                 `json:"clients"`
	Backlog    int                 `json:"upgraded_backlog"`
	Maintained map[string][]string `json:"maintained"`           // database → indexes and triggers an INSERT maintains
	Unmeasured map[string]string   `json:"unmeasured,omitempty"` // database → why it could not be made
	Weight     []weightRow         `json:"weight,omitempty"`
	Adopt      *adoptRun           `json:"adopt,omitempty"`
	Runs       []producerRun       `json:"runs"`
}

func (e *env) producer(ctx context.Context) error {
	secs := int(producerFor.Seconds())
	if secs < 1 || *producerRounds < 1 {
		return errors.New("--producer-for must be at least 1s and --producer-rounds at least 1")
	}
	pgbench := filepath.Join(e.cluster.BinDir(), "pgbench")
	if _, err := os.Stat(pgbench); err != nil {
		if pgbench, err = exec.LookPath("pgbench"); err != nil {
			return fmt.Errorf("pgbench not found in %s nor PATH", e.cluster.BinDir())
		}
	}
	res := &producerResults{Seconds: float64(secs), Rounds: *producerRounds, Clients: producerClients,
		Backlog: producerBacklog, Maintained: map[string][]string{}, Unmeasured: map[string]string{}}
	e.results.Producer = res
	conns := map[string]*pgx.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close(context.Background())
		}
	}()
	var dbs []string
	for _, db := range producerDBs {
		c, err := e.producerDB(ctx, db)
		if errors.Is(err, errInPlace) {
			logf("producer: %s not measured: %v", db, err)
			res.Unmeasured[db] = err.Error()
			continue
		} else if err != nil {
			return fmt.Errorf("database %s: %w", db, err)
		}
		conns[db], dbs = c, append(dbs, db)
		if res.Maintained[db], err = insertMaintains(ctx, c); err != nil {
			return err
		}
	}
	if conns["seed"] != nil && conns["fresh"] != nil {
		var err error
		if res.Weight, err = insertWeight(ctx, conns["seed"], conns["fresh"]); err != nil {
			return fmt.Errorf("the weight of an insert: %w", err)
		}
		logf("producer: the weight of an insert measured")
	}
	dir, err := os.MkdirTemp("", "bench-producer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	adoptScript := filepath.Join(dir, "adopt.sql")
	if err := os.WriteFile(adoptScript, []byte(producerScript(producerShapes[0].aids)), 0o644); err != nil {
		return err
	}
	if res.Adopt, err = e.adoptLive(ctx, pgbench, adoptScript, filepath.Join(dir, "adoptlog")); err != nil {
		return fmt.Errorf("adopting beside pgbench: %w", err)
	}
	logf("producer: migrate adopted the seed's tables in %.1f s beside pgbench: %d failed, slowest %.1f ms, %d above 1 s",
		res.Adopt.MigrateSeconds, res.Adopt.Failed+res.Adopt.Aborted, res.Adopt.MaxMs, res.Adopt.Over1s)
	for _, shape := range producerShapes {
		script := filepath.Join(dir, shape.name+".sql")
		if err := os.WriteFile(script, []byte(producerScript(shape.aids)), 0o644); err != nil {
			return err
		}
		for round := range res.Rounds {
			for i := range dbs {
				db := dbs[(i+round)%len(dbs)]
				for _, sql := range []string{"TRUNCATE outbox_event", "VACUUM ANALYZE orders", "CHECKPOINT"} {
					if _, err := conns[db].Exec(ctx, sql); err != nil {
						return fmt.Errorf("%s: %s: %w", db, sql, err)
					}
				}
				r, err := e.pgbench(ctx, pgbench, script, filepath.Join(dir, "log"), "producer_"+db, secs)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", shape.name, db, err)
				}
				r.Shape, r.Database, r.Round = shape.name, db, round+1
				res.Runs = append(res.Runs, r)
				logf("producer %s on %s, round %d: %.0f tps, p50 %.2f ms, p99 %.2f ms, %d failed, %d aborted",
					shape.name, db, round+1, r.TPS, r.P50ms, r.P99ms, r.Failed, r.Aborted)
			}
		}
		if e.save != nil {
			if err := e.save(); err != nil {
				return err
			}
		}
	}
	var b strings.Builder
	res.markdown(&b)
	fmt.Print(b.String())
	return nil
}

// producerDB creates database producer_<which> with its orders and returns a
// connection to it.
func (e *env) producerDB(ctx context.Context, which string) (*pgx.Conn, error) {
	var c *pgx.Conn
	var err error
	if which == "fresh" {
		c, err = e.migratedDB(ctx, "producer_"+which)
	} else if c, err = e.plainDB(ctx, "producer_"+which); err == nil {
		_, err = c.Exec(ctx, seedDDL)
	}
	if err == nil {
		_, err = c.Exec(ctx, ordersDDL)
	}
	if err == nil && which == "upgraded" {
		start := time.Now()
		if err = seedBacklog(ctx, c); err == nil {
			if _, err = migrations.Apply(ctx, c, "public", nil); err != nil {
				err = fmt.Errorf("%w: %w", errInPlace, err)
			} else {
				logf("producer: upgraded the seed's table holding %s unpublished rows in %v", human(producerBacklog), time.Since(start).Round(time.Millisecond))
			}
		}
	}
	if err != nil && c != nil {
		c.Close(ctx)
	}
	return c, err
}

// seedBacklog puts producerBacklog unpublished events in c's seed table.
func seedBacklog(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', (g % $1 + 1)::text, 'OrderConfirmed', replace($2, ':aid', (g % $1 + 1)::text)::jsonb,
		       now() - ($3 - g) * interval '1 ms', now() - ($3 - g) * interval '1 ms'
		FROM generate_series(1, $3) g`, producerOrders, producerPayload, producerBacklog)
	return err
}

// adoptRun is pgbench's random shape writing the seed's tables while migrate
// adopts them.
type adoptRun struct {
	producerRun
	MigrateSeconds float64 `json:"migrate_seconds"`
}

// adoptLive measures adoptRun: the seed's table holding producerBacklog
// events, pgbench writing it for adoptFor, migrate starting adoptAfter in.
func (e *env) adoptLive(ctx context.Context, pgbench, script, logPrefix string) (*adoptRun, error) {
	const adoptFor, adoptAfter = 40, 5 * time.Second
	c, err := e.plainDB(ctx, "producer_adopt")
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	for _, sql := range []string{seedDDL, ordersDDL} {
		if _, err := c.Exec(ctx, sql); err != nil {
			return nil, err
		}
	}
	if err := seedBacklog(ctx, c); err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	var took time.Duration
	go func() {
		time.Sleep(adoptAfter)
		start := time.Now()
		_, _, err := migrations.MigrateWith(ctx, c, "public", migrations.Options{LockWait: time.Minute})
		took = time.Since(start)
		done <- err
	}()
	r, err := e.pgbench(ctx, pgbench, script, logPrefix, "producer_adopt", adoptFor)
	if merr := <-done; merr != nil {
		return nil, fmt.Errorf("migrate beside pgbench: %w", merr)
	}
	if err != nil {
		return nil, err
	}
	return &adoptRun{producerRun: r, MigrateSeconds: took.Seconds()}, nil
}

// plainDB creates database name with no outboxtop schema and returns a
// connection to it.
func (e *env) plainDB(ctx context.Context, name string) (*pgx.Conn, error) {
	admin, err := e.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	return pgx.Connect(ctx, e.cluster.DSN(name))
}

// insertMaintains lists the indexes (with their predicates) and the insert
// triggers on outbox_event.
func insertMaintains(ctx context.Context, c *pgx.Conn) ([]string, error) {
	rows, err := c.Query(ctx, `
		SELECT 'index ' || i.indexrelid::regclass || ': ' || split_part(pg_get_indexdef(i.indexrelid), ' USING ', 2)
		FROM pg_index i WHERE i.indrelid = 'outbox_event'::regclass
		UNION ALL
		SELECT 'trigger ' || t.tgname || ': ' || regexp_replace(pg_get_triggerdef(t.oid), '^CREATE (CONSTRAINT )?TRIGGER \S+ ', '')
		FROM pg_trigger t WHERE t.tgrelid = 'outbox_event'::regclass AND NOT t.tgisinternal
		  AND t.tgtype & 4 <> 0 AND t.tgenabled <> 'D'
		ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

var (
	pgbenchTPS      = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	pgbenchTxns     = regexp.MustCompile(`(?m)^number of transactions actually processed: (\d+)`)
	pgbenchFailed   = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
	pgbenchDeadlock = regexp.MustCompile(`(?m)^number of deadlock failures: (\d+)`)
	pgbenchAborted  = regexp.MustCompile(`client \d+ script \d+ aborted`)
)

// pgbench runs script against database db for secs seconds and reads its
// summary and its per-transaction logs.
func (e *env) pgbench(ctx context.Context, bin, script, logPrefix, db string, secs int) (producerRun, error) {
	var r producerRun
	cmd := exec.CommandContext(ctx, bin, "-n", "-c", strconv.Itoa(producerClients), "-j", strconv.Itoa(producerThreads),
		"-T", strconv.Itoa(secs), "-f", script, "-l", "--log-prefix", logPrefix, "--failures-detailed",
		"-h", "127.0.0.1", "-p", strconv.Itoa(e.cluster.Port()), "-U", "postgres", db)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	m := pgbenchTPS.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("pgbench: %v: %s%s", err, out, truncate(stderr.String(), 2000))
	}
	r.TPS, _ = strconv.ParseFloat(m[1], 64)
	for re, v := range map[*regexp.Regexp]*int{pgbenchTxns: &r.Txns, pgbenchFailed: &r.Failed, pgbenchDeadlock: &r.Deadlocks} {
		if m := re.FindStringSubmatch(out); m != nil {
			*v, _ = strconv.Atoi(m[1])
		}
	}
	r.Aborted = len(pgbenchAborted.FindAllString(stderr.String(), -1))
	logs, err := filepath.Glob(logPrefix + ".*")
	if err != nil {
		return r, err
	}
	var lat []time.Duration
	for _, name := range logs {
		text, err := os.ReadFile(name)
		if err != nil {
			return r, err
		}
		os.Remove(name)
		// client_id transaction_no time script_no time_epoch time_us; time is
		// "failed", "deadlock" or "serialization" for a failed transaction.
		for line := range strings.Lines(string(text)) {
			if f := strings.Fields(line); len(f) >= 3 {
				if us, err := strconv.ParseInt(f[2], 10, 64); err == nil {
					lat = append(lat, time.Duration(us)*time.Microsecond)
				}
			}
		}
	}
	r.P50ms, r.P99ms = quantileMs(lat, 0.50), quantileMs(lat, 0.99)
	for _, d := range lat {
		r.MaxMs = max(r.MaxMs, float64(d)/float64(time.Millisecond))
		if d > time.Second {
			r.Over1s++
		}
	}
	return r, nil
}

func (p *producerResults) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "### Producer cost (pgbench, %d clients, -j %d, %.0f s × %d rounds, databases alternated)\n\n",
		p.Clients, producerThreads, p.Seconds, p.Rounds)
	fmt.Fprintf(b, "Each transaction updates an order and inserts its event: seed is the seed's plain table, fresh a database `migrate` made, "+
		"upgraded the seed's table migrated in place under %s unpublished rows. outbox_event is truncated before each run. "+
		"p50/p99 from pgbench's per-transaction log, the median over rounds; errors are failed transactions and aborted clients over all rounds.\n\n", human(p.Backlog))
	b.WriteString("| shape | table | tps by round | median tps | × seed | p50 | p99 | p99 × seed | errors |\n|---|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, shape := range producerShapes {
		var seedTPS, seedP99 float64
		for _, db := range producerDBs {
			var tps, p50, p99 []float64
			var failed, deadlocks, aborted int
			for _, r := range p.Runs {
				if r.Shape == shape.name && r.Database == db {
					tps, p50, p99 = append(tps, r.TPS), append(p50, r.P50ms), append(p99, r.P99ms)
					failed, deadlocks, aborted = failed+r.Failed, deadlocks+r.Deadlocks, aborted+r.Aborted
				}
			}
			if len(tps) == 0 {
				continue
			}
			mt, m99 := median(tps), median(p99)
			if db == "seed" {
				seedTPS, seedP99 = mt, m99
			}
			rounds := make([]string, len(tps))
			for i, t := range tps {
				rounds[i] = fmt.Sprintf("%.0f", t)
			}
			errs := "0"
			if failed+aborted > 0 {
				errs = fmt.Sprintf("%d (%d deadlocks, %d clients aborted)", failed+aborted, deadlocks, aborted)
			}
			fmt.Fprintf(b, "| %s (%s) | %s | %s | %.0f | %s | %.2f ms | %.2f ms | %s | %s |\n", shape.name, shape.what, db,
				strings.Join(rounds, " / "), mt, ratio(mt, seedTPS), median(p50), m99, ratio(m99, seedP99), errs)
		}
	}
	b.WriteString("\n")
	if a := p.Adopt; a != nil {
		fmt.Fprintf(b, "Adoption on a live database: pgbench (the random shape, %d clients) writing the seed's tables, which hold %s unpublished events, "+
			"while `migrate` adopts them (in %.1f s): %.0f tps over %.0f s, %d failed transactions, %d clients aborted, slowest transaction %.1f ms, %d above 1 s.\n\n",
			p.Clients, human(producerBacklog), a.MigrateSeconds, a.TPS, 40.0, a.Failed, a.Aborted, a.MaxMs, a.Over1s)
	}
	weightMarkdown(b, p.Weight)
	b.WriteString("What an INSERT into outbox_event maintains:\n\n")
	for _, db := range producerDBs {
		if why, ok := p.Unmeasured[db]; ok {
			fmt.Fprintf(b, "- %s: not measured: %s\n", db, why)
			continue
		}
		fmt.Fprintf(b, "- %s:\n", db)
		for _, m := range p.Maintained[db] {
			fmt.Fprintf(b, "  - %s\n", m)
		}
		if !slices.ContainsFunc(p.Maintained[db], func(m string) bool { return strings.HasPrefix(m, "trigger ") }) {
			b.WriteString("  - no INSERT trigger\n")
		}
	}
	b.WriteString("\n")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func ratio(v, seed float64) string {
	if seed <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", v/seed)
}
