package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/pgplan"
	"github.com/outboxtop/outboxtop/internal/sqltemplate"
	"github.com/outboxtop/outboxtop/wire"
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
	// stalled.
	ExpiredLeases int64 `json:"expired_leases"`
	// OldestPendingAge is now() − the oldest pending event's created_at (0 when none).
	OldestPendingAge Age `json:"oldest_pending_age_seconds"`
	// OldestReadyAge is how long the longest-waiting ready event has been claimable:
	// now() − max(created_at, available_at) (0 when none). High with a low
	// OldestPendingAge means the relay is not keeping up or not running.
	OldestReadyAge Age `json:"oldest_ready_age_seconds"`
	// OldestPublishableAge is how long the longest-waiting ready event that does not
	// wait behind a blocker has been claimable: the relay's lag, which a poison event
	// does not inflate (0 when none). OldestPublishableApprox: the rows read held no
	// such event; more lie past them, so the true age is unknown (at least this one).
	OldestPublishableAge    Age  `json:"oldest_publishable_age_seconds"`
	OldestPublishableApprox bool `json:"oldest_publishable_approx,omitempty"`
	// Partial: the table was too big to read every unpublished row; the counts marked
	// in Counts.Approx are estimates, ByEventType and Attempts cover the rows read,
	// and the failed groups the newest FailedGroupsOf failures.
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
	Inbox       []Consumer   `json:"inbox"`
	Health      Health       `json:"health"`
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
// some are estimates: Approx says which (Published and Archived carry their own).
type Counts struct {
	Ready int64 `json:"ready"`
	// Waiting are the ready events behind a failed or scheduled head of their
	// aggregate (wire.WaitingSQL): the ordered claim leaves them until it goes. Ready − Waiting
	// is what the relay can publish now.
	Waiting   int64 `json:"waiting"`
	Scheduled int64 `json:"scheduled"`
	Pending   int64 `json:"pending"`
	Leased    int64 `json:"leased"`
	Failed    int64 `json:"failed"`
	Published Count `json:"published"`
	Archived  Count `json:"archived"`
	// Skipped are archived events that were never published (skip).
	Skipped int64  `json:"skipped"`
	Approx  Approx `json:"approx"`
}

// Approx marks the counts of a Counts that are estimates.
type Approx struct {
	Ready     bool `json:"ready,omitempty"`
	Waiting   bool `json:"waiting,omitempty"`
	Scheduled bool `json:"scheduled,omitempty"`
	Pending   bool `json:"pending,omitempty"`
	Leased    bool `json:"leased,omitempty"`
	Failed    bool `json:"failed,omitempty"`
}

// PublishedRecent is publishing throughput from published_at. Each window is exact
// unless more than publishedWindowCap events fall in it; then it is extrapolated from
// the newest ones and marked Estimate.
type PublishedRecent struct {
	Last1m Count `json:"last_1m"`
	Last5m Count `json:"last_5m"`
	Last1h Count `json:"last_1h"`
	// Last10s is exact (the window is short).
	Last10s int64 `json:"last_10s"`
	// RatePerSecond is Last1m / 60: it lags a change by a minute.
	RatePerSecond float64 `json:"rate_per_second"`
	// CurrentPerSecond is Last10s / 10 (over the history when it is shorter): it
	// reaches 0 within 10 s of publishing stopping.
	CurrentPerSecond float64 `json:"current_per_second"`
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
	// Count is the number of blocked aggregates; Aggregates lists the BlockedLimit
	// longest-blocked ones (oldest blocking event first).
	Count int64 `json:"count"`
	// Estimate: past blockedCap blocking events of a kind, Count is estimated.
	Estimate   bool               `json:"estimate,omitempty"`
	Aggregates []BlockedAggregate `json:"aggregates"`
}

// BlockedLimit bounds Blocked.Aggregates.
const BlockedLimit = 20

