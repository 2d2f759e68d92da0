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

// snapUnpublished counts the unpublished rows by state. The scan (sql/pass.sql)
// reads the first rows in the relay's order; when it reaches them all, every
// count is exact. Past it, three capped counts along indexes that together
// hold each unpublished, not failed row once (outbox_claim_idx, the blocked
// hint's outbox_blocked_idx, and outbox_ready_idx past now()) make the counts
// exact again when none reaches its cap, and lower bounds otherwise. Failed
// rows are counted by snapFailed.
func (i *Inspector) snapUnpublished(ctx context.Context, tx pgx.Tx, s *Snapshot, u *unpublished) error {
	cp := i.snapCaps()
	floor := i.floor.get()
	rows, err := tx.Query(ctx, i.q.SQL("pass"), append([]any{cp.scan + 1, cp.probe + 1}, floor.passArgs()...)...)
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
		// own index finds one (oldest_publishable.sql, a claim's first row).
		s.OldestPublishableApprox = true
		var age float64
		if err := tx.QueryRow(ctx, i.q.SQL("oldest_publishable")).Scan(&age); err != nil {
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
	rows, err := tx.Query(ctx, i.q.SQL("past_scan"), cp.count+1, cp.probe+1)
	if err != nil {
		return 0, 0, false, err
	}
	type part struct{ rows, ready, scheduled, leased, expired int64 }
	var parts [3]part
	// The oldest pending and ready ages among the ranges' rows (oldestAges).
	var pendingAge, readyAge Age
	ages := func(pending, ready *float64) {
		if pending != nil {
			pendingAge = max(pendingAge, seconds(*pending))
		}
		if ready != nil {
			readyAge = max(readyAge, seconds(*ready))
		}
	}
	probes := 0
	for rows.Next() {
		var kind int
		var n int64
		var ready, scheduled, leased, expired, headSeq *int64
		var typ, id *string
		var since, pendingSince, readySince *float64
		var blocks *bool
		if err := rows.Scan(&kind, &n, &ready, &scheduled, &leased, &expired, &typ, &id, &since, &headSeq, &blocks,
			&pendingSince, &readySince); err != nil {
			rows.Close()
			return 0, 0, false, err
		}
		if kind < 2 {
			parts[kind] = part{n, *ready, *scheduled, *leased, *expired}
			ages(pendingSince, readySince)
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
	// The third range, available later; the earliest retry comes with it: the
	// scan's may not be the earliest.
	p := &parts[2]
	var next *time.Time
	var pendingSince, readySince *float64
	if err := tx.QueryRow(ctx, i.q.SQL("past_scheduled"), cp.count+1).
		Scan(&p.rows, &p.ready, &p.scheduled, &p.leased, &p.expired, &next, &pendingSince, &readySince); err != nil {
		return 0, 0, false, err
	}
	ages(pendingSince, readySince)
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
	oldestAges(s, pendingAge, readyAge, done(0, 1, 2) == Exact)
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
	if err := tx.QueryRow(ctx, i.q.SQL("failed_count"), cp.failed+1).Scan(&s.Counts.Failed); err != nil {
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

// snapBlocked counts the blocked aggregates and lists the BlockedLimit that do
// the most harm, ranked (blockedrank.go). The count comes from three reads,
// each bounded: the heads probed by the scan and past it (aggregates with
// unpublished, not failed rows), the oldest caps.blockedProbe failures and the
// soonest caps.blockedProbe retries, each asked whether it heads its
// aggregate; the ranking adds the blockers it meets. The count is exact when
// every failed row was asked and either every scheduled row was too or the
// scan read every not failed row and probed every aggregate of them (then
// every blocker was seen); else it is the blocked aggregates found, a lower
// bound.
func (i *Inspector) snapBlocked(ctx context.Context, tx pgx.Tx, s *Snapshot, u *unpublished) error {
	cp := i.snapCaps()
	rows, err := tx.Query(ctx, i.q.SQL("blockers"), cp.blockedProbe+1, u.heads)
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
	for _, p := range u.probes {
		if p.blocks {
			found[p.key] = p.headSeq
		}
	}
	// Every failed head was seen when every failed row was asked; every
	// scheduled one when every scheduled row was, or every aggregate with a not
	// failed row was probed.
	allFailed, allScheduled := failedRead <= int64(cp.blockedProbe), scheduledRead <= int64(cp.blockedProbe)
	allBlockers := allFailed && (allScheduled || u.covered && u.probedAll)
	if !allBlockers {
		s.Blocked.Bound = LowerBound
	}
	s.Blocked.Estimate = s.Blocked.Bound != Exact
	s.Blocked.Count = int64(len(found))
	if u.countOnly {
		return nil
	}
	var rk ranking
	if u.covered {
		rk = rankCovered(u, cp.list)
	} else if rk, err = i.rankPastScan(ctx, tx, u.heads); err != nil {
		return fmt.Errorf("ranking: %w", err)
	}
	for k, seq := range rk.found {
		found[k] = seq
	}
	s.Blocked.Count = int64(len(found))
	cands := rk.chosen(found, cp.list)
	types, ids := make([]string, len(cands)), make([]string, len(cands))
	for k, a := range cands {
		types[k], ids[k] = a.typ, a.id
	}
	rows, err = tx.Query(ctx, i.q.SQL("blocked_list"), types, ids)
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
	s.Blocked.Ranked = rk.certify(s.Blocked.Aggregates, allBlockers)
	return nil
}

// failedGroupsSQL is the newest failed rows (caps.failedGroups + 1 of them),
// grouped by event type, attempts bucket and error.
func (i *Inspector) failedGroupsSQL() string {
	return i.q.SQL("failed_groups", map[string]any{"limit": i.snapCaps().failedGroups + 1})
}
