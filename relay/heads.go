package relay

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// headWatch keeps the aggregates whose ready head event this relay's ordered
// claim could not lock. A concurrent claim holds a head for milliseconds and
// leases it, so it is not ready at the next claim; a head that stays ready and
// locked is held by some other session (an open transaction, a frozen process).
//
// Such an aggregate is passed over by the next claims for heldSkip (the claim
// reads at most 4 × batch rows: a held hot aggregate's rows would otherwise
// fill that window at every claim and stop the relay), then tried again; the
// relay claims again at once after a claim that found a new held head, so a
// held head costs one extra claim, not a stall. A head still held after the
// claim's lock timeout is reported: log, metrics, status.
type headWatch struct {
	mu       sync.Mutex
	held     map[uuid.UUID]heldHead
	stuck    int
	lastWarn time.Time
}

type heldHead struct {
	agg   aggregateKey
	since time.Time // first found held
	until time.Time // passed over until then
}

// heldSkip is how long a held head's aggregate is passed over before a claim
// tries it again.
const heldSkip = time.Second

// skipped returns the aggregates a claim starting at now passes over, as the
// claim's $4 (types) and $5 (ids).
func (w *headWatch) skipped(now time.Time) (types, ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	types, ids = []string{}, []string{}
	for _, h := range w.held {
		if now.Before(h.until) {
			types, ids = append(types, h.agg.typ), append(ids, h.agg.id)
		}
	}
	return types, ids
}

// observe takes the heads a claim that started at began could not lock, with
// their aggregates, and reports whether one of them is newly held (its
// aggregate was in the claim's way: claim again now). Aggregates the claim
// passed over stay held; any other held head the claim did not meet is
// forgotten (published, leased, or let go).
func (w *headWatch) observe(unlocked []uuid.UUID, aggs []aggregateKey, began, now time.Time, r *Relay) (fresh bool) {
	r.m.HeadsSkipped.Add(float64(len(unlocked)))
	w.mu.Lock()
	defer w.mu.Unlock()
	next := make(map[uuid.UUID]heldHead, len(w.held)+len(unlocked))
	for id, h := range w.held {
		if began.Before(h.until) {
			next[id] = h
		}
	}
	for i, id := range unlocked {
		h, ok := w.held[id]
		if !ok {
			h = heldHead{agg: aggs[i], since: now}
			fresh = true
		}
		h.until = now.Add(heldSkip)
		next[id] = h
	}
	stuck, oldest := 0, uuid.UUID{}
	var oldestAt time.Time
	for id, h := range next {
		if now.Sub(h.since) >= r.cfg.LockTimeout {
			stuck++
			if oldestAt.IsZero() || h.since.Before(oldestAt) {
				oldest, oldestAt = id, h.since
			}
		}
	}
	w.held, w.stuck = next, stuck
	r.m.HeadsLocked.Set(float64(stuck))
	if stuck > 0 && now.Sub(w.lastWarn) >= 30*time.Second {
		w.lastWarn = now
		r.log.Warn("aggregates wait: another session holds their head event locked",
			"aggregates", stuck, "event_id", oldest, "for", now.Sub(oldestAt).Round(time.Second))
	}
	return fresh
}

func (w *headWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stuck
}
