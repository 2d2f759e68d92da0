package inspect_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// incident is the on-call incident at a scale: failed events over aggregates
// each headed by a failure, scheduled retries heading aggregates of their own
// with ready events behind them, five poison heads with events waiting behind
// each, a publishable backlog and the leases of a live relay, and published
// history. The relay hints blocked most of the rows it found waiting, as a live
// relay does; the rest it has not reached yet.
type incident struct {
	failed, failedAggs         int
	retries, behindRetries     int
	behindFailed               int
	poison                     [5]int // events waiting behind each poison head, the worst first
	backlog, leased, published int
	// at is where the worst poison head and its waiting events sit in every
	// order the read model walks: "oldest", "middle" or "newest" (the others
	// take the other places in turn). worstScheduled: the worst head is a
	// retry scheduled for later instead of a failure.
	at             string
	worstScheduled bool
	// unhinted: no row is hinted (the relay has not run).
	unhinted bool
}

var places = []string{"oldest", "middle", "newest"}

// poisonID is the aggregate of poison head k placed at at: first, in the
// middle or last of the aggregates in outbox_blocked_idx's order.
func poisonID(k int, at string) string {
	return map[string]string{"oldest": "a-", "middle": "s-5-", "newest": "z-"}[at] + fmt.Sprintf("poison-%d", k)
}

// placeOf is where poison head k sits.
func (in incident) placeOf(k int) string {
	start := 0
	for i, p := range places {
		if p == in.at {
			start = i
		}
	}
	return places[(start+k)%len(places)]
}

