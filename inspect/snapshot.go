package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/eventstate"
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
	// NextScheduledAt is the earliest available_at of scheduled events (nil: none).
	NextScheduledAt *time.Time      `json:"next_scheduled_at"`
	Published       PublishedRecent `json:"published_recent"`
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
}

// TopN bounds the grouped lists of a Snapshot.
const TopN = 10

// Counts are the events per state. Pending = Ready + Scheduled. Published and
// Archived may be estimates on a big table.
type Counts struct {
	Ready     int64 `json:"ready"`
	Scheduled int64 `json:"scheduled"`
	Pending   int64 `json:"pending"`
	Leased    int64 `json:"leased"`
	Failed    int64 `json:"failed"`
	Published Count `json:"published"`
	Archived  Count `json:"archived"`
	// Skipped are archived events that were never published (skip).
	Skipped int64 `json:"skipped"`
}

// PublishedRecent is publishing throughput from published_at. Each window is exact
// unless more than publishedWindowCap events fall in it; then it is extrapolated from
// the newest ones and marked Estimate.
type PublishedRecent struct {
	Last1m Count `json:"last_1m"`
	Last5m Count `json:"last_5m"`
	Last1h Count `json:"last_1h"`
	// RatePerSecond is Last1m / 60.
	RatePerSecond float64 `json:"rate_per_second"`
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
	Count      int64              `json:"count"`
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
		{"failed groups", i.snapFailed},
		{"blocked aggregates", i.snapBlocked},
		{"inbox", i.snapInbox},
		{"table health", i.snapHealth},
	} {
		if err := step.fn(ctx, tx, &s); err != nil {
			return Snapshot{}, fmt.Errorf("snapshot: %s: %w", step.what, err)
		}
	}
	s.Took = Age(time.Since(start))
	return s, nil
}

