package inspect_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// gen is one generated outbox_event row. Times are whole minutes from now, never
// 0, so no state changes while a table is checked.
type gen struct {
	agg int // aggregate: "a-<agg>"
	// kind: ready, scheduled, leased, expired-ready, expired-scheduled,
	// failed, failed-later (failed with a future available_at), published.
	kind    string
	blocked bool // the relay's hint, set at random: it must not matter
}

var genKinds = []string{"ready", "ready", "scheduled", "leased", "expired-ready", "expired-scheduled", "failed", "failed-later", "published"}

// propTable is one generated table and the caps it is checked with.
type propTable struct {
	caps inspect.TestCaps
	rows []gen
	// analyzeAfter: ANALYZE after this many rows (-1: never), so statistics
	// are fresh, stale or absent; the snapshot must not depend on them.
	analyzeAfter int
}

func (p propTable) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "caps %+v, analyze after %d, %d rows:\n", p.caps, p.analyzeAfter, len(p.rows))
	for _, r := range p.rows {
		fmt.Fprintf(&b, "\t{%d, %q, %v},\n", r.agg, r.kind, r.blocked)
	}
	return b.String()
}

func randomTable(r *rand.Rand) propTable {
	small := func() int { return 1 + r.Intn(25) }
	p := propTable{caps: inspect.TestCaps{Scan: small(), Probe: small(), Count: small(), Failed: small(),
		FailedGroups: small(), BlockedProbe: small()}}
	// The ranking's caps: small, or the production ones (0).
	for _, c := range []*int{&p.caps.Hinted, &p.caps.Unhinted, &p.caps.RankProbe} {
		if r.Intn(2) == 0 {
			*c = small()
		}
	}
	if r.Intn(2) == 0 { // a short list: tables with more blocked aggregates
		p.caps.List = 1 + r.Intn(5)
	}
	// Sometimes a cap far above the table: every count exact.
	if r.Intn(4) == 0 {
		p.caps = inspect.DefaultTestCaps()
	}
	aggs := 1 + r.Intn(12)
	n := r.Intn(60)
	weights := genKinds
	if r.Intn(3) == 0 { // a storm: mostly failed and scheduled
		weights = append(append([]string{}, genKinds...), "failed", "failed", "failed", "scheduled", "scheduled")
	}
	for range n {
		p.rows = append(p.rows, gen{agg: r.Intn(aggs), kind: weights[r.Intn(len(weights))], blocked: r.Intn(3) == 0})
	}
	p.analyzeAfter = -1
	if r.Intn(2) == 0 && n > 0 {
		p.analyzeAfter = r.Intn(n + 1)
	}
	return p
}

