package inspect_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// pubTable is a generated published history: the age in seconds of each
// published row at insertion, and the caps it is checked with.
type pubTable struct {
	ages          []float64
	window, total int64
	// unpublished rows beside them, and when statistics are taken (-1:
	// never, 0: before the rows, 1: after).
	unpublished int
	analyze     int
}

func (p pubTable) String() string {
	return fmt.Sprintf("window cap %d, total cap %d, %d unpublished, analyze %d, %d published at ages %v",
		p.window, p.total, p.unpublished, p.analyze, len(p.ages), p.ages)
}

// randomPubTable is bursts (many rows within a second or two, anywhere in the
// last two hours, one often in the last seconds), a steady trickle over the
// hour, recent rows, and old history days back, in random mixes.
func randomPubTable(r *rand.Rand) pubTable {
	p := pubTable{window: int64(1 + r.Intn(40)), total: int64(1 + r.Intn(120)), unpublished: r.Intn(20), analyze: r.Intn(3) - 1}
	if r.Intn(4) == 0 {
		p.total = 0 // the production cap: the total exact
	}
	if r.Intn(6) == 0 {
		p.window = 0 // the production cap: every window exact
	}
	for range r.Intn(4) { // bursts
		at := r.Float64() * 7200
		if r.Intn(2) == 0 {
			at = r.Float64() * 20
		}
		for range 1 + r.Intn(80) {
			p.ages = append(p.ages, max(at+r.Float64()*2, 0.5))
		}
	}
	for range r.Intn(40) { // a trickle over the hour
		p.ages = append(p.ages, r.Float64()*3600)
	}
	for range r.Intn(15) { // recent
		p.ages = append(p.ages, r.Float64()*10)
	}
	for range r.Intn(60) { // old history
		p.ages = append(p.ages, 86400+r.Float64()*864000)
	}
	return p
}

// loadPub replaces the outbox's rows with p's.
func loadPub(ctx context.Context, pool *pgxpool.Pool, p pubTable) error {
	if _, err := pool.Exec(ctx, "TRUNCATE outbox_event"); err != nil {
		return err
	}
	if p.analyze == 0 {
		if _, err := pool.Exec(ctx, "ANALYZE outbox_event"); err != nil {
			return err
		}
	}
	ages := make([]string, len(p.ages))
	for k, a := range p.ages {
		ages[k] = strconv.FormatFloat(a, 'f', 6, 64)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, published_at)
		SELECT gen_random_uuid(), 'a', 'p-' || k, 'E', '{}', now() - (a + 1) * interval '1 second',
			now() - (a + 1) * interval '1 second', now() - a * interval '1 second'
		FROM unnest($1::float8[]) WITH ORDINALITY AS x(a, k)`, ages); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'a', 'u-' || g, 'E', '{}' FROM generate_series(1, $1) g`, p.unpublished); err != nil {
		return err
	}
	if p.analyze == 1 {
		if _, err := pool.Exec(ctx, "ANALYZE outbox_event"); err != nil {
			return err
		}
	}
	return nil
}

