package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/wire"
)

// headBlocksSQL is wire.WaitingSQL's test of an aggregate's head p: failed or
// scheduled. The ready events behind such a head wait; any other head (ready,
// leased) lets the relay go on.
const headBlocksSQL = `(p.failed_at IS NOT NULL OR (p.available_at > now() AND (p.lease_until IS NULL OR p.lease_until <= now())))`

// passSQL reads the first $1 unpublished, not failed rows in seq order: those
// from seq $3 on (outbox_claim_seq_idx), the late rows below $3 (rows that the
// transactions from xid $4 on and those in $5 made unpublished or not failed,
// through outbox_ready_xid_idx and outbox_stopped_xid_idx), and those of the
// seqs $7 (see floor.go). Its first column says which of four kinds a row is:
//
//   - 0: a group of those rows by event type, state, attempts bucket and, for
//     leased rows, the relay holding them (lease_holder, ” when unnamed);
//   - 1: an aggregate of those rows, at most $2, most ready rows first, with
//     its head (one probe of outbox_aggregate_idx from the head $6 remembers
//     for it or its first late row, whichever comes first; from the
//     aggregate's start when $6 has none, not from its first row read: a
//     failed head is not among them) and whether that head blocks it;
//   - 2: an aggregate of the late rows (failed ones too) and its first late row;
//   - 3: one row, the seqs of the rows read, in order.
func (i *Inspector) passSQL() string {
	cols := `seq, event_type, aggregate_type, aggregate_id, created_at, available_at, lease_holder, lease_token, lease_until, attempts, failed_at`
	// Through outbox_ready_xid_idx (not failed, not blocked) and
	// outbox_stopped_xid_idx (failed or blocked), each with the predicate of
	// its index: the transactions from $4 on, then each one of $5. OFFSET 0
	// keeps each read to its own seeks (an OR would read a whole index).
	late := func(xid string) string {
		return `SELECT ` + cols + ` FROM ` + i.outbox + ` r WHERE r.ready_xid ` + xid + `
					AND r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked OFFSET 0`
	}
	stopped := func(xid string) string {
		return `SELECT ` + cols + ` FROM ` + i.outbox + ` r WHERE r.ready_xid ` + xid + `
					AND r.published_at IS NULL AND (r.failed_at IS NOT NULL OR r.blocked) OFFSET 0`
	}
	return `WITH late AS MATERIALIZED (
			SELECT l.* FROM (
				(` + late(">= $4::xid8") + `)
				UNION ALL (` + stopped(">= $4::xid8") + `)
				UNION ALL
				SELECT r.* FROM pg_catalog.unnest($5::xid8[]) AS x(xid) CROSS JOIN LATERAL (
					(` + late("= x.xid") + `)
					UNION ALL (` + stopped("= x.xid") + `)) r
				OFFSET 0) l
		), lm AS MATERIALIZED (
			SELECT aggregate_type, aggregate_id, min(seq) AS seq FROM late GROUP BY aggregate_type, aggregate_id
		), s AS MATERIALIZED (
			SELECT seq, event_type, aggregate_type, aggregate_id, created_at, available_at, lease_holder,
				` + stateCase + ` AS state, ` + attemptsBucketSQL() + ` AS bucket,
				lease_token IS NOT NULL AND lease_until <= now() AS expired
			FROM (
				SELECT *, NULL::timestamptz AS published_at FROM late WHERE failed_at IS NULL AND seq < $3
				UNION ALL
				(SELECT ` + cols + `, published_at FROM ` + i.outbox + ` WHERE published_at IS NULL AND failed_at IS NULL AND seq >= $3
				 ORDER BY seq LIMIT $1)
				UNION ALL
				-- The rows seen before, each looked up again (outbox_claim_seq_idx),
				-- but for the late ones, read above.
				SELECT r.* FROM pg_catalog.unnest($7::bigint[]) AS q(seq) CROSS JOIN LATERAL (
					SELECT ` + cols + `, published_at FROM ` + i.outbox + ` r
					WHERE r.seq = q.seq AND r.published_at IS NULL AND r.failed_at IS NULL
						AND NOT coalesce(r.ready_xid >= $4::xid8 OR r.ready_xid = ANY ($5::xid8[]), false)
					OFFSET 0) r
			) u
			ORDER BY seq LIMIT $1
		), a AS MATERIALIZED (
			SELECT aggregate_type, aggregate_id, count(*) FILTER (WHERE state = 'ready') AS ready, min(seq) AS first,
				min(greatest(created_at, available_at)) FILTER (WHERE state = 'ready') AS ready_since
			FROM s GROUP BY aggregate_type, aggregate_id
			ORDER BY 3 DESC, 4 LIMIT $2
		)
		SELECT 0, event_type, state, bucket, count(*), count(*) FILTER (WHERE expired),
			coalesce(` + nullAge("min(created_at)") + `, 0),
			coalesce(` + nullAge("min(greatest(created_at, available_at))") + `, 0),
			` + finite("min(available_at)") + `, CASE WHEN state = 'leased' THEN coalesce(lease_holder, '') END,
			NULL::text, NULL::text, NULL::bigint, NULL::boolean, NULL::float8, NULL::bigint[]
		FROM s GROUP BY event_type, state, bucket, 10
		UNION ALL
		SELECT 1, NULL, NULL, NULL, a.ready, NULL, NULL, NULL, NULL, NULL,
			a.aggregate_type, a.aggregate_id, h.seq, h.blocks, ` + nullAge("a.ready_since") + `, NULL
		FROM a LEFT JOIN lm ON lm.aggregate_type = a.aggregate_type AND lm.aggregate_id = a.aggregate_id
		CROSS JOIN LATERAL (SELECT ($6::jsonb -> a.aggregate_type ->> a.aggregate_id)::bigint AS seq) hint
		CROSS JOIN LATERAL (
			SELECT p.seq, ` + headBlocksSQL + ` AS blocks FROM ` + i.outbox + ` p
			WHERE p.published_at IS NULL AND p.aggregate_type = a.aggregate_type AND p.aggregate_id = a.aggregate_id
				AND p.seq >= CASE WHEN hint.seq IS NULL THEN ` + minSeq + ` ELSE least(hint.seq, lm.seq) END
			ORDER BY p.seq LIMIT 1) h
		UNION ALL
		SELECT 2, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, aggregate_type, aggregate_id, seq, NULL, NULL, NULL FROM lm
		UNION ALL
		SELECT 3, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			coalesce((SELECT array_agg(seq ORDER BY seq) FROM s), '{}')`
}