// snapUnpublished: one pass over the unpublished rows (the partial indexes on
// published_at IS NULL). Each row's state and attempts bucket are computed once and
// the rows grouped by (event_type, state, bucket); the few groups are summed here.
func (i *Inspector) snapUnpublished(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	bucket := "CASE"
	for k, b := range attemptBuckets {
		if b.Max >= 0 {
			bucket += fmt.Sprintf(" WHEN attempts <= %d THEN %d", b.Max, k)
		} else {
			bucket += fmt.Sprintf(" ELSE %d END", k)
		}
	}
	rows, err := tx.Query(ctx, `SELECT now(), event_type, state, bucket, count(*), count(*) FILTER (WHERE expired),
			coalesce(extract(epoch from now() - min(created_at)), 0)::float8,
			coalesce(extract(epoch from now() - min(greatest(created_at, available_at))), 0)::float8,
			min(available_at)
		FROM (SELECT event_type, created_at, available_at, `+stateCase+` AS state, `+bucket+` AS bucket,
				lease_token IS NOT NULL AND lease_until <= now() AS expired
			FROM `+i.outbox+` WHERE published_at IS NULL
			-- OFFSET 0 keeps the subquery from being flattened, so the state is
			-- computed once per row; flattened, the planner cannot estimate the
			-- few groups and sorts 100,000 rows to disk instead of hashing.
			OFFSET 0) u
		GROUP BY event_type, state, bucket`)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.Attempts = append([]AttemptsBucket(nil), attemptBuckets...)
	byType := map[string]*TypeCounts{}
	for rows.Next() {
		var eventType, state string
		var bucket int
		var n, expired int64
		var createdAge, readyAge float64
		var minAvailable time.Time
		if err := rows.Scan(&s.TakenAt, &eventType, &state, &bucket, &n, &expired, &createdAge, &readyAge, &minAvailable); err != nil {
			return err
		}
		t := byType[eventType]
		if t == nil {
			t = &TypeCounts{EventType: eventType}
			byType[eventType] = t
		}
		s.Attempts[bucket].Count += n
		s.ExpiredLeases += expired
		switch eventstate.State(state) {
		case eventstate.Ready:
			t.Ready += n
			s.OldestReadyAge = max(s.OldestReadyAge, seconds(readyAge))
		case eventstate.Scheduled:
			t.Scheduled += n
			if s.NextScheduledAt == nil || minAvailable.Before(*s.NextScheduledAt) {
				s.NextScheduledAt = &minAvailable
			}
		case eventstate.Leased:
			t.Leased += n
		case eventstate.Failed:
			t.Failed += n
		}
		if state == string(eventstate.Ready) || state == string(eventstate.Scheduled) {
			t.OldestPendingAge = max(t.OldestPendingAge, seconds(createdAge))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.ByEventType = make([]TypeCounts, 0, len(byType))
	for _, t := range byType {
		s.ByEventType = append(s.ByEventType, *t)
		s.Counts.Ready += t.Ready
		s.Counts.Scheduled += t.Scheduled
		s.Counts.Leased += t.Leased
		s.Counts.Failed += t.Failed
		s.OldestPendingAge = max(s.OldestPendingAge, t.OldestPendingAge)
	}
	slices.SortFunc(s.ByEventType, func(a, b TypeCounts) int {
		na, nb := a.Ready+a.Scheduled+a.Leased+a.Failed, b.Ready+b.Scheduled+b.Leased+b.Failed
		if na != nb {
			return cmp.Compare(nb, na)
		}
		return strings.Compare(a.EventType, b.EventType)
	})
	s.Counts.Pending = s.Counts.Ready + s.Counts.Scheduled
	if s.TakenAt.IsZero() {
		return tx.QueryRow(ctx, "SELECT now()").Scan(&s.TakenAt)
	}
	return nil
}

func seconds(f float64) Age { return Age(time.Duration(f * float64(time.Second))) }

// snapPublished: totals capped then estimated; windows from the newest
// publishedWindowCap rows of the published_at index.
func (i *Inspector) snapPublished(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	var err error
	s.Counts.Published, err = countCapped(ctx, tx, "SELECT 1 FROM "+i.outbox+" WHERE "+eventstate.PublishedSQL, totalExactCap)
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
	// The newest rows within the hour, newest first; n < cap means the windows are exact.
	var n, n1m, n5m int64
	var span float64
	err = tx.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE published_at > now() - interval '1 minute'),
			count(*) FILTER (WHERE published_at > now() - interval '5 minutes'),
			coalesce(extract(epoch from now() - min(published_at)), 0)::float8
		FROM (SELECT published_at FROM `+i.outbox+`
			WHERE published_at IS NOT NULL AND published_at > now() - interval '1 hour'
			ORDER BY published_at DESC LIMIT $1) newest`, publishedWindowCap).Scan(&n, &n1m, &n5m, &span)
	if err != nil {
		return err
	}
	window := func(inWindow int64, w float64) Count {
		if n < publishedWindowCap || span >= w {
			return Count{Value: inWindow}
		}
		// The cap was reached inside the window: extrapolate the newest rows' rate.
		if span <= 0 {
			span = 1e-3
		}
		return Count{Value: int64(float64(n) / span * w), Estimate: true}
	}
	s.Published.Last1m = window(n1m, 60)
	s.Published.Last5m = window(n5m, 300)
	s.Published.Last1h = window(n, 3600)
	s.Published.RatePerSecond = float64(s.Published.Last1m.Value) / 60
	return nil
}

func (i *Inspector) snapFailed(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	var err error
	s.FailedByType, err = groups(ctx, tx, `SELECT event_type, count(*) FROM `+i.outbox+`
		WHERE `+eventstate.FailedSQL+` GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1`)
	if err != nil {
		return err
	}
	s.FailedByError, err = groups(ctx, tx, `SELECT left(coalesce(last_error, ''), 200), count(*) FROM `+i.outbox+`
		WHERE `+eventstate.FailedSQL+` GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1`)
	return err
}

func groups(ctx context.Context, tx pgx.Tx, q string) ([]Group, error) {
	rows, err := tx.Query(ctx, q, TopN)
	if err != nil {
		return nil, err
	}
	g, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Group])
	if g == nil {
		g = []Group{}
	}
	return g, err
}

// blockerSQL selects the events that block their aggregate: failed or scheduled, with
// no earlier unpublished event of the same aggregate (outbox_aggregate_idx).
func (i *Inspector) blockerSQL() string {
	return `(` + eventstate.FailedSQL + ` OR ` + eventstate.ScheduledSQL + `)
		AND NOT EXISTS (SELECT 1 FROM ` + i.outbox + ` p
			WHERE p.published_at IS NULL AND p.aggregate_type = ` + i.outbox + `.aggregate_type
			AND p.aggregate_id = ` + i.outbox + `.aggregate_id AND p.seq < ` + i.outbox + `.seq)`
}

func (i *Inspector) snapBlocked(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	// One pass finds the blocking events; the oldest few are read back in full. With
	// none blocked there are no rows and the count stays 0.
	rows, err := tx.Query(ctx, `WITH heads AS MATERIALIZED (
			SELECT event_id, seq FROM `+i.outbox+` WHERE `+i.blockerSQL()+`
		), top AS (
			SELECT event_id FROM heads ORDER BY seq LIMIT $1
		)
		SELECT `+eventColumns(false, false)+`,
			(SELECT count(*) FROM `+i.outbox+` w WHERE w.published_at IS NULL
				AND w.aggregate_type = e.aggregate_type AND w.aggregate_id = e.aggregate_id AND w.seq > e.seq),
			(SELECT count(*) FROM heads)
		FROM top JOIN `+i.outbox+` e USING (event_id)
		ORDER BY e.seq`, BlockedLimit)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.Blocked.Aggregates = []BlockedAggregate{}
	for rows.Next() {
		var b BlockedAggregate
		if b.Blocker, err = scanEvent(rowWithInt{rowWithInt{rows, &s.Blocked.Count}, &b.Waiting}); err != nil {
			return err
		}
		b.AggregateType, b.AggregateID = b.Blocker.AggregateType, b.Blocker.AggregateID
		s.Blocked.Aggregates = append(s.Blocked.Aggregates, b)
	}
	return rows.Err()
}

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
			FROM pg_stat_activity WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()
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