// checkPublished compares the snapshot's published figures with brute-force
// counts at the snapshot's own now(): an exact window equals its count; an
// estimated one is at least the rows it counted, which are at most the truth,
// at most the published total the snapshot shows, and, when that total is
// exact, at most the rows the table holds; no window is above a longer one.
func checkPublished(ctx context.Context, pool *pgxpool.Pool, s inspect.Snapshot) ([]string, error) {
	var truth [4]int64
	var table int64
	err := pool.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE published_at > $1::timestamptz - interval '10 seconds'),
		count(*) FILTER (WHERE published_at > $1::timestamptz - interval '1 minute'),
		count(*) FILTER (WHERE published_at > $1::timestamptz - interval '5 minutes'),
		count(*) FILTER (WHERE published_at > $1::timestamptz - interval '1 hour'),
		count(*)
		FROM outbox_event WHERE published_at IS NOT NULL`, s.TakenAt).Scan(&truth[0], &truth[1], &truth[2], &truth[3], &table)
	if err != nil {
		return nil, err
	}
	var bad []string
	p, total := s.Published, s.Counts.Published
	switch {
	case !total.Estimate && total.Value != table:
		bad = append(bad, fmt.Sprintf("published total %d exact, the table holds %d", total.Value, table))
	case total.Estimate && total.Value < min(table, 1):
		bad = append(bad, fmt.Sprintf("published total ~%d", total.Value))
	}
	if p.Last10sBound == inspect.Exact && p.Last10s != truth[0] || p.Last10s > truth[0] {
		bad = append(bad, fmt.Sprintf("last 10s %s, truth %d", p.Last10sBound.Format(p.Last10s), truth[0]))
	}
	for k, c := range []struct {
		name string
		got  inspect.Count
	}{{"1m", p.Last1m}, {"5m", p.Last5m}, {"1h", p.Last1h}} {
		t := truth[k+1]
		switch g := c.got; {
		case !g.Estimate && g.Value != t:
			bad = append(bad, fmt.Sprintf("%s %d exact, truth %d", c.name, g.Value, t))
		case !g.Estimate:
		case g.AtLeast > t || g.AtLeast <= 0:
			bad = append(bad, fmt.Sprintf("%s ~%d counted %d rows, truth %d", c.name, g.Value, g.AtLeast, t))
		case g.Value < g.AtLeast:
			bad = append(bad, fmt.Sprintf("%s ~%d below the %d rows counted", c.name, g.Value, g.AtLeast))
		case g.Value > total.Value:
			bad = append(bad, fmt.Sprintf("%s ~%d above the published total %s", c.name, g.Value, total))
		case !total.Estimate && g.Value > table:
			bad = append(bad, fmt.Sprintf("%s ~%d above the %d published rows the table holds", c.name, g.Value, table))
		}
	}
	if p.Last1m.Value > p.Last5m.Value || p.Last5m.Value > p.Last1h.Value || p.Last1h.Value > max(total.Value, table) {
		bad = append(bad, fmt.Sprintf("windows out of order: 1m %s, 5m %s, 1h %s, total %s", p.Last1m, p.Last5m, p.Last1h, total))
	}
	return bad, nil
}

func checkPubTable(ctx context.Context, pool *pgxpool.Pool, in *inspect.Inspector, p pubTable) ([]string, error) {
	if err := loadPub(ctx, pool, p); err != nil {
		return nil, err
	}
	inspect.SetPublishedCaps(in, p.window, p.total)
	s, err := in.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return checkPublished(ctx, pool, s)
}

// TestPublishedWindowsHoldTheirBounds is the property for the published
// windows: on generated histories — bursts, a trickle, recent rows, history
// days old, statistics fresh, stale or absent, caps from one row to past the
// table — every window is exact when unmarked, and an estimate is never below
// the rows it counted nor above the rows the table holds (the total the
// snapshot shows; the brute-force count whenever that total is exact).
// OUTBOXTOP_PROPERTY_TABLES and OUTBOXTOP_PROPERTY_SEED as for
// TestSnapshotFiguresHoldTheirBounds.
func TestPublishedWindowsHoldTheirBounds(t *testing.T) {
	t.Parallel()
	n := 40
	if v := os.Getenv("OUTBOXTOP_PROPERTY_TABLES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("OUTBOXTOP_PROPERTY_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (OUTBOXTOP_PROPERTY_SEED), %d tables", seed, n)
	r := rand.New(rand.NewSource(seed))
	pool, _ := testenv.Pool(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for k := range n {
		p := randomPubTable(r)
		bad, err := checkPubTable(ctx, pool, in, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			t.Fatalf("seed %d, table %d: %s\nfails: %s", seed, k, p, strings.Join(bad, "; "))
		}
	}
}

// The incident's shape: a burst of the newest rows (the window cap's worth in
// the last two seconds) after a quiet hour extrapolated to more rows in 5
// minutes and in the hour than the table held (~310,771 of a table of fewer
// than 100,000). Every window is at most the table's published rows, and at
// least the rows counted.
func TestPublishedWindowsNeverExceedTheTable(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	p := pubTable{window: 200, total: 1000, analyze: -1}
	for k := range 200 {
		p.ages = append(p.ages, 0.5+float64(k)/100) // 200 in the last 2.5 s
	}
	for k := range 300 {
		p.ages = append(p.ages, 200+float64(k)*10) // 300 over the hour before
	}
	ctx := context.Background()
	bad, err := checkPubTable(ctx, pool, in, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "; "))
	}
	s, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Published; !w.Last5m.Estimate || w.Last5m.Value > 500 || w.Last1h.Value != 500 || w.Last5m.AtLeast != 200 {
		t.Errorf("5m %+v, 1h %+v: want estimates of at most the table's 500 rows, at least the 200 counted", w.Last5m, w.Last1h)
	}
}