// load replaces the outbox's rows with p's, in order (seq follows it).
func load(ctx context.Context, pool *pgxpool.Pool, p propTable) error {
	if _, err := pool.Exec(ctx, "TRUNCATE outbox_event"); err != nil {
		return err
	}
	insert := func(rows []gen) error {
		if len(rows) == 0 {
			return nil
		}
		var vals []string
		for k, g := range rows {
			created := fmt.Sprintf("now() - interval '%d minutes'", 60-k%50)
			avail, token, until, failed, published := "now() - interval '2 minutes'", "NULL", "NULL", "NULL", "NULL"
			switch g.kind {
			case "scheduled":
				avail = "now() + interval '10 minutes'"
			case "leased":
				token, until = "gen_random_uuid()", "now() + interval '5 minutes'"
			case "expired-ready":
				token, until = "gen_random_uuid()", "now() - interval '1 minute'"
			case "expired-scheduled":
				token, until, avail = "gen_random_uuid()", "now() - interval '1 minute'", "now() + interval '7 minutes'"
			case "failed":
				failed = "now() - interval '3 minutes'"
			case "failed-later":
				failed, avail = "now() - interval '4 minutes'", "now() + interval '9 minutes'"
			case "published":
				published = "now() - interval '1 minute'"
			}
			vals = append(vals, fmt.Sprintf(`(gen_random_uuid(), 'a', 'a-%d', 'E%d', '{}', %s, %s, %d, %s, %s, %s, %s, %v, 'err %d')`,
				g.agg, g.agg%3, created, avail, k%4, token, until, failed, published, g.blocked, k%2))
		}
		_, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			created_at, available_at, attempts, lease_token, lease_until, failed_at, published_at, blocked, last_error) VALUES `+
			strings.Join(vals, ", "))
		return err
	}
	at := len(p.rows)
	if p.analyzeAfter >= 0 && p.analyzeAfter <= len(p.rows) {
		at = p.analyzeAfter
	}
	if err := insert(p.rows[:at]); err != nil {
		return err
	}
	if at < len(p.rows) || p.analyzeAfter == len(p.rows) {
		if _, err := pool.Exec(ctx, "ANALYZE outbox_event"); err != nil {
			return err
		}
	}
	return insert(p.rows[at:])
}

// truth is every figure counted by brute force, straight from the state
// definitions (not from wire's SQL nor the snapshot's).
type truth struct {
	ready, waiting, scheduled, leased, failed, expired, blocked int64
	// per blocked aggregate: its head's seq, the ready, failed and all
	// unpublished events after it
	aggs map[string][4]int64
}

func bruteForce(ctx context.Context, pool *pgxpool.Pool) (truth, error) {
	t := truth{aggs: map[string][4]int64{}}
	// The states, from the columns.
	const (
		unpub     = `published_at IS NULL`
		failed    = `published_at IS NULL AND failed_at IS NOT NULL`
		notFailed = `published_at IS NULL AND failed_at IS NULL`
		live      = `lease_until IS NOT NULL AND lease_until > now()`
		ready     = notFailed + ` AND NOT (` + live + `) AND available_at <= now()`
		scheduled = notFailed + ` AND NOT (` + live + `) AND available_at > now()`
	)
	err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM outbox_event WHERE `+ready+`),
		(SELECT count(*) FROM outbox_event WHERE `+scheduled+`),
		(SELECT count(*) FROM outbox_event WHERE `+notFailed+` AND `+live+`),
		(SELECT count(*) FROM outbox_event WHERE `+failed+`),
		(SELECT count(*) FROM outbox_event WHERE `+notFailed+` AND lease_token IS NOT NULL AND NOT (`+live+`))`).
		Scan(&t.ready, &t.scheduled, &t.leased, &t.failed, &t.expired)
	if err != nil {
		return t, err
	}
	// Each aggregate's head: its unpublished event of lowest seq. It blocks when
	// failed or scheduled; every ready event of a blocked aggregate waits.
	rows, err := pool.Query(ctx, `WITH heads AS (
			SELECT aggregate_type, aggregate_id, min(seq) AS seq FROM outbox_event WHERE `+unpub+`
			GROUP BY aggregate_type, aggregate_id
		), blockers AS (
			SELECT e.* FROM outbox_event e JOIN heads h USING (aggregate_type, aggregate_id, seq)
			WHERE (`+failed+`) OR (`+scheduled+`)
		)
		SELECT b.aggregate_type || '/' || b.aggregate_id, b.seq,
			(SELECT count(*) FROM outbox_event e WHERE e.aggregate_type = b.aggregate_type AND e.aggregate_id = b.aggregate_id AND `+ready+`),
			(SELECT count(*) FROM outbox_event e WHERE e.aggregate_type = b.aggregate_type AND e.aggregate_id = b.aggregate_id
				AND e.seq > b.seq AND e.published_at IS NULL AND e.failed_at IS NOT NULL),
			(SELECT count(*) FROM outbox_event e WHERE e.aggregate_type = b.aggregate_type AND e.aggregate_id = b.aggregate_id
				AND e.seq > b.seq AND e.published_at IS NULL)
		FROM blockers b`)
	if err != nil {
		return t, err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var v [4]int64
		if err := rows.Scan(&key, &v[0], &v[1], &v[2], &v[3]); err != nil {
			return t, err
		}
		t.aggs[key] = v
		t.blocked++
		t.waiting += v[1]
	}
	return t, rows.Err()
}