// statements are the inserts that make the incident, in seq order.
func (in incident) statements() []string {
	const cols = `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
		attempts, failed_at, last_error, blocked, lease_token, lease_until, lease_holder, published_at, kafka_topic, kafka_partition, kafka_offset) `
	// The failures span [now() - 2 hours, + failed ms); the ready rows' times
	// span the last 30 minutes.
	poison := func(at string) []string {
		var out []string
		for k, n := range in.poison {
			if in.placeOf(k) != at {
				continue
			}
			id := poisonID(k, at)
			failedAt := map[string]string{
				"oldest": "now() - interval '3 hours'",
				"middle": fmt.Sprintf("now() - interval '2 hours' + %d * interval '1 millisecond'", in.failed/2),
				"newest": "now() - interval '1 second'",
			}[at]
			head := fmt.Sprintf(`SELECT gen_random_uuid(), 'order', '%s', 'Poison', '{}', now() - interval '4 hours', now() - interval '4 hours',
				10, %s, 'poison %d', false, NULL::uuid, NULL::timestamptz, NULL, NULL::timestamptz, NULL, NULL::int, NULL::bigint`, id, failedAt, k)
			if k == 1 || k == 0 && in.worstScheduled {
				// A retry: soonest, in the middle, or latest of the retries.
				avail := map[string]string{
					"oldest": "now() + interval '1 minute'",
					"middle": fmt.Sprintf("now() + interval '1 hour' + %d * interval '1 millisecond'", in.retries/2),
					"newest": "now() + interval '30 days'",
				}[at]
				head = fmt.Sprintf(`SELECT gen_random_uuid(), 'order', '%s', 'Poison', '{}', now() - interval '4 hours', %s,
					3, NULL::timestamptz, 'poison %d', false, NULL::uuid, NULL::timestamptz, NULL, NULL::timestamptz, NULL, NULL::int, NULL::bigint`, id, avail, k)
			}
			// Its waiting events: the oldest, middle or newest ready rows
			// (outbox_claim_idx's order); the relay hinted all, half or none.
			avail := map[string]string{"oldest": "now() - interval '1 hour'", "middle": "now() - interval '12 minutes'", "newest": "now() - interval '1 second'"}[at]
			hint := []string{"g % 2 = 0", "true", "false", "true", "g % 3 = 0"}[k]
			if in.unhinted {
				hint = "false"
			}
			out = append(out, cols+head, fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', '%s', 'Order', '{}', %s, %s,
				0, NULL, NULL, %s, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM generate_series(1, %d) g`, id, avail, avail, hint, n))
		}
		return out
	}
	failed := func(from, to int) string {
		return fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', 'f-' || (g %% %d), 'Order' || (g %% 8), '{"amount": 42}',
			now() - interval '2 hours' + g * interval '1 millisecond', now() - interval '2 hours' + g * interval '1 millisecond',
			10, now() - interval '2 hours' + g * interval '1 millisecond', 'broker: MESSAGE_TOO_LARGE ' || (g %% 50),
			false, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM generate_series(%d, %d) g`, in.failedAggs, from, to)
	}
	hinted := "g % 10 <> 0"
	if in.unhinted {
		hinted = "false"
	}
	var out []string
	out = append(out, poison("oldest")...)
	out = append(out, failed(1, in.failed/2))
	out = append(out, poison("middle")...)
	out = append(out, failed(in.failed/2+1, in.failed),
		fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', 's-' || g, 'Order', '{}', now() - interval '30 minutes',
			now() + interval '1 hour' + g * interval '1 millisecond', 3, NULL, 'broker: unreachable',
			false, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM generate_series(1, %d) g`, in.retries),
		// Behind the retries, one or two each; behind some failures.
		fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', 's-' || (1 + (g * 7) %% %d), 'Order', '{}', now() - interval '20 minutes',
			now() - interval '20 minutes', 0, NULL, NULL, %s, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM generate_series(1, %d) g`,
			max(in.retries*2/3, 1), hinted, in.behindRetries),
		fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', 'f-' || ((g * 13) %% %d), 'Order', '{}', now() - interval '15 minutes',
			now() - interval '15 minutes', 0, NULL, NULL, %s, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM generate_series(1, %d) g`,
			in.failedAggs, hinted, in.behindFailed),
		// The publishable backlog the relay has not reached yet, and its batches in flight.
		fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', 'r-' || (g %% 500), 'Order', '{}', now() - interval '5 minutes',
			now() - interval '5 minutes', 0, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM generate_series(1, %d) g`, in.backlog),
		fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', 'l-' || (g %% 100), 'Order', '{}', now() - interval '6 minutes',
			now() - interval '6 minutes', 1, NULL, NULL, false, gen_random_uuid(), now() + interval '30 seconds', 'relay-a:1',
			NULL, NULL, NULL, NULL FROM generate_series(1, %d) g`, in.leased),
		fmt.Sprintf(cols+`SELECT gen_random_uuid(), 'order', 'p-' || (g %% 3000), 'Order', '{}', now() - g * interval '18 milliseconds' - interval '1 second',
			now() - g * interval '18 milliseconds' - interval '1 second', 1, NULL, NULL, false, NULL, NULL, NULL,
			now() - g * interval '18 milliseconds', 'outbox.order', g %% 12, g FROM generate_series(1, %d) g`, in.published))
	out = append(out, poison("newest")...)
	return append(out, "VACUUM ANALYZE outbox_event")
}

func (in incident) load(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "TRUNCATE outbox_event"); err != nil {
		return err
	}
	for _, q := range in.statements() {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// check takes a snapshot of the loaded incident with caps and checks it
// against brute force: every figure holds its bound, and at least the first
// ranked are ranked, the worst poison's aggregate first.
func (in incident) check(ctx context.Context, pool *pgxpool.Pool, insp *inspect.Inspector, caps inspect.TestCaps, ranked int) (inspect.Snapshot, []string, error) {
	inspect.SetTestCaps(insp, caps)
	s, err := insp.Snapshot(ctx)
	if err != nil {
		return s, nil, err
	}
	t, err := bruteForce(ctx, pool)
	if err != nil {
		return s, nil, err
	}
	bad := checkSnapshot(s, t, listLimit(caps))
	if s.Blocked.Ranked < ranked {
		bad = append(bad, fmt.Sprintf("%d ranked (%s), want at least %d", s.Blocked.Ranked, s.Blocked.Heading(), ranked))
	}
	if worst := poisonID(0, in.at); ranked > 0 && (len(s.Blocked.Aggregates) == 0 || s.Blocked.Aggregates[0].AggregateID != worst) {
		bad = append(bad, "the worst, "+worst+", is not listed first")
	}
	return s, bad, nil
}

// TestIncidentBlockedRanked is the on-call incident, scaled down beside the
// caps, with the worst poison head (and its waiting events) oldest, in the
// middle and newest in every order the snapshot walks — seq, failed_at, the
// retries' available_at, the aggregates' order, the ready rows' available_at —
// failed or scheduled, hinted by a live relay or not at all: the first 10
// listed are the true first 10, by waiting events then blocker, the worst
// first, and every figure holds its bound. Past the ranking's caps on the rows
// read, nothing is said to be ranked, and the list still holds its figures.
// BenchmarkSnapshotBlockedIncident runs it on a million failed events.
func TestIncidentBlockedRanked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := incident{failed: 3000, failedAggs: 300, retries: 500, behindRetries: 100, behindFailed: 60,
		poison: [5]int{155, 120, 80, 40, 20}, backlog: 100, leased: 20, published: 500}
	caps := inspect.TestCaps{Scan: 200, Probe: 20, Count: 200, Failed: 2000, FailedGroups: 100, BlockedProbe: 50}
	for _, at := range places {
		for _, variant := range []string{"failed", "scheduled", "unhinted", "past the caps"} {
			in, c, want := base, caps, 10
			in.at = at
			switch variant {
			case "scheduled":
				in.worstScheduled = true
			case "unhinted":
				in.unhinted = true
			case "past the caps":
				c.Hinted, c.Unhinted, want = 150, 150, 0
			}
			if err := in.load(b.ctx, b.pool); err != nil {
				t.Fatal(err)
			}
			s, bad, err := in.check(b.ctx, b.pool, b.in, c, want)
			if err != nil {
				t.Fatal(err)
			}
			if len(bad) > 0 {
				t.Errorf("worst %s, %s: %s", at, variant, strings.Join(bad, "; "))
			}
			if variant == "past the caps" && (s.Blocked.Ranked != 0 || s.Blocked.Heading() != "most waiting first of those found") {
				t.Errorf("worst %s, past the caps: %d ranked (%s), want none", at, s.Blocked.Ranked, s.Blocked.Heading())
			}
		}
	}
}

// BenchmarkSnapshotBlockedIncident: a full Snapshot of the incident with a
// million failed events over 50,000 aggregates, 50,000 retries with 10,000
// ready events behind them, 2,000 more behind failures, five poison heads with
// 200 to 1,551 waiting (100,005 blocked aggregates in all), a live relay's
// backlog and leases and 100,000 published, after VACUUM ANALYZE: the worst
// poison oldest, in the middle and newest in every order the snapshot walks;
// once with no row hinted (no relay ran); once with 20,000 behind failures, a
// tie of 30,000 aggregates with one event waiting at the 20th place, every one
// of which the ranking asks for its head. Each table is checked first against
// brute force: the first 10 listed are the true first 10, the worst first.
// median-ms is a Snapshot's time with the production caps.
//
//	go test -run '^$' -bench 'BenchmarkSnapshotBlockedIncident$' -benchtime 10x -timeout 60m ./internal/inspect/
func BenchmarkSnapshotBlockedIncident(b *testing.B) {
	pool, _ := testenv.Pool(b)
	ctx := context.Background()
	base := incident{failed: 1_000_000, failedAggs: 50_000, retries: 50_000, behindRetries: 10_000, behindFailed: 2_000,
		poison: [5]int{1551, 1200, 800, 400, 200}, backlog: 2_000, leased: 500, published: 100_000}
	for _, v := range []struct {
		name         string
		at           string
		unhinted     bool
		behindFailed int
	}{
		{"worst=oldest", "oldest", false, 0}, {"worst=middle", "middle", false, 0}, {"worst=newest", "newest", false, 0},
		{"worst=newest/unhinted", "newest", true, 0}, {"worst=newest/ties=30000", "newest", false, 20_000},
	} {
		b.Run(v.name, func(b *testing.B) {
			in := base
			in.at, in.unhinted = v.at, v.unhinted
			if v.behindFailed > 0 {
				in.behindFailed = v.behindFailed
			}
			if err := in.load(ctx, pool); err != nil {
				b.Fatal(err)
			}
			insp, err := inspect.New(pool, "public")
			if err != nil {
				b.Fatal(err)
			}
			s, bad, err := in.check(ctx, pool, insp, inspect.DefaultTestCaps(), 10)
			if err != nil {
				b.Fatal(err)
			}
			if len(bad) > 0 {
				b.Fatal(strings.Join(bad, "; "))
			}
			snapshotMedian(ctx, b, insp)
			b.Logf("blocked %s, %d of %d listed ranked, first %s/%s with %d waiting; took %v (first)",
				s.Blocked.Bound.Format(s.Blocked.Count), s.Blocked.Ranked, len(s.Blocked.Aggregates),
				s.Blocked.Aggregates[0].AggregateType, s.Blocked.Aggregates[0].AggregateID, s.Blocked.Aggregates[0].Waiting, s.Took)
		})
	}
}
