package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/internal/demo"
)

// blockedByDead is true for an event that waits behind a dead (failed) earlier
// event of its aggregate: the relay must not publish it until an operator acts.
const blockedByDead = `EXISTS (SELECT 1 FROM outbox_event d
	WHERE d.aggregate_type = e.aggregate_type AND d.aggregate_id = e.aggregate_id
	  AND d.seq < e.seq AND d.published_at IS NULL AND d.failed_at IS NOT NULL)`

// watch samples the backlog every half second for the maximum and logs progress
// every five.
func (s *soak) watch(ctx context.Context, counters *demo.Counters) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastLog := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var backlog, blocked, published int64
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.pool.QueryRow(qctx, `SELECT count(*) FILTER (WHERE e.published_at IS NULL AND e.failed_at IS NULL),
			count(*) FILTER (WHERE e.published_at IS NULL AND e.failed_at IS NULL AND `+blockedByDead+`),
			count(*) FILTER (WHERE e.published_at IS NOT NULL)
			FROM outbox_event e`).Scan(&backlog, &blocked, &published)
		cancel()
		if err != nil {
			continue // PostgreSQL restarting
		}
		s.mu.Lock()
		s.report.MaxBacklog = max(s.report.MaxBacklog, backlog)
		s.report.MaxBlocked = max(s.report.MaxBlocked, blocked)
		s.mu.Unlock()
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			st := counters.Snapshot()
			s.logf("committed %d, published %d (in outbox_event), backlog %d (%d behind dead events), write errors %d",
				st.Committed, published, backlog, blocked, st.WriteErrors)
		}
	}
}

// pendingUpTo counts events up to seq that are neither published nor dead nor
// waiting behind a dead event.
func (s *soak) pendingUpTo(ctx context.Context, seq int64) (int64, error) {
	var n int64
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := s.pool.QueryRow(qctx, `SELECT count(*) FROM outbox_event e
		WHERE e.seq <= $1 AND e.published_at IS NULL AND e.failed_at IS NULL AND NOT `+blockedByDead, seq).Scan(&n)
	return n, err
}

func (s *soak) maxSeq(ctx context.Context) int64 {
	for {
		var seq int64
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.pool.QueryRow(qctx, `SELECT coalesce(max(seq), 0) FROM outbox_event`).Scan(&seq)
		cancel()
		if err == nil || ctx.Err() != nil {
			return seq
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// measureRecovery records, in the background, how long after end every event
// committed before end is published (dead ones and those behind them excepted).
func (s *soak) measureRecovery(ctx context.Context, f *faultResult, end time.Time) {
	seq := s.maxSeq(ctx)
	s.wg.Go(func() {
		deadline := time.Now().Add(s.cfg.duration + s.cfg.drainLimit)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if n, err := s.pendingUpTo(ctx, seq); err == nil && n == 0 {
				s.mu.Lock()
				f.Recovery = time.Since(end).Seconds()
				s.mu.Unlock()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// measureDead records how long after at the event is dead (failed), or queued
// behind a dead event of its aggregate, where it waits for the operator.
func (s *soak) measureDead(ctx context.Context, f *faultResult, id uuid.UUID, at time.Time) {
	s.wg.Go(func() {
		deadline := time.Now().Add(s.cfg.duration + s.cfg.drainLimit)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			var dead bool
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := s.pool.QueryRow(qctx, `SELECT EXISTS (SELECT 1 FROM outbox_event e WHERE e.event_id = $1
					AND e.published_at IS NULL AND (e.failed_at IS NOT NULL OR `+blockedByDead+`))
				OR EXISTS (SELECT 1 FROM outbox_event_archive WHERE event_id = $1 AND failed_at IS NOT NULL)`, id).Scan(&dead)
			cancel()
			if err == nil && dead {
				s.mu.Lock()
				f.Recovery = time.Since(at).Seconds()
				s.mu.Unlock()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// waitDrained waits until nothing is left to publish. A poison event that dies
// while it waits (one queued behind another) blocks its order again: the operator
// skips it.
func (s *soak) waitDrained(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var n, poison int64
	for time.Now().Before(deadline) {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.pool.QueryRow(qctx, `SELECT count(*) FILTER (WHERE failed_at IS NULL),
			count(*) FILTER (WHERE failed_at IS NOT NULL AND event_type = $1)
			FROM outbox_event WHERE published_at IS NULL`, demo.OrderPoisoned).Scan(&n, &poison)
		cancel()
		if err == nil && n == 0 {
			return nil
		}
		if err == nil && poison > 0 {
			s.cli("skip (drain)", "skip", "--event-type", demo.OrderPoisoned, "--reason", "soak: poison event", "--yes")
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
	var states []string
	rows, err := s.pool.Query(ctx, `SELECT event_type, aggregate_id, attempts, coalesce(last_error, ''),
		lease_until > now(), available_at > now()
		FROM outbox_event WHERE published_at IS NULL AND failed_at IS NULL ORDER BY seq LIMIT 5`)
	if err == nil {
		for rows.Next() {
			var typ, agg, lastErr string
			var attempts int
			var leased, scheduled *bool
			if rows.Scan(&typ, &agg, &attempts, &lastErr, &leased, &scheduled) == nil {
				states = append(states, fmt.Sprintf("%s of %s: attempts %d, leased %v, scheduled %v, last error %q",
					typ, agg, attempts, deref(leased), deref(scheduled), lastErr))
			}
		}
		rows.Close()
	}
	return fmt.Errorf("not drained after %v: %d events unpublished, first: %v", limit, n, states)
}

func deref(b *bool) bool { return b != nil && *b }