// checkSnapshot compares every figure of s with the truth: an exact one must
// equal it, a lower bound be at most it, an upper bound at least it.
func checkSnapshot(s inspect.Snapshot, t truth, limit int) []string {
	var bad []string
	fig := func(name string, got int64, b inspect.Bound, approx bool, want int64) {
		ok := map[inspect.Bound]bool{inspect.Exact: got == want, inspect.LowerBound: got <= want, inspect.UpperBound: got >= want}[b]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s %s, truth %d", name, b.Format(got), want))
		}
		if approx != (b != inspect.Exact) {
			bad = append(bad, fmt.Sprintf("%s: approx %v but bound %q", name, approx, b))
		}
	}
	c, b, a := s.Counts, s.Counts.Bounds, s.Counts.Approx
	fig("ready", c.Ready, b.Ready, a.Ready, t.ready)
	fig("waiting", c.Waiting, b.Waiting, a.Waiting, t.waiting)
	fig("publishable", c.Publishable, b.Publishable, b.Publishable != inspect.Exact, t.ready-t.waiting)
	fig("scheduled", c.Scheduled, b.Scheduled, a.Scheduled, t.scheduled)
	fig("pending", c.Pending, b.Pending, a.Pending, t.ready+t.scheduled)
	fig("leased", c.Leased, b.Leased, a.Leased, t.leased)
	fig("failed", c.Failed, b.Failed, a.Failed, t.failed)
	fig("expired leases", s.ExpiredLeases, b.ExpiredLeases, b.ExpiredLeases != inspect.Exact, t.expired)
	fig("blocked", s.Blocked.Count, s.Blocked.Bound, s.Blocked.Estimate, t.blocked)
	if c.Waiting > c.Ready || c.Waiting+c.Publishable > c.Ready || (b.Ready == inspect.Exact && c.Publishable != c.Ready-c.Waiting) {
		bad = append(bad, fmt.Sprintf("inconsistent: ready %d, waiting %d, publishable %d (%+v)", c.Ready, c.Waiting, c.Publishable, b))
	}
	if b.Publishable == inspect.Exact && (b.Ready != inspect.Exact || b.Waiting != inspect.Exact) {
		bad = append(bad, "publishable exact beside an inexact ready or waiting")
	}
	// The listed aggregates: blocked, by their head, with exact figures, the
	// most harm first.
	for k, ag := range s.Blocked.Aggregates {
		key := ag.AggregateType + "/" + ag.AggregateID
		v, ok := t.aggs[key]
		if !ok {
			bad = append(bad, key+" listed but not blocked")
			continue
		}
		if ag.Blocker.Seq != v[0] || ag.Waiting != v[1] || ag.FailedBehind != v[2] || ag.Behind != v[3] {
			bad = append(bad, fmt.Sprintf("%s: blocker seq %d, waiting %d, failed behind %d, behind %d; truth %v",
				key, ag.Blocker.Seq, ag.Waiting, ag.FailedBehind, ag.Behind, v))
		}
		if k > 0 {
			p := s.Blocked.Aggregates[k-1]
			if p.Waiting < ag.Waiting || (p.Waiting == ag.Waiting && p.Blocker.Seq > ag.Blocker.Seq) {
				bad = append(bad, fmt.Sprintf("%s listed after %s/%s", key, p.AggregateType, p.AggregateID))
			}
		}
	}
	if len(s.Blocked.Aggregates) > limit || int64(len(s.Blocked.Aggregates)) > s.Blocked.Count {
		bad = append(bad, fmt.Sprintf("%d listed of %d", len(s.Blocked.Aggregates), s.Blocked.Count))
	}
	// The first Ranked listed are the true first Ranked, by waiting events
	// (most first), then blocker (oldest first); every one when all are
	// ranked and every blocker was found.
	top := trueTop(t)
	if r := s.Blocked.Ranked; r < 0 || r > len(s.Blocked.Aggregates) {
		bad = append(bad, fmt.Sprintf("ranked %d of %d listed", r, len(s.Blocked.Aggregates)))
	} else {
		for k, got := range s.Blocked.Aggregates[:r] {
			if k >= len(top) || got.AggregateType+"/"+got.AggregateID != top[k].key {
				want := "none"
				if k < len(top) {
					want = fmt.Sprintf("%s (%d waiting, blocker %d)", top[k].key, top[k].waiting, top[k].seq)
				}
				bad = append(bad, fmt.Sprintf("ranked #%d %s/%s (%d waiting, blocker %d), want %s", k, got.AggregateType, got.AggregateID,
					got.Waiting, got.Blocker.Seq, want))
			}
		}
	}
	if s.Blocked.Bound == inspect.Exact && s.Blocked.AllRanked() && len(s.Blocked.Aggregates) != min(len(top), limit) {
		bad = append(bad, fmt.Sprintf("all %d listed ranked and every blocker found, want %d listed", len(s.Blocked.Aggregates),
			min(len(top), limit)))
	}
	return bad
}

