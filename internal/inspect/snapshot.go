package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Snapshot is the Overview: everything on-call asks first, read in one
// repeatable-read transaction so its numbers agree with each other and share one
// clock (TakenAt, the database's now()).
type Snapshot struct {
	TakenAt time.Time `json:"taken_at"`
	Schema  string    `json:"schema"`
	// Took is how long the snapshot's queries ran.
	Took   Age    `json:"took_seconds"`
	Counts Counts `json:"counts"`
	// ExpiredLeases: leased once, lease_until passed without a mark; counted in
	// Ready/Scheduled (they are claimable), shown because they mean a relay died or
	// stalled. Its bound is Counts.Bounds.ExpiredLeases.
	ExpiredLeases int64 `json:"expired_leases"`
	// OldestPendingAge is now() − the oldest pending event's created_at (0 when none).
	OldestPendingAge Age `json:"oldest_pending_age_seconds"`
	// OldestReadyAge is how long the longest-waiting ready event has been claimable:
	// now() − max(created_at, available_at) (0 when none). High with a low
	// OldestPendingAge means the relay is not keeping up or not running.
	OldestReadyAge Age `json:"oldest_ready_age_seconds"`
	// OldestPendingBound and OldestReadyBound: LowerBound when not every
	// unpublished, not failed row was read (the pass and the ranges past it
	// stopped at their caps): the true age is at least the one given ("≥" in
	// text). Absent: exact.
	OldestPendingBound Bound `json:"oldest_pending_age_bound,omitempty"`
	OldestReadyBound   Bound `json:"oldest_ready_age_bound,omitempty"`
	// OldestPublishableAge is how long the longest-waiting ready event that does not
	// wait behind a blocker has been claimable: the relay's lag, which a poison event
	// does not inflate (0 when none). OldestPublishableApprox: not every ready row
	// was read or placed (Counts.Bounds.Publishable is not exact), so the true age
	// is at least this one.
	OldestPublishableAge    Age  `json:"oldest_publishable_age_seconds"`
	OldestPublishableApprox bool `json:"oldest_publishable_approx,omitempty"`
	// Partial: the table was too big to read every unpublished row one by one;
	// ByEventType and Attempts cover the rows read, and the failed groups the
	// newest FailedGroupsOf failures. The counts say for themselves whether they
	// are exact (Counts.Bounds, Blocked.Bound).
	Partial        bool  `json:"partial,omitempty"`
	FailedGroupsOf int64 `json:"failed_groups_of,omitempty"`
	// NextScheduledAt is the earliest available_at of scheduled events (nil: none).
	NextScheduledAt *time.Time      `json:"next_scheduled_at"`
	Published       PublishedRecent `json:"published_recent"`
	// Inserted is the last seq handed out (events ever added, plus rolled-back
	// inserts); two snapshots give the incoming rate. Nil when unreadable.
	Inserted *int64 `json:"inserted,omitempty"`
	// FailedByType and FailedByError are the largest groups of failed events, at
	// most TopN each, largest first. Errors are grouped by their first 200 characters.
	FailedByType  []Group `json:"failed_by_event_type"`
	FailedByError []Group `json:"failed_by_error"`
	// Attempts is a histogram of attempts over unpublished events (ready, scheduled,
	// leased, failed).
	Attempts []AttemptsBucket `json:"attempts_histogram"`
	// ByEventType breaks the unpublished counts down by event_type, most first.
	ByEventType []TypeCounts `json:"by_event_type"`
	Blocked     Blocked      `json:"blocked"`
	// Order is the commit-order mode and the aggregates whose seq order may
	// not be their commit order.
	Order  Order      `json:"commit_order"`
	Inbox  []Consumer `json:"inbox"`
	Health Health     `json:"health"`
	// Relays are the relay processes seen: by their heartbeat (outbox_relay,
	// migration 010) or their live leases; live ones first (RelaySeen.Live,
	// RelaysLive, NoRelayFor). At most RelaysLimit heartbeat rows.
	Relays []RelaySeen `json:"relays"`
	// RelaysError says why the heartbeats could not be read (Relays then holds
	// only the holders of live leases).
	RelaysError string `json:"relays_error,omitempty"`

	leasesBy map[string]int64 // live leases by holder, from the pass, for snapRelays
}

