package inspect

import (
	"context"
	"time"
)

// Backlog is the part of a Snapshot that counts: the unpublished events by
// state, the ages of the oldest ones and the blocked aggregates, read by the
// same steps as the Snapshot's, so the same table gives the same figures and
// the same bounds (Counts.Bounds, Blocked.Bound; the package doc's "Cost on a
// big table"). It reads only outbox_event, which `outboxtop grants --role
// relay` may read: the relay's /metrics export it.
type Backlog struct {
	TakenAt time.Time `json:"taken_at"`
	// Took is how long its queries ran.
	Took Age `json:"took_seconds"`
	// Counts are the Snapshot's, but for Published, Archived and Skipped, which
	// a Backlog does not read (zero).
	Counts Counts `json:"counts"`
	// ExpiredLeases, the oldest ages, their bounds and NextScheduledAt: as in
	// Snapshot.
	ExpiredLeases           int64      `json:"expired_leases"`
	OldestPendingAge        Age        `json:"oldest_pending_age_seconds"`
	OldestReadyAge          Age        `json:"oldest_ready_age_seconds"`
	OldestPendingBound      Bound      `json:"oldest_pending_age_bound,omitempty"`
	OldestReadyBound        Bound      `json:"oldest_ready_age_bound,omitempty"`
	OldestPublishableAge    Age        `json:"oldest_publishable_age_seconds"`
	OldestPublishableApprox bool       `json:"oldest_publishable_approx,omitempty"`
	NextScheduledAt         *time.Time `json:"next_scheduled_at"`
	// Blocked is the Snapshot's count and bound; Aggregates is nil (not listed).
	Blocked Blocked `json:"blocked"`
	// Order is the Snapshot's mode, count and bound; Aggregates is nil.
	Order Order `json:"commit_order"`
}

// Exact: every count of b (Counts' by state, Waiting, Publishable, Failed,
// ExpiredLeases and Blocked.Count) is exact.
func (b Backlog) Exact() bool {
	return b.Counts.Bounds == Bounds{} && b.Blocked.Bound == Exact
}

// Backlog reads the counts of a Snapshot in one repeatable-read, read-only
// transaction, with the Snapshot's steps for the unpublished, failed and
// blocked counts and nothing else: no published history, archive, inbox,
// audit, table statistics or heartbeats.
func (i *Inspector) Backlog(ctx context.Context) (Backlog, error) {
	s, err := i.snapshot(ctx, "backlog", false)
	if err != nil {
		return Backlog{}, err
	}
	return Backlog{
		TakenAt: s.TakenAt, Took: s.Took, Counts: s.Counts, ExpiredLeases: s.ExpiredLeases,
		OldestPendingAge: s.OldestPendingAge, OldestReadyAge: s.OldestReadyAge,
		OldestPendingBound: s.OldestPendingBound, OldestReadyBound: s.OldestReadyBound,
		OldestPublishableAge: s.OldestPublishableAge, OldestPublishableApprox: s.OldestPublishableApprox,
		NextScheduledAt: s.NextScheduledAt,
		Blocked:         Blocked{Count: s.Blocked.Count, Bound: s.Blocked.Bound, Estimate: s.Blocked.Estimate},
		Order:           s.Order,
	}, nil
}
