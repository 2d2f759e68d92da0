package app

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// gather scrapes c and returns its gauges by name, the labels' values in braces.
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	return got
}

// TestHorizonGauges: with nothing open the horizon's gauges read 0 and no
// holder series is exported; a repeatable-read report left idle in
// transaction is the one holder_info series, with its age and xmin age.
func TestHorizonGauges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	in, err := inspect.New(pool, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	c := newHorizonCollector(in)
	got := gather(t, c)
	if got["outboxtop_xmin_horizon_age_seconds"] != 0 || got["outboxtop_xmin_horizon_holders"] != 0 || len(got) != 3 {
		t.Fatalf("nothing open: %v", got)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "nightly-report"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{`BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT count(*) FROM outbox_event`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// An xid handed out after the report's snapshot: its xmin is one transaction old.
	if _, err := pool.Exec(ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	c.cache.Expire()
	got = gather(t, c)
	info := fmt.Sprintf("outboxtop_xmin_horizon_holder_info{application=nightly-report}{kind=session}{pid=%d}{user=postgres}", conn.PgConn().PID())
	if got["outboxtop_xmin_horizon_age_seconds"] < 0.05 || got["outboxtop_xmin_horizon_xid_age"] < 1 || got["outboxtop_xmin_horizon_holders"] != 1 || got[info] != 1 {
		t.Errorf("a report open 50 ms: %v (want %s)", got, info)
	}
}

// The alert rule's bounds are inspect's, the ones status and the console use.
func TestHorizonAlertUsesInspectsBounds(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../../deploy/prometheus/outboxtop-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`max by \(job\) \(outboxtop_xmin_horizon_age_seconds\) > %d\s+or max by \(job\) \(outboxtop_xmin_horizon_xid_age\) > 1e6`,
		int(inspect.HorizonWarnAfter.Seconds()))
	if !regexp.MustCompile(want).Match(rules) || inspect.HorizonHeldXids != 1e6 {
		t.Errorf("OutboxtopXminHorizonHeld does not read %s (HorizonHeldXids %d)", want, inspect.HorizonHeldXids)
	}
}