// TopN bounds the grouped lists of a Snapshot.
const TopN = 10

// Counts are the events per state. Pending = Ready + Scheduled. On a big table
// counting stops at a cap: Bounds says which counts are then lower (or upper)
// bounds instead of exact, and Approx says the same as booleans (true: not
// exact). Published and Archived carry their own mark (Count.Estimate).
//
// Always Waiting ≤ Ready and Waiting + Publishable ≤ Ready; Publishable =
// Ready − Waiting whenever Ready is exact (then Publishable is an upper bound
// when Waiting is a lower bound). With Ready a lower bound, Waiting and
// Publishable are each the rows found so, lower bounds.
type Counts struct {
	Ready int64 `json:"ready"`
	// Waiting are the ready events behind a failed or scheduled head of their
	// aggregate (the waiting fragment of sql/fragments.sql): the ordered claim leaves them until it goes.
	Waiting int64 `json:"waiting"`
	// Publishable are the ready events that do not wait: what the relay can
	// publish now.
	Publishable int64 `json:"publishable"`
	Scheduled   int64 `json:"scheduled"`
	Pending     int64 `json:"pending"`
	Leased      int64 `json:"leased"`
	Failed      int64 `json:"failed"`
	Published   Count `json:"published"`
	Archived    Count `json:"archived"`
	// Skipped are archived events that were never published (skip).
	Skipped int64  `json:"skipped"`
	Approx  Approx `json:"approx"`
	Bounds  Bounds `json:"bounds"`
}

// Approx marks the counts of a Counts that are not exact (Bounds says how).
type Approx struct {
	Ready     bool `json:"ready,omitempty"`
	Waiting   bool `json:"waiting,omitempty"`
	Scheduled bool `json:"scheduled,omitempty"`
	Pending   bool `json:"pending,omitempty"`
	Leased    bool `json:"leased,omitempty"`
	Failed    bool `json:"failed,omitempty"`
}

// Group is a count of failed events sharing a key (an event_type or a last_error).
type Group struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// AttemptsBucket counts events whose attempts lie in [Min, Max] (Max -1: no bound).
type AttemptsBucket struct {
	Label string `json:"label"`
	Min   int    `json:"min"`
	Max   int    `json:"max"`
	Count int64  `json:"count"`
}

var attemptBuckets = []AttemptsBucket{
	{Label: "0", Min: 0, Max: 0}, {Label: "1", Min: 1, Max: 1}, {Label: "2", Min: 2, Max: 2},
	{Label: "3-4", Min: 3, Max: 4}, {Label: "5-9", Min: 5, Max: 9}, {Label: "10+", Min: 10, Max: -1},
}

// TypeCounts is one event_type's unpublished events.
type TypeCounts struct {
	EventType string `json:"event_type"`
	Ready     int64  `json:"ready"`
	Scheduled int64  `json:"scheduled"`
	Leased    int64  `json:"leased"`
	Failed    int64  `json:"failed"`
	// OldestPendingAge as in Snapshot, for this type.
	OldestPendingAge Age `json:"oldest_pending_age_seconds"`
}