// listLimit is the blocked aggregates a snapshot with caps c lists.
func listLimit(c inspect.TestCaps) int {
	if c.List == 0 {
		return inspect.BlockedLimit
	}
	return c.List
}

// ranked is a blocked aggregate of the truth, in the list's order.
type ranked struct {
	key          string
	seq, waiting int64
}

// trueTop is every blocked aggregate of t in the list's order: the most
// events waiting first, then the oldest blocker.
func trueTop(t truth) []ranked {
	var all []ranked
	for k, v := range t.aggs {
		all = append(all, ranked{k, v[0], v[1]})
	}
	slices.SortFunc(all, func(x, y ranked) int {
		if x.waiting != y.waiting {
			return cmp.Compare(y.waiting, x.waiting)
		}
		return cmp.Compare(x.seq, y.seq)
	})
	return all
}

// checkTable loads p, takes a snapshot with its caps and checks it.
func checkTable(ctx context.Context, pool *pgxpool.Pool, in *inspect.Inspector, p propTable) ([]string, error) {
	bad, _, err := checkTableSnapshot(ctx, pool, in, p)
	return bad, err
}

// checkTableSnapshot is checkTable, with the snapshot checked.
func checkTableSnapshot(ctx context.Context, pool *pgxpool.Pool, in *inspect.Inspector, p propTable) ([]string, inspect.Snapshot, error) {
	if err := load(ctx, pool, p); err != nil {
		return nil, inspect.Snapshot{}, err
	}
	inspect.SetTestCaps(in, p.caps)
	s, err := in.Snapshot(ctx)
	if err != nil {
		return nil, s, err
	}
	t, err := bruteForce(ctx, pool)
	if err != nil {
		return nil, s, err
	}
	bad := checkSnapshot(s, t, listLimit(p.caps))
	if p.caps == inspect.DefaultTestCaps() && !s.Blocked.AllRanked() {
		// Below every cap the snapshot reads every row: nothing is left unranked.
		bad = append(bad, fmt.Sprintf("below every cap, %d of %d listed ranked", s.Blocked.Ranked, len(s.Blocked.Aggregates)))
	}
	return bad, s, nil
}