// nullAge is ageSeconds of col, NULL when col is (an infinite time stored
// before the tables refused them reads as the latest or earliest instant).
func nullAge(col string) string {
	return `(CASE WHEN ` + col + ` IS NOT NULL THEN ` + ageSeconds(col) + ` END)`
}

// aggKey names an aggregate.
type aggKey struct{ typ, id string }

// probed is an aggregate of the scanned rows and its head.
type probed struct {
	key     aggKey
	ready   int64 // its ready rows among those scanned
	headSeq int64
	blocks  bool
}

// unpublished is what snapUnpublished learned beyond the Snapshot's fields, for
// snapBlocked.
type unpublished struct {
	covered   bool     // the scan read every unpublished, not failed row
	probedAll bool     // every aggregate of the scanned rows was probed
	probes    []probed // most ready rows first
	countOnly bool     // snapBlocked counts the blocked aggregates, lists none (Backlog)
	heads     []byte   // jsonb {type: {id: seq}}: no unpublished row of the aggregate is before seq
}

// snapUnpublished counts the unpublished rows by state. The scan (passSQL)
// reads the first rows in the relay's order; when it reaches them all, every
// count is exact. Past it, three capped counts along indexes that together
// hold each unpublished, not failed row once (outbox_claim_idx, the blocked
// hint's outbox_blocked_idx, and outbox_ready_idx past now()) make the counts
// exact again when none reaches its cap, and lower bounds otherwise. Failed
// rows are counted by snapFailed.
func (i *Inspector) snapUnpublished(ctx context.Context, tx pgx.Tx, s *Snapshot, u *unpublished) error {
	cp := i.snapCaps()
	floor := i.floor.get()
	rows, err := tx.Query(ctx, i.passSQL(), append([]any{cp.scan + 1, cp.probe + 1}, floor.passArgs()...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.Attempts = append([]AttemptsBucket(nil), attemptBuckets...)
	byType := map[string]*TypeCounts{}
	var read int64
	var seqs []int64
	lateMin := map[aggKey]int64{}
	for rows.Next() {
		var kind int
		var eventType, state, aggType, aggID *string
		var bucket *int
		var n int64
		var expired *int64
		var createdAge, readyAge, readySince *float64
		var minAvailable *time.Time
		var holder *string
		var headSeq *int64
		var blocks *bool
		if err := rows.Scan(&kind, &eventType, &state, &bucket, &n, &expired, &createdAge, &readyAge, &minAvailable,
			&holder, &aggType, &aggID, &headSeq, &blocks, &readySince, &seqs); err != nil {
			return err
		}
		switch kind {
		case 2:
			lateMin[aggKey{*aggType, *aggID}] = *headSeq
			continue
		case 3:
			continue
		}
		if kind == 1 {
			p := probed{key: aggKey{*aggType, *aggID}, ready: n, headSeq: *headSeq, blocks: *blocks}
			u.probes = append(u.probes, p)
			if p.ready > 0 && !p.blocks && readySince != nil {
				// Its ready rows do not wait: the oldest of them is publishable.
				s.OldestPublishableAge = max(s.OldestPublishableAge, seconds(*readySince))
			}
			continue
		}
		if holder != nil {
			if s.leasesBy == nil {
				s.leasesBy = map[string]int64{}
			}
			s.leasesBy[*holder] += n
		}
		read += n
		t := byType[*eventType]
		if t == nil {
			t = &TypeCounts{EventType: *eventType}
			byType[*eventType] = t
		}
		s.Attempts[*bucket].Count += n
		s.ExpiredLeases += *expired
		switch wire.State(*state) {
		case wire.Ready:
			t.Ready += n
			s.OldestReadyAge = max(s.OldestReadyAge, seconds(*readyAge))
		case wire.Scheduled:
			t.Scheduled += n
			if s.NextScheduledAt == nil || minAvailable.Before(*s.NextScheduledAt) {
				s.NextScheduledAt = minAvailable
			}
		case wire.Leased:
			t.Leased += n
		}
		if *state == string(wire.Ready) || *state == string(wire.Scheduled) {
			t.OldestPendingAge = max(t.OldestPendingAge, seconds(*createdAge))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	var snapXmax uint64
	var snapXip []uint64
	if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot()), ARRAY(SELECT pg_snapshot_xip(pg_current_snapshot()))`).
		Scan(&snapXmax, &snapXip); err != nil {
		return err
	}
	u.covered = read <= int64(cp.scan)
	next := floor.next(snapXmax, snapXip, seqs, u.covered, lateMin, u.probes)
	i.floor.set(next)
	u.heads = next.headsJSON()
	u.probedAll = len(u.probes) <= cp.probe
	// Most ready rows first: all the aggregates with ready rows were probed when
	// all were, or when the last one probed has none.
	readyProbed := u.probedAll || len(u.probes) == 0 || u.probes[len(u.probes)-1].ready == 0
	if err := i.snapFailed(ctx, tx, s, byType); err != nil {
		return fmt.Errorf("failed events: %w", err)
	}
	s.ByEventType = make([]TypeCounts, 0, len(byType))
	c := &s.Counts
	for _, t := range byType {
		s.ByEventType = append(s.ByEventType, *t)
		c.Ready += t.Ready
		c.Scheduled += t.Scheduled
		c.Leased += t.Leased
		s.OldestPendingAge = max(s.OldestPendingAge, t.OldestPendingAge)
	}
	slices.SortFunc(s.ByEventType, func(a, b TypeCounts) int {
		na, nb := a.Ready+a.Scheduled+a.Leased+a.Failed, b.Ready+b.Scheduled+b.Leased+b.Failed
		if na != nb {
			return cmp.Compare(nb, na)
		}
		return strings.Compare(a.EventType, b.EventType)
	})
	// Where the scanned ready rows are: behind a blocking head (waiting) or not
	// (publishable). Each aggregate's ready rows all come after its head when
	// that head blocks (a blocking head is not ready).
	var waiting, publishable int64
	for _, p := range u.probes {
		if p.blocks {
			waiting += p.ready
		} else {
			publishable += p.ready
		}
	}
	c.Waiting = waiting
	if !u.covered {
		s.Partial = true
		// The scan's rows may hold few of the ready ones (retries first in the
		// relay's order): count and place the rows along their own indexes.
		var err error
		if waiting, publishable, readyProbed, err = i.countPastScan(ctx, tx, s, u); err != nil {
			return fmt.Errorf("counting: %w", err)
		}
		c.Waiting = waiting
	}
	switch {
	case c.Bounds.Ready == Exact && readyProbed:
		c.Publishable = c.Ready - c.Waiting
	case c.Bounds.Ready == Exact:
		// Every ready row is counted but not every one's head was read: more may
		// wait than were found, so fewer may be publishable than the difference.
		c.Bounds.Waiting, c.Bounds.Publishable = LowerBound, UpperBound
		c.Publishable = c.Ready - c.Waiting
	default:
		// Neither the ready rows nor where they are is known past the scan: the
		// scanned ones found waiting, and found publishable, are at least there.
		c.Bounds.Waiting, c.Bounds.Publishable = LowerBound, LowerBound
		c.Publishable = publishable
	}
	if c.Bounds.Publishable != Exact {
		// Found only where the scan reached (or not at all), the oldest
		// publishable event may be older: its age is a lower bound. The claim's
		// own index finds one (wire.OldestPublishableSQL, a claim's first row).
		s.OldestPublishableApprox = true
		var age float64
		if err := tx.QueryRow(ctx, wire.OldestPublishableSQL(i.outbox)).Scan(&age); err != nil {
			return err
		}
		s.OldestPublishableAge = max(s.OldestPublishableAge, seconds(age))
	}
	c.Pending = c.Ready + c.Scheduled
	c.Bounds.Pending = sumBound(c.Bounds.Ready, c.Bounds.Scheduled)
	b := c.Bounds
	c.Approx = Approx{Ready: b.Ready != Exact, Waiting: b.Waiting != Exact, Scheduled: b.Scheduled != Exact,
		Pending: b.Pending != Exact, Leased: b.Leased != Exact, Failed: b.Failed != Exact}
	if s.TakenAt.IsZero() {
		return tx.QueryRow(ctx, "SELECT now()").Scan(&s.TakenAt)
	}
	return nil
}

// countPastScan counts the unpublished, not failed rows by state along three
// index ranges that hold each such row once, however the blocked hint is set:
// not blocked and available (outbox_claim_idx: ready or leased), blocked and
// available (outbox_blocked_idx), available later (outbox_ready_idx past now():
// scheduled or leased; failed ones there are read, not counted). Each range
// stops at caps.count rows; a range that did not makes its states' counts
// exact, one that did makes them lower bounds. A count is never below the
// scan's (both count rows that exist).
//
// The ready rows of the first two ranges are grouped by aggregate in the same
// statement and the heads of the caps.probe aggregates with the most are
// probed: the waiting and publishable rows found, and whether every aggregate
// of the ready rows read was probed. Blocked heads found join u.probes (for
// snapBlocked).
func (i *Inspector) countPastScan(ctx context.Context, tx pgx.Tx, s *Snapshot, u *unpublished) (waiting, publishable int64, all bool, err error) {
	cp := i.snapCaps()
	const tally = `count(*), count(*) FILTER (WHERE ` + wire.ReadySQL + `), count(*) FILTER (WHERE ` + wire.ScheduledSQL + `),
		count(*) FILTER (WHERE ` + wire.LeasedSQL + `), count(*) FILTER (WHERE ` + wire.ExpiredLeaseSQL + `)`
	cols := `aggregate_type, aggregate_id, seq, created_at, available_at, lease_until, lease_token, published_at, failed_at`
	rows, err := tx.Query(ctx, `WITH r0 AS MATERIALIZED (
			SELECT `+cols+` FROM `+i.outbox+`
			WHERE published_at IS NULL AND failed_at IS NULL AND NOT blocked AND available_at <= now()
			ORDER BY available_at, seq LIMIT $1
		), r1 AS MATERIALIZED (
			SELECT `+cols+` FROM `+i.outbox+`
			WHERE blocked AND published_at IS NULL AND failed_at IS NULL AND available_at <= now()
			ORDER BY aggregate_type, aggregate_id, seq LIMIT $1
		), a AS MATERIALIZED (
			-- The condition in FILTER, not WHERE: under a WHERE the planner
			-- expected a row or two and sorted the rows by aggregate (in the
			-- collation's order, 40 ms for 20,000) instead of hashing them.
			SELECT aggregate_type, aggregate_id, count(*) FILTER (WHERE `+wire.ReadySQL+`) AS ready, min(seq) AS first,
				min(greatest(created_at, available_at)) FILTER (WHERE `+wire.ReadySQL+`) AS since
			FROM (SELECT * FROM r0 UNION ALL SELECT * FROM r1) r
			GROUP BY aggregate_type, aggregate_id HAVING count(*) FILTER (WHERE `+wire.ReadySQL+`) > 0
			ORDER BY 3 DESC, 4 LIMIT $2
		)
		SELECT 0, `+tally+`, NULL::text, NULL::text, NULL::float8, NULL::bigint, NULL::boolean FROM r0
		UNION ALL SELECT 1, `+tally+`, NULL, NULL, NULL, NULL, NULL FROM r1
		UNION ALL SELECT 2, a.ready, NULL, NULL, NULL, NULL, a.aggregate_type, a.aggregate_id,
			`+nullAge("a.since")+`, h.seq, h.blocks
		FROM a CROSS JOIN LATERAL (
			SELECT p.seq, `+headBlocksSQL+` AS blocks FROM `+i.outbox+` p
			WHERE p.published_at IS NULL AND p.aggregate_type = a.aggregate_type AND p.aggregate_id = a.aggregate_id
			ORDER BY p.seq LIMIT 1) h`, cp.count+1, cp.probe+1)
	if err != nil {
		return 0, 0, false, err
	}
	type part struct{ rows, ready, scheduled, leased, expired int64 }
	var parts [3]part
	probes := 0
	for rows.Next() {
		var kind int
		var n int64
		var ready, scheduled, leased, expired, headSeq *int64
		var typ, id *string
		var since *float64
		var blocks *bool
		if err := rows.Scan(&kind, &n, &ready, &scheduled, &leased, &expired, &typ, &id, &since, &headSeq, &blocks); err != nil {
			rows.Close()
			return 0, 0, false, err
		}
		if kind < 2 {
			parts[kind] = part{n, *ready, *scheduled, *leased, *expired}
			continue
		}
		probes++
		p := probed{key: aggKey{*typ, *id}, ready: n, headSeq: *headSeq, blocks: *blocks}
		if p.blocks {
			waiting += p.ready
			u.probes = append(u.probes, p)
		} else {
			publishable += p.ready
			s.OldestPublishableAge = max(s.OldestPublishableAge, seconds(*since))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, false, err
	}
	// Failed rows are read in this range too, and not counted: naming failed_at
	// in the condition made the planner read outbox_claim_seq_idx whole and sort
	// it (217 ms beside a storm instead of 20). The earliest retry comes with it:
	// the scan's may not be the earliest.
	p := &parts[2]
	var next *time.Time
	if err := tx.QueryRow(ctx, `SELECT `+tally+`, `+finite(`min(available_at) FILTER (WHERE `+wire.ScheduledSQL+`)`)+`
		FROM (SELECT * FROM `+i.outbox+` WHERE published_at IS NULL AND available_at > now()
			ORDER BY available_at, created_at, event_id LIMIT $1) r`, cp.count+1).
		Scan(&p.rows, &p.ready, &p.scheduled, &p.leased, &p.expired, &next); err != nil {
		return 0, 0, false, err
	}
	if next != nil && (s.NextScheduledAt == nil || next.Before(*s.NextScheduledAt)) {
		s.NextScheduledAt = next
	}
	done := func(ks ...int) Bound {
		for _, k := range ks {
			if parts[k].rows > int64(cp.count) {
				return LowerBound
			}
		}
		return Exact
	}
	c := &s.Counts
	set := func(v *int64, b *Bound, n int64, nb Bound) {
		if nb == Exact {
			*v, *b = n, Exact
			return
		}
		*v, *b = max(*v, n), LowerBound
	}
	set(&c.Ready, &c.Bounds.Ready, parts[0].ready+parts[1].ready, done(0, 1))
	set(&c.Scheduled, &c.Bounds.Scheduled, parts[2].scheduled, done(2))
	set(&c.Leased, &c.Bounds.Leased, parts[0].leased+parts[1].leased+parts[2].leased, done(0, 1, 2))
	set(&s.ExpiredLeases, &c.Bounds.ExpiredLeases, parts[0].expired+parts[1].expired+parts[2].expired, done(0, 1, 2))
	// The ready rows placed are as many distinct ready rows.
	c.Ready = max(c.Ready, waiting+publishable)
	return waiting, publishable, probes <= cp.probe, nil
}

// snapFailed counts the failed events (an index-only count of outbox_failed_idx,
// exact up to caps.failed, a lower bound past it) and groups the newest
// caps.failedGroups of them by type, error and attempts (Snapshot.FailedGroupsOf
// says when they are not all of them).
//
// Both reads run with sorting off, both in outbox_failed_idx's order: with no
// failed row the planner believes every partial index of unpublished rows
// nearly empty, and chose to read outbox_aggregate_idx in full and sort, which
// behind a held horizon walks every dead entry kept (911,000 buffers, 3.4 s a
// snapshot after 10 minutes at 1,500 events/s, in the horizon profile).
func (i *Inspector) snapFailed(ctx context.Context, tx pgx.Tx, s *Snapshot, byType map[string]*TypeCounts) error {
	cp := i.snapCaps()
	if _, err := tx.Exec(ctx, "SET LOCAL enable_sort = off"); err != nil {
		return err
	}
	// One read of the rows, grouped finely; the groups are summed three ways here.
	rows, err := tx.Query(ctx, i.failedGroupsSQL())
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
	if read > int64(cp.failedGroups) {
		s.Partial = true
		s.FailedGroupsOf = read
	}
	if err := tx.QueryRow(ctx, i.failedCountSQL(), cp.failed+1).Scan(&s.Counts.Failed); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL enable_sort TO DEFAULT"); err != nil {
		return err
	}
	if s.Counts.Failed > int64(cp.failed) {
		s.Counts.Bounds.Failed = LowerBound
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

// blockersSQL reads the oldest $1 failures and the soonest $1 retries, each
// with whether it heads its aggregate, and how many of each it read.
func (i *Inspector) blockersSQL() string {
	// A row heads its aggregate when no unpublished row of it comes before,
	// from the head the pass knows on ($2, u.heads).
	head := `NOT EXISTS (SELECT 1 FROM ` + i.outbox + ` p
			WHERE p.published_at IS NULL AND p.aggregate_type = r.aggregate_type AND p.aggregate_id = r.aggregate_id
			AND p.seq < r.seq AND p.seq >= coalesce(($2::jsonb -> r.aggregate_type ->> r.aggregate_id)::bigint, ` + minSeq + `))`
	return `WITH failed_read AS MATERIALIZED (
			SELECT aggregate_type, aggregate_id, seq, ` + head + ` AS head FROM ` + i.outbox + ` r WHERE ` + wire.FailedSQL + `
			ORDER BY failed_at, seq LIMIT $1
		), scheduled_read AS MATERIALIZED (
			-- OFFSET 0: along outbox_ready_idx from now(), filtered as it goes.
			-- Planned whole, the planner (which believes a partial index of
			-- unpublished rows nearly empty) read outbox_claim_seq_idx in full
			-- and sorted: 10,000 buffers behind a held horizon for no row.
			SELECT aggregate_type, aggregate_id, seq, ` + head + ` AS head
			FROM (SELECT * FROM ` + i.outbox + ` WHERE published_at IS NULL AND available_at > now()
				ORDER BY available_at, created_at, event_id OFFSET 0) r
			WHERE ` + wire.ScheduledSQL + `
			LIMIT $1
		)
		SELECT aggregate_type, aggregate_id, seq FROM failed_read WHERE head
		UNION ALL SELECT aggregate_type, aggregate_id, seq FROM scheduled_read WHERE head
		UNION ALL SELECT NULL, 'failed', (SELECT count(*) FROM failed_read)
		UNION ALL SELECT NULL, 'scheduled', (SELECT count(*) FROM scheduled_read)`
}

// snapBlocked counts the blocked aggregates and lists the BlockedLimit that do
// the most harm. The blockers come from three reads, each bounded: the heads
// probed by the scan and past it (aggregates with unpublished, not failed
// rows), the oldest caps.blockedProbe failures and the soonest
// caps.blockedProbe retries, each asked whether it heads its aggregate. The
// count is exact when every failed row was asked and either every scheduled
// row was too or the scan read every not failed row and probed every aggregate
// of them (then every blocker was seen); else it is the blocked aggregates
// found, a lower bound.
func (i *Inspector) snapBlocked(ctx context.Context, tx pgx.Tx, s *Snapshot, u *unpublished) error {
	cp := i.snapCaps()
	rows, err := tx.Query(ctx, i.blockersSQL(), cp.blockedProbe+1, u.heads)
	if err != nil {
		return err
	}
	found := map[aggKey]int64{} // blocker seq by aggregate
	var failedRead, scheduledRead int64
	for rows.Next() {
		var typ, id *string
		var seq int64
		if err := rows.Scan(&typ, &id, &seq); err != nil {
			return err
		}
		if typ == nil {
			if *id == "failed" {
				failedRead = seq
			} else {
				scheduledRead = seq
			}
			continue
		}
		found[aggKey{*typ, *id}] = seq
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	harm := map[aggKey]int64{} // ready rows scanned behind the blocker
	for _, p := range u.probes {
		if p.blocks {
			found[p.key] = p.headSeq
			harm[p.key] = p.ready
		}
	}
	s.Blocked.Count = int64(len(found))
	// Every failed head was seen when every failed row was asked; every
	// scheduled one when every scheduled row was, or every aggregate with a not
	// failed row was probed.
	allFailed, allScheduled := failedRead <= int64(cp.blockedProbe), scheduledRead <= int64(cp.blockedProbe)
	if !allFailed || !(allScheduled || u.covered && u.probedAll) {
		s.Blocked.Bound = LowerBound
	}
	s.Blocked.Estimate = s.Blocked.Bound != Exact
	if u.countOnly {
		return nil
	}
	// The candidates: most ready rows found waiting first, then the oldest
	// blockers. Their exact figures are read below and decide the order.
	cands := make([]aggKey, 0, len(found))
	for k := range found {
		cands = append(cands, k)
	}
	slices.SortFunc(cands, func(a, b aggKey) int {
		if c := cmp.Compare(harm[b], harm[a]); c != 0 {
			return c
		}
		return cmp.Compare(found[a], found[b])
	})
	cands = cands[:min(len(cands), BlockedLimit)]
	types, ids := make([]string, len(cands)), make([]string, len(cands))
	for k, a := range cands {
		types[k], ids[k] = a.typ, a.id
	}
	behind := func(cond string) string {
		return `(SELECT count(*) FROM ` + i.outbox + ` w WHERE w.published_at IS NULL
			AND w.aggregate_type = e.aggregate_type AND w.aggregate_id = e.aggregate_id AND w.seq > e.seq` + cond + `)`
	}
	rows, err = tx.Query(ctx, `SELECT `+eventColumns(false, false)+`,
			`+behind(` AND `+wire.ReadySQL)+`, `+behind(` AND w.failed_at IS NOT NULL`)+`, `+behind(``)+`
		FROM (SELECT e.* FROM unnest($1::text[], $2::text[]) k(t, id)
			CROSS JOIN LATERAL (SELECT * FROM `+i.outbox+` e WHERE e.published_at IS NULL
				AND e.aggregate_type = k.t AND e.aggregate_id = k.id ORDER BY e.seq LIMIT 1) e) e`, types, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.Blocked.Aggregates = []BlockedAggregate{}
	for rows.Next() {
		var b BlockedAggregate
		if b.Blocker, err = scanEvent(rowWithInt{rowWithInt{rowWithInt{rows, &b.Behind}, &b.FailedBehind}, &b.Waiting}); err != nil {
			return err
		}
		b.AggregateType, b.AggregateID = b.Blocker.AggregateType, b.Blocker.AggregateID
		s.Blocked.Aggregates = append(s.Blocked.Aggregates, b)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	slices.SortFunc(s.Blocked.Aggregates, func(a, b BlockedAggregate) int {
		if c := cmp.Compare(b.Waiting, a.Waiting); c != 0 {
			return c
		}
		return cmp.Compare(a.Blocker.Seq, b.Blocker.Seq)
	})
	return nil
}

// blockerSQL selects the events that block their aggregate: failed or scheduled, with
// no earlier unpublished event of the same aggregate (outbox_aggregate_idx).
func (i *Inspector) blockerSQL() string { return wire.BlockerSQL(i.outbox, i.outbox) }

// failedGroupsSQL is the newest failed rows (caps.failedGroups + 1 of them),
// grouped by event type, attempts bucket and error, read in
// outbox_failed_idx's order.
func (i *Inspector) failedGroupsSQL() string {
	newest := `(SELECT event_type, attempts, last_error FROM ` + i.outbox + ` WHERE ` + wire.FailedSQL + `
		ORDER BY failed_at DESC, seq DESC LIMIT ` + fmt.Sprint(i.snapCaps().failedGroups+1) + `) f`
	return `SELECT event_type, ` + attemptsBucketSQL() + `, left(coalesce(last_error, ''), 200), count(*)
		FROM ` + newest + ` GROUP BY 1, 2, 3`
}

// failedCountSQL counts the failed rows up to $1, in outbox_failed_idx's order.
func (i *Inspector) failedCountSQL() string {
	return `SELECT count(*) FROM (SELECT 1 FROM ` + i.outbox + ` WHERE ` + wire.FailedSQL + ` ORDER BY failed_at, seq LIMIT $1) f`
}