// Blocked are aggregates whose oldest unpublished event is failed or scheduled, so
// their later events wait behind it.
type Blocked struct {
	// Count is the number of blocked aggregates, exact or a lower bound (Bound).
	Count int64 `json:"count"`
	// Bound: LowerBound when there were more events than a snapshot reads to
	// find every blocker; Count is then the blocked aggregates found.
	Bound Bound `json:"bound,omitempty"`
	// Estimate: Count is not exact (Bound says how), for readers older than Bound.
	Estimate bool `json:"estimate,omitempty"`
	// Aggregates lists at most BlockedLimit, those doing the most harm first: the
	// most events waiting behind the blocker, then the oldest blocker (seq),
	// each with exact figures.
	Aggregates []BlockedAggregate `json:"aggregates"`
	// Ranked: the first Ranked of Aggregates are certainly the first Ranked of
	// every blocked aggregate in that order, not of a sample; those after them
	// are the most harmful of the others found. Every one is ranked (Ranked =
	// len(Aggregates)) whenever the snapshot read every ready row's aggregate
	// (the package doc's "The blocked list" says when); then Aggregates is the
	// true top, or, with fewer than BlockedLimit aggregates that have events
	// waiting, the true top's start, and Count says whether others follow.
	Ranked int `json:"ranked"`
}

// AllRanked: every aggregate listed is ranked (see Ranked).
func (b Blocked) AllRanked() bool { return b.Ranked >= len(b.Aggregates) }

// Heading is how text introduces Aggregates: "most waiting first" when each is
// ranked, else what part is: "most waiting first of those found" (none),
// "most waiting first; the first 3 ranked of all, the rest of those found".
func (b Blocked) Heading() string {
	switch {
	case b.AllRanked():
		return "most waiting first"
	case b.Ranked == 0:
		return "most waiting first of those found"
	}
	return fmt.Sprintf("most waiting first; the first %d ranked of all, the rest of those found", b.Ranked)
}

// BlockedLimit bounds Blocked.Aggregates.
const BlockedLimit = 20

// BlockedAggregate is one blocked aggregate and the event that blocks it.
type BlockedAggregate struct {
	AggregateType string `json:"aggregate_type"`
	AggregateID   string `json:"aggregate_id"`
	// Waiting is the number of the aggregate's ready events behind Blocker: the
	// healthy events it holds back (exact).
	Waiting int64 `json:"waiting"`
	// FailedBehind is the number of its failed events behind Blocker, and Behind
	// of all its unpublished events behind it (ready, scheduled, leased, failed).
	FailedBehind int64 `json:"failed_behind"`
	Behind       int64 `json:"behind"`
	Blocker      Event `json:"blocker"`
}

// Consumer is one consumer's inbox (consumed_event rows under its name).
type Consumer struct {
	Name           string     `json:"name"`
	Total          Count      `json:"total"`
	Last5m         int64      `json:"last_5m"`
	LastConsumedAt *time.Time `json:"last_consumed_at"`
}

// Health is the state of the tables and what holds back vacuum.
type Health struct {
	Tables []TableHealth `json:"tables"`
	// OldestXmin is Horizon.Holders[0]: the holder of the oldest xmin (nil:
	// none besides this snapshot's own). A long-running one keeps vacuum from
	// removing dead rows, in outbox_event and every other table of the database.
	OldestXmin *XminHolder `json:"oldest_xmin"`
	// Horizon is every holder of the xmin horizon the snapshot read (horizon.go).
	Horizon Horizon `json:"horizon"`
}

// TableHealth is pg_stat_user_tables and sizes for one table.
type TableHealth struct {
	Table           string     `json:"table"`
	LiveTuples      int64      `json:"live_tuples"`
	DeadTuples      int64      `json:"dead_tuples"`
	LastVacuum      *time.Time `json:"last_vacuum"`
	LastAutovacuum  *time.Time `json:"last_autovacuum"`
	LastAutoanalyze *time.Time `json:"last_autoanalyze"`
	TableBytes      int64      `json:"table_bytes"`
	IndexBytes      int64      `json:"index_bytes"`
}

// Caps on exact counting in a Snapshot (see the package doc's "Cost on a big table").
const (
	totalExactCap      = 10_000
	publishedWindowCap = 20_000
	inboxExactCap      = 1_000
)