// BlockedAggregate is one blocked aggregate and the event that blocks it.
type BlockedAggregate struct {
	AggregateType string `json:"aggregate_type"`
	AggregateID   string `json:"aggregate_id"`
	// Waiting is the number of the aggregate's unpublished events behind Blocker.
	Waiting int64 `json:"waiting"`
	Blocker Event `json:"blocker"`
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
	// OldestXmin is the session, prepared transaction or replication slot holding
	// back the oldest xmin (nil: none besides this snapshot's own). A long-running one
	// keeps vacuum from removing dead outbox rows: the table and its indexes bloat.
	OldestXmin *XminHolder `json:"oldest_xmin"`
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

// XminHolder is what holds back the oldest xmin.
type XminHolder struct {
	// Kind is "session", "prepared transaction" or "replication slot".
	Kind string `json:"kind"`
	// PID is the backend's pid (sessions only).
	PID int32 `json:"pid,omitempty"`
	// Name is the user and application of a session, a prepared transaction's gid, or
	// the slot's name.
	Name string `json:"name"`
	// State is a session's state ("idle in transaction", "active", …).
	State string `json:"state,omitempty"`
	// XminAge is age(xmin) in transactions.
	XminAge int64 `json:"xmin_age"`
	// Age is how long the transaction has been open (sessions, prepared transactions).
	Age   Age    `json:"age_seconds"`
	Query string `json:"query,omitempty"`
}

// Caps on exact counting in a Snapshot (see the package doc's "Cost on a big table").
const (
	totalExactCap      = 10_000
	publishedWindowCap = 20_000
	inboxExactCap      = 1_000
)

// Snapshot reads the Overview. Its cost does not grow with published history.
func (i *Inspector) Snapshot(ctx context.Context) (Snapshot, error) {
	start := time.Now()
	tx, err := i.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Every query here is built for the partial indexes on unpublished rows. With
	// the default costs the planner switches to scanning the whole table, published
	// history included, once unpublished rows pass a few percent of it, and JIT
	// compiles for longer than these queries run: 200 ms instead of 60 ms for the
	// unpublished pass at 1M published + 100k pending (fillfactor 50).
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL jit = off"); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	s := Snapshot{Schema: i.schema}
	for _, step := range []struct {
		what string
		fn   func(context.Context, pgx.Tx, *Snapshot) error
	}{
		{"unpublished counts", i.snapUnpublished},
		{"published counts", i.snapPublished},
		{"blocked aggregates", i.snapBlocked},
		{"inbox", i.snapInbox},
		{"table health", i.snapHealth},
		{"relays", i.snapRelays},
	} {
		if err := step.fn(ctx, tx, &s); err != nil {
			return Snapshot{}, fmt.Errorf("snapshot: %s: %w", step.what, err)
		}
	}
	s.Took = Age(time.Since(start))
	return s, nil
}

// Bounds on the rows a Snapshot reads one by one (see the package doc's "Cost on a
// big table"). Below them every count is exact; past them the counts are estimates,
// marked in Counts.Approx, and the breakdowns cover the rows read (Partial).
const (
	// passCap: unpublished, not failed rows read in seq order (the relay's order).
	passCap = 5_000
	// failedCap: failed rows read, newest failure first; also the cap on counting
	// scheduled rows past the pass.
	failedCap = 1_000
	// readySample: ready rows read to estimate how many wait behind a blocker when
	// the pass did not reach them, found among the newest sampleReach rows that
	// are not failed (the newest rows of a storm can all be retries: stepping over
	// 150,000 of them took 51 ms a snapshot).
	readySample = 500
	sampleReach = 5_000
)

// waitingSQL is true for a row (alias h) whose aggregate's head before it is
// failed or scheduled: the ordered claim will not take it yet (wire.WaitingSQL).
func (i *Inspector) waitingSQL(h string) string { return wire.WaitingSQL(i.outbox, h) }

func attemptsBucketSQL() string {
	bucket := "CASE"
	for k, b := range attemptBuckets {
		if b.Max >= 0 {
			bucket += fmt.Sprintf(" WHEN attempts <= %d THEN %d", b.Max, k)
		} else {
			bucket += fmt.Sprintf(" ELSE %d END", k)
		}
	}
	return bucket
}

// snapUnpublished reads the unpublished rows that are not failed in the relay's
// order (outbox_claim_seq_idx), at most passCap of them, computing each row's state,
// attempts bucket and whether it waits behind a blocker; failed rows are read by
// snapFailed. With more rows than the pass reads, the counts past it are estimated.
func (i *Inspector) snapUnpublished(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	rows, err := tx.Query(ctx, i.passSQL(), passCap+1)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.Attempts = append([]AttemptsBucket(nil), attemptBuckets...)
	byType := map[string]*TypeCounts{}
	var read, readySeen, lastSeq int64
	publishableAge := -1.0
	for rows.Next() {
		var eventType, state string
		var bucket int
		var n, expired, waiting int64
		var createdAge, readyAge float64
		var pubAge *float64
		var minAvailable time.Time
		var maxSeq int64
		var holder *string
		if err := rows.Scan(&s.TakenAt, &eventType, &state, &bucket, &n, &expired, &createdAge, &readyAge, &minAvailable, &waiting, &pubAge, &maxSeq, &holder); err != nil {
			return err
		}
		if holder != nil {
			if s.leasesBy == nil {
				s.leasesBy = map[string]int64{}
			}
			s.leasesBy[*holder] += n
		}
		read += n
		lastSeq = max(lastSeq, maxSeq)
		t := byType[eventType]
		if t == nil {
			t = &TypeCounts{EventType: eventType}
			byType[eventType] = t
		}
		s.Attempts[bucket].Count += n
		s.ExpiredLeases += expired
		switch wire.State(state) {
		case wire.Ready:
			t.Ready += n
			readySeen += n
			s.Counts.Waiting += waiting
			s.OldestReadyAge = max(s.OldestReadyAge, seconds(readyAge))
			if pubAge != nil {
				publishableAge = max(publishableAge, *pubAge)
			}
		case wire.Scheduled:
			t.Scheduled += n
			if s.NextScheduledAt == nil || minAvailable.Before(*s.NextScheduledAt) {
				s.NextScheduledAt = &minAvailable
			}
		case wire.Leased:
			t.Leased += n
		}
		if state == string(wire.Ready) || state == string(wire.Scheduled) {
			t.OldestPendingAge = max(t.OldestPendingAge, seconds(createdAge))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if publishableAge >= 0 {
		s.OldestPublishableAge = seconds(publishableAge)
	}
	if err := i.snapFailed(ctx, tx, s, byType); err != nil {
		return fmt.Errorf("failed events: %w", err)
	}
	s.ByEventType = make([]TypeCounts, 0, len(byType))
	for _, t := range byType {
		s.ByEventType = append(s.ByEventType, *t)
		s.Counts.Ready += t.Ready
		s.Counts.Scheduled += t.Scheduled
		s.Counts.Leased += t.Leased
		s.OldestPendingAge = max(s.OldestPendingAge, t.OldestPendingAge)
	}
	slices.SortFunc(s.ByEventType, func(a, b TypeCounts) int {
		na, nb := a.Ready+a.Scheduled+a.Leased+a.Failed, b.Ready+b.Scheduled+b.Leased+b.Failed
		if na != nb {
			return cmp.Compare(nb, na)
		}
		return strings.Compare(a.EventType, b.EventType)
	})
	if read > passCap {
		s.Partial = true
		if err := i.estimatePastPass(ctx, tx, s, readySeen, lastSeq, publishableAge >= 0); err != nil {
			return fmt.Errorf("estimating: %w", err)
		}
	}
	s.Counts.Pending = s.Counts.Ready + s.Counts.Scheduled
	s.Counts.Approx.Pending = s.Counts.Approx.Ready || s.Counts.Approx.Scheduled
	if s.TakenAt.IsZero() {
		return tx.QueryRow(ctx, "SELECT now()").Scan(&s.TakenAt)
	}
	return nil
}

// passSQL reads at most $1 unpublished, not failed rows in seq order
// (outbox_claim_seq_idx) and groups them by event type, state, attempts bucket
// and, for leased rows, the relay holding them (lease_holder, ” when unnamed).
func (i *Inspector) passSQL() string {
	return `SELECT now(), event_type, state, bucket, count(*), count(*) FILTER (WHERE expired),
			coalesce(extract(epoch from now() - min(created_at)), 0)::float8,
			coalesce(extract(epoch from now() - min(greatest(created_at, available_at))), 0)::float8,
			min(available_at),
			count(*) FILTER (WHERE waiting),
			extract(epoch from now() - min(greatest(created_at, available_at)) FILTER (WHERE NOT waiting))::float8,
			max(seq), holder
		FROM (SELECT h.*, h.state = 'ready' AND ` + i.waitingSQL("h") + ` AS waiting,
				CASE WHEN h.state = 'leased' THEN coalesce(h.lease_holder, '') END AS holder
			FROM (SELECT seq, event_type, aggregate_type, aggregate_id, created_at, available_at, lease_holder,
					` + stateCase + ` AS state, ` + attemptsBucketSQL() + ` AS bucket,
					lease_token IS NOT NULL AND lease_until <= now() AS expired
				FROM ` + i.outbox + ` WHERE published_at IS NULL AND failed_at IS NULL
				ORDER BY seq LIMIT $1) h
			-- OFFSET 0 keeps the subquery from being flattened, so the state is
			-- computed once per row and the few groups are hashed.
			OFFSET 0) u
		GROUP BY event_type, state, bucket, holder`
}

// estimatePastPass completes the counts when the pass stopped at passCap rows:
// scheduled is counted (capped) on its own index range, the total from the
// planner's statistics, ready is the rest, and the share of ready events that wait
// behind a blocker comes from the ready rows read. Every estimate is at least the
// exact number of rows seen, and marked.
func (i *Inspector) estimatePastPass(ctx context.Context, tx pgx.Tx, s *Snapshot, readySeen, lastSeq int64, sawPublishable bool) error {
	c := &s.Counts
	// The planner multiplies the selectivities of failed_at IS NULL and the other
	// conditions as if independent, which they are not (a scheduled row is never
	// failed): the entries of the partial index on exactly these rows, as of the
	// last vacuum or analyze, are nearer the truth.
	total, err := i.indexRows(ctx, tx, "outbox_claim_seq_idx", "SELECT 1 FROM "+i.outbox+" WHERE published_at IS NULL AND failed_at IS NULL")
	if err != nil {
		return err
	}
	total = max(total, passCap+1)
	var n int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+i.outbox+` WHERE `+wire.ScheduledSQL+`
		ORDER BY available_at LIMIT $1) s`, failedCap+1).Scan(&n); err != nil {
		return err
	}
	if n > failedCap {
		// Failed rows rarely have a future available_at: leave the condition out.
		n, err = pgplan.Rows(ctx, tx, "SELECT 1 FROM "+i.outbox+" WHERE published_at IS NULL AND available_at > now()")
		if err != nil {
			return err
		}
		n = max(n, failedCap+1)
		c.Approx.Scheduled = true
	}
	c.Scheduled = max(c.Scheduled, n)
	// Leased rows are claimed in seq order, so the pass's head holds them unless
	// blockers or retries fill it; past it they are not counted.
	c.Approx.Leased = true
	ready := max(total-c.Scheduled-c.Leased, c.Ready)
	if ready > c.Ready {
		c.Approx.Ready = true
	}
	// The ready rows past the pass: the share of them that waits comes from the
	// newest ready rows (by seq, read backwards from the end of the relay's order;
	// the pass's, at its head, are the least likely to wait). The pass's own count
	// is exact and kept.
	if c.Approx.Ready || !sawPublishable {
		var seen, waiting int64
		var pubAge *float64
		err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE waiting),
				extract(epoch from now() - min(greatest(created_at, available_at)) FILTER (WHERE NOT waiting))::float8
			FROM (SELECT h.created_at, h.available_at, `+i.waitingSQL("h")+` AS waiting
				FROM (SELECT * FROM `+i.outbox+` WHERE published_at IS NULL AND failed_at IS NULL AND seq > $2
					ORDER BY seq DESC LIMIT $3) h
				WHERE `+wire.ReadySQL+`
				ORDER BY seq DESC LIMIT $1 OFFSET 0) r`, readySample, lastSeq, sampleReach).Scan(&seen, &waiting, &pubAge)
		if err != nil {
			return err
		}
		if !sawPublishable && pubAge == nil {
			// No publishable row among those read: the claim's own index finds the
			// oldest (wire.OldestPublishableSQL, a claim's first row).
			var age float64
			if err := tx.QueryRow(ctx, wire.OldestPublishableSQL(i.outbox)).Scan(&age); err != nil {
				return err
			}
			if age > 0 {
				pubAge = &age
			}
		}
		if !sawPublishable && pubAge != nil {
			s.OldestPublishableAge = seconds(*pubAge)
		}
		if c.Approx.Ready && seen > 0 {
			c.Waiting += int64(float64(ready-readySeen)*float64(waiting)/float64(seen) + 0.5)
			c.Approx.Waiting = true
		}
	}
	c.Ready = ready
	// Found only among the newest ready rows (or not at all), the oldest
	// publishable event may be older: its age is a lower bound. Found in the pass,
	// it is the oldest: rows past the pass were added later.
	s.OldestPublishableApprox = !sawPublishable
	return nil
}

func seconds(f float64) Age { return Age(time.Duration(f * float64(time.Second))) }

// snapPublished: totals capped then estimated; windows from the newest
// publishedWindowCap rows of the published_at index.
func (i *Inspector) snapPublished(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	var err error
	s.Counts.Published, err = countCapped(ctx, tx, "SELECT 1 FROM "+i.outbox+" WHERE "+wire.PublishedSQL, totalExactCap)
	if err != nil {
		return err
	}
	s.Counts.Archived, err = countCapped(ctx, tx, "SELECT 1 FROM "+i.archive, totalExactCap)
	if err != nil {
		return err
	}
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+i.archive+" WHERE published_at IS NULL").Scan(&s.Counts.Skipped); err != nil {
		return err
	}
	// The newest rows within the hour, newest first; n < cap means the windows are
	// exact. history is how far back publishing goes at all: a window longer than
	// the history is extrapolated over the history only.
	var n, n10s, n1m, n5m int64
	var span float64
	var history *float64
	err = tx.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE published_at > now() - interval '10 seconds'),
			count(*) FILTER (WHERE published_at > now() - interval '1 minute'),
			count(*) FILTER (WHERE published_at > now() - interval '5 minutes'),
			coalesce(extract(epoch from now() - min(published_at)), 0)::float8,
			(SELECT extract(epoch from now() - min(published_at))::float8 FROM `+i.outbox+` WHERE published_at IS NOT NULL)
		FROM (SELECT published_at FROM `+i.outbox+`
			WHERE published_at IS NOT NULL AND published_at > now() - interval '1 hour'
			ORDER BY published_at DESC LIMIT $1) newest`, publishedWindowCap).Scan(&n, &n10s, &n1m, &n5m, &span, &history)
	if err != nil {
		return err
	}
	s.Published.Last10s = n10s
	s.Published.Last1m = extrapolate(n, span, n1m, 60, history)
	s.Published.Last5m = extrapolate(n, span, n5m, 300, history)
	s.Published.Last1h = extrapolate(n, span, n, 3600, history)
	s.Published.RatePerSecond = float64(s.Published.Last1m.Value) / 60
	// Over the last 10 s, or over the history when publishing began more recently
	// (a just-started relay would otherwise read a fraction of its rate).
	window := 10.0
	if history != nil && *history < window {
		window = max(*history, 1)
	}
	s.Published.CurrentPerSecond = float64(n10s) / window
	// The events ever inserted: the seq identity's last value (NULL without the
	// privilege to read it, or before the first insert). The console's incoming rate.
	err = tx.QueryRow(ctx, `SELECT last_value FROM pg_sequences
		WHERE (schemaname, sequencename) = (SELECT n.nspname, c.relname FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.oid = pg_get_serial_sequence($1, 'seq')::regclass)`, i.outbox).Scan(&s.Inserted)
	if err == pgx.ErrNoRows {
		return nil // no identity behind seq: the console derives the rate otherwise
	}
	return err
}

// extrapolate is the count for a window of w seconds: exact (inWindow) unless the
// newest n rows read (capped) span less than the window; then the newest rows' rate
// over the part of the window that has history, never below the n rows counted.
func extrapolate(n int64, span float64, inWindow int64, w float64, history *float64) Count {
	if n < publishedWindowCap || span >= w {
		return Count{Value: inWindow}
	}
	covered := w
	if history != nil && *history < w {
		covered = *history
	}
	span = max(span, 1e-3)
	return Count{Value: max(int64(float64(n)/span*covered), n), Estimate: true}
}

// indexRows is the number of entries of a partial index as of the last vacuum or
// analyze (pg_class.reltuples), else the planner's estimate of query.
func (i *Inspector) indexRows(ctx context.Context, tx pgx.Tx, index, query string) (int64, error) {
	var n *float64
	err := tx.QueryRow(ctx, `SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass($1) AND reltuples >= 0`,
		sqltemplate.Name(i.schema, index)).Scan(&n)
	if err != nil && err != pgx.ErrNoRows {
		return 0, err
	}
	if n != nil {
		return int64(*n), nil
	}
	return pgplan.Rows(ctx, tx, query)
}

// snapFailed counts the failed events and groups them by type, error and attempts:
// all of them up to failedCap, else the newest failedCap failures (outbox_failed_idx
// backwards) and the total from the statistics, marked.
func (i *Inspector) snapFailed(ctx context.Context, tx pgx.Tx, s *Snapshot, byType map[string]*TypeCounts) error {
	newest := `(SELECT event_type, attempts, last_error FROM ` + i.outbox + ` WHERE ` + wire.FailedSQL + `
		ORDER BY failed_at DESC, seq DESC LIMIT ` + fmt.Sprint(failedCap+1) + `) f`
	// One read of the rows, grouped finely; the groups are summed three ways here.
	rows, err := tx.Query(ctx, `SELECT event_type, `+attemptsBucketSQL()+`, left(coalesce(last_error, ''), 200), count(*)
		FROM `+newest+` GROUP BY 1, 2, 3`)
	if err != nil {
		return err
	}
	var read int64
	byError := map[string]int64{}
	for rows.Next() {
		var eventType, lastError string
		var bucket int
		var n int64
		if err := rows.Scan(&eventType, &bucket, &lastError, &n); err != nil {
			rows.Close()
			return err
		}
		read += n
		t := byType[eventType]
		if t == nil {
			t = &TypeCounts{EventType: eventType}
			byType[eventType] = t
		}
		t.Failed += n
		s.Attempts[bucket].Count += n
		byError[lastError] += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	s.Counts.Failed = read
	if read > failedCap {
		s.Partial = true
		s.FailedGroupsOf = read
		est, err := i.indexRows(ctx, tx, "outbox_failed_idx", "SELECT 1 FROM "+i.outbox+" WHERE "+wire.FailedSQL)
		if err != nil {
			return err
		}
		s.Counts.Failed, s.Counts.Approx.Failed = max(est, read), true
	}
	s.FailedByType = []Group{}
	for _, t := range byType {
		if t.Failed > 0 {
			s.FailedByType = append(s.FailedByType, Group{Key: t.EventType, Count: t.Failed})
		}
	}
	s.FailedByError = []Group{}
	for k, n := range byError {
		s.FailedByError = append(s.FailedByError, Group{Key: k, Count: n})
	}
	s.FailedByType, s.FailedByError = topGroups(s.FailedByType), topGroups(s.FailedByError)
	return nil
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

// blockerSQL selects the events that block their aggregate: failed or scheduled, with
// no earlier unpublished event of the same aggregate (outbox_aggregate_idx).
func (i *Inspector) blockerSQL() string { return wire.BlockerSQL(i.outbox, i.outbox) }

// blockedCap bounds the blocking events found per kind (failed, scheduled) when
// counting blocked aggregates, and blockedProbe the events of each kind read to
// find them; past either the count is an estimate. The probe bound matters
// where few events of a kind head their aggregate (retries an unordered relay
// scheduled behind ready events): finding 250 heads among 150,000 such retries
// read them all, 1.4 s a snapshot.
const (
	blockedCap   = 250
	blockedProbe = 2000
)

func (i *Inspector) snapBlocked(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	// The blocking events of each kind, found along that kind's own index (failed:
	// oldest failure first; scheduled: soonest retry first), each bounded; the
	// BlockedLimit oldest by seq among them are read back in full.
	rows, err := tx.Query(ctx, `WITH failed_read AS MATERIALIZED (
			SELECT event_id, seq, `+i.firstSQL()+` AS head FROM `+i.outbox+` WHERE `+wire.FailedSQL+`
			ORDER BY failed_at, seq LIMIT $3
		), scheduled_read AS MATERIALIZED (
			SELECT event_id, seq, `+i.firstSQL()+` AS head FROM `+i.outbox+` WHERE `+wire.ScheduledSQL+`
			ORDER BY available_at, created_at, event_id LIMIT $3
		), failed AS MATERIALIZED (
			SELECT event_id, seq FROM failed_read WHERE head LIMIT $2
		), scheduled AS MATERIALIZED (
			SELECT event_id, seq FROM scheduled_read WHERE head LIMIT $2
		), heads AS (
			SELECT * FROM failed UNION ALL SELECT * FROM scheduled
		), top AS (
			SELECT event_id FROM heads ORDER BY seq LIMIT $1
		)
		SELECT `+eventColumns(false, false)+`,
			(SELECT count(*) FROM `+i.outbox+` w WHERE w.published_at IS NULL
				AND w.aggregate_type = e.aggregate_type AND w.aggregate_id = e.aggregate_id AND w.seq > e.seq),
			(SELECT count(*) FROM failed), (SELECT count(*) FROM scheduled)
		FROM top JOIN `+i.outbox+` e USING (event_id)
		ORDER BY e.seq`, BlockedLimit, blockedCap+1, blockedProbe+1)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.Blocked.Aggregates = []BlockedAggregate{}
	var nFailed, nScheduled int64
	for rows.Next() {
		var b BlockedAggregate
		if b.Blocker, err = scanEvent(rowWithInt{rowWithInt{rowWithInt{rows, &nScheduled}, &nFailed}, &b.Waiting}); err != nil {
			return err
		}
		b.AggregateType, b.AggregateID = b.Blocker.AggregateType, b.Blocker.AggregateID
		s.Blocked.Aggregates = append(s.Blocked.Aggregates, b)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.Blocked.Count = nFailed + nScheduled
	past := nFailed > blockedCap || nScheduled > blockedCap
	if !past {
		// Exact only if every failed and scheduled event was read.
		var failedRows, scheduledRows int64
		if err := tx.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM (SELECT 1 FROM `+i.outbox+` WHERE `+wire.FailedSQL+` LIMIT $1) f),
				(SELECT count(*) FROM (SELECT 1 FROM `+i.outbox+` WHERE `+wire.ScheduledSQL+` LIMIT $1) s)`,
			blockedProbe+1).Scan(&failedRows, &scheduledRows); err != nil {
			return err
		}
		past = failedRows > blockedProbe || scheduledRows > blockedProbe
	}
	if past {
		// Aggregates with a failed or scheduled event, by the planner's statistics:
		// an upper bound of the blocked ones in the usual case (the first such
		// event heads its aggregate), never below those found.
		est, err := pgplan.Rows(ctx, tx, wire.TroubledAggregatesSQL(i.outbox))
		if err != nil {
			return err
		}
		s.Blocked.Count, s.Blocked.Estimate = max(est, s.Blocked.Count), true
	}
	return nil
}

// firstSQL: the row has no earlier unpublished event of its aggregate (it heads it).
func (i *Inspector) firstSQL() string { return wire.HeadSQL(i.outbox, i.outbox) }

type rowWithInt struct {
	r interface{ Scan(...any) error }
	n *int64
}

func (r rowWithInt) Scan(dest ...any) error { return r.r.Scan(append(dest, r.n)...) }

func (i *Inspector) snapInbox(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	rows, err := tx.Query(ctx, consumersCTE(i.consumed)+`
		SELECT c.consumer_name,
			(SELECT count(*) FROM `+i.consumed+` e WHERE e.consumer_name = c.consumer_name AND e.consumed_at > now() - interval '5 minutes'),
			(SELECT max(consumed_at) FROM `+i.consumed+` e WHERE e.consumer_name = c.consumer_name)
		FROM consumers c WHERE c.consumer_name IS NOT NULL LIMIT 100`)
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
		s.Inbox[k].Total, err = countCapped(ctx, tx, "SELECT 1 FROM "+i.consumed+" WHERE consumer_name = $1", inboxExactCap, s.Inbox[k].Name)
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
	rows, err := tx.Query(ctx, `SELECT c.relname, coalesce(st.n_live_tup, 0), coalesce(st.n_dead_tup, 0),
			st.last_vacuum, st.last_autovacuum, st.last_autoanalyze,
			pg_table_size(c.oid), pg_indexes_size(c.oid)
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
		WHERE n.nspname = $1 AND c.relname = ANY($2) AND c.relkind IN ('r', 'p')
		ORDER BY array_position($2, c.relname::text)`,
		i.schema, []string{"outbox_event", "outbox_event_archive", "consumed_event", "outbox_audit"})
	if err != nil {
		return err
	}
	s.Health.Tables, err = pgx.CollectRows(rows, pgx.RowToStructByPos[TableHealth])
	if err != nil {
		return err
	}
	var x XminHolder
	var age float64
	err = tx.QueryRow(ctx, `SELECT kind, pid, name, state, xmin_age, secs, query FROM (
			SELECT 'session' AS kind, pid, coalesce(usename, '') || ' ' || coalesce(application_name, '') AS name,
				coalesce(state, '') AS state, age(backend_xmin)::bigint AS xmin_age,
				coalesce(extract(epoch from now() - xact_start), 0)::float8 AS secs, left(coalesce(query, ''), 200) AS query
			-- Not this session, nor one whose transaction began after this snapshot's
			-- (another connection of this process, most likely): it holds back
			-- nothing older than this snapshot does, and its age would read negative.
			FROM pg_stat_activity WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()
				AND (xact_start IS NULL OR xact_start < now())
			UNION ALL
			SELECT 'prepared transaction', 0, gid, '', age(transaction)::bigint,
				extract(epoch from now() - prepared)::float8, ''
			FROM pg_prepared_xacts
			UNION ALL
			SELECT 'replication slot', 0, slot_name, '', greatest(age(xmin), age(catalog_xmin))::bigint, 0, ''
			FROM pg_replication_slots WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL
		) h ORDER BY xmin_age DESC NULLS LAST LIMIT 1`).Scan(&x.Kind, &x.PID, &x.Name, &x.State, &x.XminAge, &age, &x.Query)
	if err == pgx.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	x.Age = seconds(age)
	s.Health.OldestXmin = &x
	return nil
}
