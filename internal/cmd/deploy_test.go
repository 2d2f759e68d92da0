package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// notExportedYet names metrics that the shipped dashboard and rules use before a
// relay exports them, with why. Prometheus makes up `up` itself.
var notExportedYet = map[string]string{
	"up": "synthesized by Prometheus per scrape target",
	// franz-go's error counters have a series from a broker's first error on.
	"outboxtop_kafka_connect_errors_total": "after the first failed connect",
	"outboxtop_kafka_read_errors_total":    "after the first failed read",
	"outboxtop_kafka_write_errors_total":   "after the first failed write",
	// Per consumer group and topic: only once a group reads an outbox topic (the
	// age only while it is behind); lagmetrics_test.go scrapes them with a group.
	"outboxtop_consumer_lag_records":                   "once a consumer group reads an outbox topic",
	"outboxtop_consumer_oldest_unconsumed_age_seconds": "while a consumer group is behind on an outbox topic",
}

// TestDeployKitNamesOnlyExportedMetrics runs a headless relay against kfake and
// the test PostgreSQL, scrapes its /metrics while it drains a backlog, and checks
// that franz-go's producer metrics are there with bounded labels, and that every
// PromQL expression of the Grafana dashboard parses and names only metrics the
// relay exports, as does every metric the alert rules name.
func TestDeployKitNamesOnlyExportedMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, dsn := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	const n = 20_000
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 500), 'OrderPlaced', jsonb_build_object('n', g)
		FROM generate_series(1, $1) g`, n); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	var stderr logBuffer
	go func() {
		done <- Run(ctx, []string{"--headless", "--dsn", dsn, "--brokers", strings.Join(k.Brokers, ","),
			"--topic-template", k.Prefix + "outbox.{aggregate_type}", "--log-level", "info",
			"--metrics-addr", "127.0.0.1:0", "--archive-after", "1h", "--retention-interval", "1s",
			"--shutdown-timeout", "5s"}, IO{Out: &bytes.Buffer{}, Err: &stderr, Getenv: func(string) string { return "" }})
	}()
	// Scrape during the drain until franz-go has produced; then once more after the
	// last event is published, when the backlog gauges and housekeeping have run.
	addr := metricsAddr(t, &stderr)
	var during string
	testenv.WaitFor(t, time.Minute, "the relay to produce to Kafka", func() bool {
		during = get(t, addr, "/metrics")
		return strings.Contains(during, "outboxtop_kafka_produce_records_total{")
	})
	testenv.WaitFor(t, time.Minute, "every event published", func() bool {
		var left int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE published_at IS NULL`).Scan(&left)
		return err == nil && left == 0
	})
	var metrics string
	testenv.WaitFor(t, 30*time.Second, "a housekeeping round", func() bool {
		metrics = get(t, addr, "/metrics")
		return strings.Contains(metrics, `outboxtop_housekeeping_rounds_total{result="ok"} `) &&
			!strings.Contains(metrics, `outboxtop_housekeeping_rounds_total{result="ok"} 0`)
	})
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("headless relay: exit %d: %s", code, stderr.String())
	}

	exported := metricNames(metrics)
	for _, want := range []string{
		"outboxtop_kafka_connects_total", "outboxtop_kafka_produce_records_total",
		"outboxtop_kafka_produce_batches_total", "outboxtop_kafka_buffered_produce_records_total",
		"outboxtop_kafka_request_duration_e2e_seconds_bucket", "outboxtop_kafka_write_bytes_total",
		"outboxtop_blocked_aggregates", "outboxtop_table_dead_tuples", "outboxtop_housekeeping_last_success_timestamp_seconds",
	} {
		if !exported[want] {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(during, "outboxtop_kafka_buffered_produce_records_total") {
		t.Errorf("franz-go's buffered records not exported during the drain")
	}
	// Bounded labels: franz-go's metrics carry a broker's node_id at most, never a topic.
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "outboxtop_kafka_") && strings.Contains(line, "topic=") {
			t.Errorf("unbounded label: %s", line)
		}
	}

	used := map[string][]string{} // metric → where it is used
	raw, err := os.ReadFile("../../deploy/grafana/outboxtop.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			// Grafana's variables, as Grafana substitutes them.
			q := strings.NewReplacer("$__rate_interval", "1m", "$job", "outboxtop").Replace(tg.Expr)
			e, err := metricsql.Parse(q)
			if err != nil {
				t.Errorf("panel %q: %v\n%s", p.Title, err, tg.Expr)
				continue
			}
			metricsql.VisitAll(e, func(x metricsql.Expr) {
				if me, ok := x.(*metricsql.MetricExpr); ok {
					for _, lfs := range me.LabelFilterss {
						for _, lf := range lfs {
							if lf.Label == "__name__" {
								used[lf.Value] = append(used[lf.Value], "dashboard panel "+p.Title)
							}
						}
					}
				}
			})
		}
	}
	if exprs < 20 {
		t.Fatalf("only %d expressions in the dashboard", exprs)
	}
	// The rules' expressions are parsed by promtool (scripts/test); here only their
	// metric names are checked (recording rules are named outboxtop:…).
	rules, err := os.ReadFile("../../deploy/prometheus/outboxtop-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\boutboxtop_[A-Za-z0-9_]+`).FindAllString(string(rules), -1) {
		used[m] = append(used[m], "alert rules")
	}
	used["up"] = append(used["up"], "alert rules")
	for m, where := range used {
		if !exported[m] && notExportedYet[m] == "" {
			t.Errorf("%s (used in %s) is not on a live relay's /metrics", m, strings.Join(slices.Compact(where), ", "))
		}
	}
}

// metricNames are the sample names in a text exposition.
func metricNames(exposition string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}