// Snapshot reads the Overview. Its cost does not grow with published history.
func (i *Inspector) Snapshot(ctx context.Context) (Snapshot, error) {
	return i.snapshot(ctx, "snapshot", true)
}

// snapshot reads a Snapshot: every step when full, else only the counts read
// from outbox_event (Backlog). what prefixes its errors.
func (i *Inspector) snapshot(ctx context.Context, what string, full bool) (Snapshot, error) {
	start := time.Now()
	tx, err := i.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Every query here is built for the partial indexes on unpublished rows. With
	// the default costs the planner switches to scanning the whole table, published
	// history included, once unpublished rows pass a few percent of it, and JIT
	// compiles for longer than these queries run: 200 ms instead of 60 ms for the
	// unpublished pass at 1M published + 100k pending (fillfactor 50).
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL jit = off"); err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", what, err)
	}
	s := Snapshot{Schema: i.schema}
	u := unpublished{countOnly: !full}
	type step struct {
		what string
		fn   func(context.Context, pgx.Tx, *Snapshot) error
	}
	steps := []step{
		{"unpublished counts", func(ctx context.Context, tx pgx.Tx, s *Snapshot) error { return i.snapUnpublished(ctx, tx, s, &u) }},
		{"published counts", i.snapPublished},
		{"blocked aggregates", func(ctx context.Context, tx pgx.Tx, s *Snapshot) error { return i.snapBlocked(ctx, tx, s, &u) }},
		{"inbox", i.snapInbox},
		{"table health", i.snapHealth},
		{"relays", i.snapRelays},
		{"commit order", func(ctx context.Context, tx pgx.Tx, s *Snapshot) error { return i.snapOrder(ctx, tx, &s.Order, full) }},
	}
	if !full {
		steps = []step{steps[0], steps[2], steps[6]}
	}
	for _, step := range steps {
		if err := step.fn(ctx, tx, &s); err != nil {
			return Snapshot{}, fmt.Errorf("%s: %s: %w", what, step.what, err)
		}
	}
	s.Took = Age(time.Since(start))
	return s, nil
}

// topGroups sorts groups largest first (ties by key) and keeps TopN.
func topGroups(g []Group) []Group {
	slices.SortFunc(g, func(a, b Group) int {
		if a.Count != b.Count {
			return cmp.Compare(b.Count, a.Count)
		}
		return strings.Compare(a.Key, b.Key)
	})
	return g[:min(len(g), TopN)]
}

type rowWithInt struct {
	r interface{ Scan(...any) error }
	n *int64
}

func (r rowWithInt) Scan(dest ...any) error { return r.r.Scan(append(dest, r.n)...) }

func (i *Inspector) snapInbox(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	rows, err := tx.Query(ctx, i.q.SQL("inbox"))
	if err != nil {
		return err
	}
	s.Inbox, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Consumer, error) {
		var c Consumer
		err := r.Scan(&c.Name, &c.Last5m, &c.LastConsumedAt)
		return c, err
	})
	if err != nil {
		return err
	}
	for k := range s.Inbox {
		s.Inbox[k].Total, err = countCapped(ctx, tx, i.q.SQL("inbox_rows"), inboxExactCap, s.Inbox[k].Name)
		if err != nil {
			return err
		}
		// The planner's estimate lags: never show fewer than the exact recent count.
		s.Inbox[k].Total.Value = max(s.Inbox[k].Total.Value, s.Inbox[k].Last5m)
	}
	if s.Inbox == nil {
		s.Inbox = []Consumer{}
	}
	return nil
}

func (i *Inspector) snapHealth(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	rows, err := tx.Query(ctx, i.q.SQL("table_health"), i.schema, []string{"outbox_event", "outbox_event_archive", "consumed_event", "outbox_audit"})
	if err != nil {
		return err
	}
	s.Health.Tables, err = pgx.CollectRows(rows, pgx.RowToStructByPos[TableHealth])
	if err != nil {
		return err
	}
	return i.snapHorizon(ctx, tx, s)
}
