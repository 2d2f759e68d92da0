package relay

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Heartbeat states, as written to outbox_relay.state (migration 010).
const (
	BeatRunning    = "running"
	BeatPaused     = "paused"
	BeatDraining   = "draining"
	BeatBrokerDown = "broker-down"
	BeatStopping   = "stopping"
	BeatStopped    = "stopped"
)

// heartbeatLogEvery bounds how often a failing heartbeat is logged; every
// failure is counted (Metrics.HeartbeatFailures).
const heartbeatLogEvery = time.Minute

// heartbeatTimeout bounds one beat: a beat never waits long for a connection or
// a lock, and a missed one is made up at the next tick. It does not shrink with
// the interval: a 100 ms interval on a busy pool must not turn a 150 ms wait for
// a connection into a failed beat (ticks missed meanwhile are dropped, not
// queued).
const heartbeatTimeout = 2 * time.Second

// heartbeat writes this relay's row every HeartbeatInterval until bg ends. It
// runs beside the publish path and shares only the pool with it: a beat takes
// one connection for one short statement, bounded by heartbeatTimeout, and a
// failed beat (no grant, database away) is logged at most once a minute and
// never stops the relay. run is Run's context: once it is cancelled the relay
// says "stopping" while its batches finish.
func (r *Relay) heartbeat(run, bg context.Context) {
	t := time.NewTicker(r.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		r.beat(bg, r.beatState(run))
		select {
		case <-bg.Done():
			return
		case <-t.C:
		}
	}
}

// beatState is what the relay says it is doing.
func (r *Relay) beatState(run context.Context) string {
	r.mu.Lock()
	paused := r.paused
	r.mu.Unlock()
	switch {
	case run.Err() != nil:
		return BeatStopping
	case paused:
		return BeatPaused
	case !r.brokerOK.Load():
		return BeatBrokerDown
	case r.cfg.Drain:
		return BeatDraining
	}
	return BeatRunning
}

// beat writes one heartbeat. The first that succeeds starts the row's
// started_at.
func (r *Relay) beat(ctx context.Context, state string) {
	bctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	r.mu.Lock()
	inFlight := 0
	for _, b := range r.leases {
		inFlight += b.size
	}
	r.mu.Unlock()
	var ours bool
	err := r.pool.QueryRow(bctx, r.sql.heartbeat, r.cfg.Holder, state, !r.beatStarted.Load(),
		r.cfg.HeartbeatInterval.Milliseconds(), inFlight, r.cfg.Version, string(r.cfg.Ordering), r.cfg.BatchSize).Scan(&ours)
	switch {
	case err != nil && ctx.Err() != nil:
		// Run is returning and cancelled this beat: not a failure (the final
		// beat says stopped).
	case err != nil:
		r.m.HeartbeatFailures.Inc()
		what := "heartbeat failed (relaying goes on; the console will show this relay as gone)"
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "42883" || pgErr.Code == "42P01") {
			what = "heartbeat refused: run `outboxtop migrate` and apply `outboxtop grants --role relay` (relaying goes on)"
		}
		r.warnHeartbeat(what, err)
	case !ours:
		r.m.HeartbeatFailures.Inc()
		r.warnHeartbeat("heartbeat not written: another database role's relay beats under this holder name; set a distinct holder", nil)
	default:
		r.beatStarted.Store(true)
		r.m.HeartbeatSeconds.SetToCurrentTime()
	}
}

func (r *Relay) warnHeartbeat(what string, err error) {
	now := time.Now().UnixNano()
	last := r.beatWarned.Load()
	if last != 0 && time.Duration(now-last) < heartbeatLogEvery {
		return
	}
	if !r.beatWarned.CompareAndSwap(last, now) {
		return
	}
	if err != nil {
		r.log.Warn(what, "holder", r.cfg.Holder, "err", err)
		return
	}
	r.log.Warn(what, "holder", r.cfg.Holder)
}

// finalBeat marks the row stopped when Run returns, with a context of its own:
// Run's is cancelled by then.
func (r *Relay) finalBeat(ctx context.Context) {
	if r.cfg.HeartbeatInterval < 0 || r.skipFinalBeat.Load() {
		return
	}
	r.beat(context.WithoutCancel(ctx), BeatStopped)
}
