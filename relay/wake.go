package relay

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// How the relay learns of new events without asking anything of the producers
// (the package doc, Wake-ups): it polls how many events were inserted, the last
// value of the identity of seq (outboxtop_inserted: a sequence read, never the
// table), every insertProbeInterval. A change wakes the claim loop at once. The
// value moves when an insert draws its seq, which is before the insert's
// transaction commits; a claim that ran in between found nothing, so a change is
// followed by further wake-ups at insertFollowUps after it (unless the value moves
// again meanwhile), which catch a commit that came up to a second later. A
// transaction open longer than that is found by the poll (Config.PollInterval).
const insertProbeInterval = 5 * time.Millisecond

var insertFollowUps = []time.Duration{
	5 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond, 300 * time.Millisecond, time.Second,
}

// watchInserts runs the probe until ctx ends. A probe the database refuses (a
// role without EXECUTE on outboxtop_inserted, from grants older than the
// function) is logged once and given up: the relay then wakes by its poll
// alone. Other errors (the database away) are retried with backoff.
func (r *Relay) watchInserts(ctx context.Context) {
	var last int64
	var changedAt time.Time
	next := len(insertFollowUps) // the follow-up due next; none after a quiet second
	failures := 0
	t := time.NewTicker(insertProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var v int64
		err := r.pool.QueryRow(ctx, r.sql.inserted).Scan(&v)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "42883") {
				r.log.Warn("cannot read how many events were inserted: the relay wakes every --poll-interval only (apply the relay's printed grants again: outboxtop grants --role relay)",
					"err", err, "poll_interval", r.cfg.PollInterval)
				return
			}
			failures++
			sleep(ctx, backoff(failures, 100*time.Millisecond, 5*time.Second))
			continue
		}
		failures = 0
		now := time.Now()
		switch {
		case v != last:
			last, changedAt, next = v, now, 0
			signal(r.wake)
		case next < len(insertFollowUps) && now.Sub(changedAt) >= insertFollowUps[next]:
			next++
			signal(r.wake)
		}
	}
}
