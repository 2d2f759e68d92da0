package inspect_test

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// ageRow is one generated row for the oldest ages: its kind and how many
// minutes ago it was created (a producer that sets created_at itself, so seq
// order says nothing of it).
type ageRow struct {
	kind    string // ready, scheduled, leased, failed, published
	created int    // minutes ago, 1..600
	blocked bool
}

type ageTable struct {
	caps inspect.TestCaps
	rows []ageRow
}

func (a ageTable) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "caps %+v, %d rows:", a.caps, len(a.rows))
	for _, r := range a.rows {
		fmt.Fprintf(&b, " {%s %d %v}", r.kind, r.created, r.blocked)
	}
	return b.String()
}

func loadAges(ctx context.Context, pool *pgxpool.Pool, a ageTable) error {
	if _, err := pool.Exec(ctx, "TRUNCATE outbox_event"); err != nil {
		return err
	}
	if len(a.rows) == 0 {
		return nil
	}
	var vals []string
	for k, r := range a.rows {
		created := fmt.Sprintf("now() - interval '%d minutes'", r.created)
		avail, until, failed, published := "now() - interval '30 seconds'", "NULL", "NULL", "NULL"
		switch r.kind {
		case "scheduled":
			avail = "now() + interval '10 minutes'"
		case "leased":
			until = "now() + interval '5 minutes'"
		case "failed":
			failed = "now() - interval '1 minute'"
		case "published":
			published = "now() - interval '1 minute'"
		}
		// A ready row made available after it was created: its wait runs from
		// then (a retry), half of them.
		if r.kind == "ready" && k%2 == 0 {
			avail = fmt.Sprintf("now() - interval '%d seconds'", r.created*30)
		}
		vals = append(vals, fmt.Sprintf("(gen_random_uuid(), 'a', 'a-%d', 'E', '{}', %s, %s, %s, %s, %s, %v)",
			k%7, created, avail, until, failed, published, r.blocked))
	}
	_, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
		created_at, available_at, lease_until, failed_at, published_at, blocked) VALUES `+strings.Join(vals, ", "))
	return err
}

// checkAges compares the snapshot's oldest pending and ready ages with brute
// force at the snapshot's now(): exact unless marked, and a lower bound that
// holds when marked.
func checkAges(ctx context.Context, pool *pgxpool.Pool, s inspect.Snapshot) ([]string, error) {
	var pending, ready float64
	err := pool.QueryRow(ctx, `SELECT
		coalesce(extract(epoch FROM $1::timestamptz - min(created_at) FILTER (WHERE NOT leased)), 0)::float8,
		coalesce(extract(epoch FROM $1::timestamptz - min(greatest(created_at, available_at)) FILTER (WHERE NOT leased AND available_at <= $1)), 0)::float8
		FROM (SELECT *, lease_until IS NOT NULL AND lease_until > $1 AS leased FROM outbox_event
			WHERE published_at IS NULL AND failed_at IS NULL) u`, s.TakenAt).Scan(&pending, &ready)
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, a := range []struct {
		name  string
		got   inspect.Age
		bound inspect.Bound
		truth float64
	}{{"oldest pending", s.OldestPendingAge, s.OldestPendingBound, pending}, {"oldest ready", s.OldestReadyAge, s.OldestReadyBound, ready}} {
		got, want := a.got.Duration().Seconds(), a.truth
		const slack = 0.002
		switch a.bound {
		case inspect.Exact:
			if got < want-slack || got > want+slack {
				bad = append(bad, fmt.Sprintf("%s %s exact, truth %.3fs", a.name, a.got, want))
			}
		case inspect.LowerBound:
			if got > want+slack {
				bad = append(bad, fmt.Sprintf("%s ≥%s, truth %.3fs", a.name, a.got, want))
			}
		default:
			bad = append(bad, fmt.Sprintf("%s: bound %q", a.name, a.bound))
		}
	}
	return bad, nil
}

func checkAgeTable(ctx context.Context, pool *pgxpool.Pool, in *inspect.Inspector, a ageTable) (inspect.Snapshot, []string, error) {
	if err := loadAges(ctx, pool, a); err != nil {
		return inspect.Snapshot{}, nil, err
	}
	inspect.SetTestCaps(in, a.caps)
	s, err := in.Snapshot(ctx)
	if err != nil {
		return s, nil, err
	}
	bad, err := checkAges(ctx, pool, s)
	return s, bad, err
}

// TestOldestAgesHoldTheirBounds: on generated tables whose created_at has
// nothing to do with seq (a producer setting it), with caps from one row to
// past the table, the oldest pending and ready ages are exact when unmarked
// and lower bounds that hold when marked: they were the rows read's, shown
// as exact, past the scan (1h04m on the console where the truth was 1h22m49s).
func TestOldestAgesHoldTheirBounds(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	pool, _ := testenv.Pool(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kinds := []string{"ready", "ready", "scheduled", "scheduled", "leased", "failed", "published"}
	for k := range 40 {
		small := func() int { return 1 + r.Intn(20) }
		a := ageTable{caps: inspect.TestCaps{Scan: small(), Probe: small(), Count: small(), Failed: small(), FailedGroups: small(), BlockedProbe: small()}}
		if r.Intn(4) == 0 {
			a.caps = inspect.DefaultTestCaps()
		}
		for range r.Intn(60) {
			a.rows = append(a.rows, ageRow{kind: kinds[r.Intn(len(kinds))], created: 1 + r.Intn(600), blocked: r.Intn(3) == 0})
		}
		_, bad, err := checkAgeTable(ctx, pool, in, a)
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			t.Fatalf("seed %d, table %d: %s\nfails: %s", seed, k, a, strings.Join(bad, "; "))
		}
	}
}

// The incident's shape: the newest rows first in seq order (a backlog of
// fresh ready events) and, past the rows the snapshot scans, scheduled
// retries created 83 minutes ago. Read whole by the counts past the scan,
// the oldest pending age is theirs, exact; past those counts' caps it is
// marked a lower bound, never shown as the truth.
func TestOldestPendingPastTheScan(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var rows []ageRow
	for range 100 {
		rows = append(rows, ageRow{kind: "ready", created: 2})
	}
	for range 60 {
		rows = append(rows, ageRow{kind: "scheduled", created: 83})
	}
	caps := inspect.TestCaps{Scan: 20, Probe: 20, Count: 500, Failed: 10, FailedGroups: 10, BlockedProbe: 10}
	s, bad, err := checkAgeTable(ctx, pool, in, ageTable{caps: caps, rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 || s.OldestPendingBound != inspect.Exact || s.OldestPendingAge.Duration() < 83*time.Minute {
		t.Errorf("every row read past the scan: oldest pending %s, want exact 83m: %s", inspect.AgeText(s.OldestPendingAge, s.OldestPendingBound), bad)
	}
	caps.Count = 30
	s, bad, err = checkAgeTable(ctx, pool, in, ageTable{caps: caps, rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 || s.OldestPendingBound != inspect.LowerBound || s.OldestReadyBound != inspect.LowerBound {
		t.Errorf("past the counts' caps: oldest pending %s, ready %s, want lower bounds: %s",
			inspect.AgeText(s.OldestPendingAge, s.OldestPendingBound), inspect.AgeText(s.OldestReadyAge, s.OldestReadyBound), bad)
	}
}