// shrink removes rows one at a time while the table still fails.
func shrink(ctx context.Context, t *testing.T, pool *pgxpool.Pool, in *inspect.Inspector, p propTable) propTable {
	for changed := true; changed; {
		changed = false
		for k := 0; k < len(p.rows); k++ {
			q := p
			q.rows = slices.Delete(slices.Clone(p.rows), k, k+1)
			if q.analyzeAfter > len(q.rows) {
				q.analyzeAfter = len(q.rows)
			}
			bad, err := checkTable(ctx, pool, in, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(bad) > 0 {
				p, changed = q, true
				k--
			}
		}
	}
	return p
}

// TestSnapshotFiguresHoldTheirBounds is the property: on generated tables —
// every state, leases live and expired, failed and scheduled heads with
// followers of every kind, the blocked hint set at random, statistics fresh,
// stale or absent, and caps from 1 to past the table — every figure of a
// Snapshot is exact when unmarked and holds its bound when marked, against a
// brute-force count. OUTBOXTOP_PROPERTY_TABLES sets how many tables (default
// 40), OUTBOXTOP_PROPERTY_SEED the seed (default: the time, logged). A failing
// table is shrunk and printed.
func TestSnapshotFiguresHoldTheirBounds(t *testing.T) {
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
	b := setup(t)
	start := time.Now()
	var listed, ranked, partly int
	for k := range n {
		p := randomTable(r)
		bad, s, err := checkTableSnapshot(b.ctx, b.pool, b.in, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Blocked.Aggregates) > 0 {
			listed++
			if s.Blocked.AllRanked() {
				ranked++
			} else if s.Blocked.Ranked > 0 {
				partly++
			}
		}
		if len(bad) > 0 {
			t.Logf("table %d fails: %s", k, strings.Join(bad, "; "))
			p = shrink(b.ctx, t, b.pool, b.in, p)
			bad, _ = checkTable(b.ctx, b.pool, b.in, p)
			t.Fatalf("seed %d, table %d, shrunk to %s\nfails: %s", seed, k, p, strings.Join(bad, "; "))
		}
	}
	t.Logf("%d tables in %v; of the %d that list blocked aggregates, %d ranked every one listed, %d some",
		n, time.Since(start).Round(time.Millisecond), listed, ranked, partly)
}

// runTable checks one named table, as found by the property or written by hand.
func runTable(t *testing.T, p propTable) inspect.Snapshot {
	t.Helper()
	pool, _ := testenv.Pool(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bad, err := checkTable(ctx, pool, in, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("%s\nfails: %s", p, strings.Join(bad, "; "))
	}
	s, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIncidentShape is the on-call incident scaled down beside the caps: 200
// failed events on 20 all-failed account aggregates, 50 scheduled retries, a
// trickle of ready events, and one poison event on order/o-7 with 60 ready
// events waiting behind it, more unpublished rows than the scan reads. Every
// figure holds its bound, the ready, waiting and failed counts are exact, and
// the poison's aggregate heads the blocked list though its blocker is the
// newest.
func TestIncidentShape(t *testing.T) {
	t.Parallel()
	p := propTable{caps: inspect.TestCaps{Scan: 40, Probe: 30, Count: 400, Failed: 400, FailedGroups: 50, BlockedProbe: 20}, analyzeAfter: 100}
	for k := range 200 {
		p.rows = append(p.rows, gen{agg: 1000 + k%20, kind: "failed"})
	}
	for k := range 50 {
		p.rows = append(p.rows, gen{agg: 2000 + k%25, kind: "scheduled"})
	}
	for k := range 10 {
		p.rows = append(p.rows, gen{agg: 3000 + k, kind: "published"})
	}
	p.rows = append(p.rows, gen{agg: 7, kind: "failed"})
	for k := range 60 {
		p.rows = append(p.rows, gen{agg: 7, kind: "ready", blocked: k%2 == 0})
	}
	for k := range 5 {
		p.rows = append(p.rows, gen{agg: 4000 + k, kind: "ready"})
	}
	s := runTable(t, p)
	c := s.Counts
	if c.Ready != 65 || c.Waiting != 60 || c.Publishable != 5 || c.Failed != 201 || c.Scheduled != 50 ||
		c.Bounds != (inspect.Bounds{}) {
		t.Errorf("counts %+v, want ready 65, waiting 60, publishable 5, failed 201, scheduled 50, all exact", c)
	}
	if a := s.Blocked.Aggregates; len(a) == 0 || a[0].AggregateID != "a-7" || a[0].Waiting != 60 || a[0].FailedBehind != 0 {
		t.Fatalf("blocked list %+v: want a-7 first with 60 waiting", a)
	}
	for _, a := range s.Blocked.Aggregates[1:] {
		if a.Waiting != 0 {
			t.Errorf("%s: %d waiting, want 0 (its followers are failed or scheduled)", a.AggregateID, a.Waiting)
		}
	}
	// 45 aggregates are blocked (20 account, 25 scheduled, o-7); more failed
	// rows than are asked whether they head their aggregate: a lower bound.
	if s.Blocked.Bound != inspect.LowerBound || s.Blocked.Count > 46 || s.Blocked.Count < 26 {
		t.Errorf("blocked %s", s.Blocked.Bound.Format(s.Blocked.Count))
	}
}

// TestReadyNotBelowTheRowsPlaced was found by the property (shrunk): ready past
// the scan a lower bound from ranges capped at one row, counting leased rows
// too, below the ready rows the probes had placed (ready 2, waiting 2,
// publishable 1).
func TestReadyNotBelowTheRowsPlaced(t *testing.T) {
	t.Parallel()
	runTable(t, propTable{caps: inspect.TestCaps{Scan: 12, Probe: 20, Count: 1, Failed: 7, FailedGroups: 13, BlockedProbe: 21}, analyzeAfter: -1,
		rows: []gen{
			{2, "leased", false}, {2, "leased", false}, {9, "scheduled", true}, {6, "expired-scheduled", false},
			{6, "leased", true}, {8, "scheduled", false}, {6, "expired-scheduled", false}, {9, "scheduled", true},
			{4, "leased", false}, {7, "leased", false}, {0, "ready", true}, {6, "ready", true},
			{8, "expired-scheduled", false}, {9, "expired-ready", false},
		}})
}

// inspectDefaultSmall are caps of one or two rows, past which every table of a
// test lies.
func inspectDefaultSmall() inspect.TestCaps {
	return inspect.TestCaps{Scan: 2, Probe: 1, Count: 2, Failed: 1, FailedGroups: 1, BlockedProbe: 1}
}

func setCaps(b *bundle, c inspect.TestCaps) { inspect.SetTestCaps(b.in, c) }
