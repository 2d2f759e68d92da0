package relay

import (
	"encoding/json"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// A held horizon. While any transaction keeps PostgreSQL's xmin horizon (a
// long report, pg_dump, a session idle in transaction, a replication slot),
// the dead versions of every row the relay publishes stay, and so do their
// entries in outbox_claim_idx and outbox_aggregate_idx. A claim that reads
// those indexes from their start re-reads every entry published since the
// horizon was taken: at 1,500 events/s its cost grew by about 1 ms per second
// held. So no claim reads from the start:
//
//   - The window reads outbox_claim_idx from a position (claimCursor) that
//     stays at the first row there that may still be claimed: ready,
//     scheduled, or leased (a lease that runs out is met there).
//   - A row can land behind the position only through a commit the previous
//     claim did not see: a late insert (available_at is its transaction's
//     start) or an update that made it claimable again (the ready_xid
//     trigger). Each claim reads the transactions its previous snapshot saw in
//     progress or had not seen, and finds their rows through
//     outbox_ready_xid_idx, which reads only those transactions' rows.
//   - The head probe seeks from the head the relay last found for the
//     aggregate (headHints): every event before it was published.
//   - A deep claim, from the start of the index, every deepEvery and at start:
//     the safety net for what none of that sees (a row another relay took from
//     behind this one's position and never marked, its lease run out).

// claimCursor is where the next claim's window starts and what the previous
// claim's snapshot did not see. Claims are serial in Run; the mutex is for
// Status and tests.
type claimCursor struct {
	mu     sync.Mutex
	valid  bool // false: the next claim is deep (from the start)
	at     time.Time
	seq    int64
	xmax   *uint64  // the previous claim's snapshot; nil: none
	xip    []uint64 //
	deepAt time.Time
}

// position is the window's start for a claim beginning at now, and whether it
// is a deep claim (from -infinity, with no earlier snapshot).
func (c *claimCursor) position(now time.Time) (at pgtype.Timestamptz, seq int64, xmax *uint64, xip []uint64, deep bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || !now.Before(c.deepAt) {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, math.MinInt64, nil, []uint64{}, true
	}
	return pgtype.Timestamptz{Time: c.at, Valid: true}, c.seq, c.xmax, c.xip, false
}

// claimPosition is what sql/claim_position.sql read.
type claimPosition struct {
	now               time.Time
	firstAt, lateAt   *time.Time
	firstSeq, lateSeq *int64
}

// advance records a committed claim: the next window starts at the lowest of
// the first row still in the index from the old position, the first row an
// unseen transaction made claimable, and the claim's start (the database's
// now(): a row that becomes ready later sorts after it); the claim's snapshot
// becomes the next claim's.
func (c *claimCursor) advance(p claimPosition, xmax uint64, xip []uint64, deep bool, every time.Duration, now time.Time) {
	at, seq := p.now, int64(math.MinInt64)
	lower := func(a *time.Time, s *int64) {
		if a != nil && s != nil && (a.Before(at) || a.Equal(at) && *s < seq) {
			at, seq = *a, *s
		}
	}
	lower(p.firstAt, p.firstSeq)
	lower(p.lateAt, p.lateSeq)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.valid, c.at, c.seq = true, at, seq
	c.xmax, c.xip = &xmax, xip
	if c.xip == nil {
		c.xip = []uint64{}
	}
	if deep || c.deepAt.IsZero() {
		c.deepAt = now.Add(every)
	}
}

// headHints are the heads the ordered claim last found, by aggregate: the head
// probe of the next claim seeks from there. Two generations of at most
// hintGeneration aggregates each: the older is dropped when the newer fills,
// so an aggregate seen in the last few claims keeps its hint and the
// statement's parameters stay bounded.
type headHints struct {
	cur, old map[aggregateKey]int64
}

const hintGeneration = 4096

func (h *headHints) note(types, ids []string, seqs []int64) {
	if h.cur == nil {
		h.cur = map[aggregateKey]int64{}
	}
	for i := range types {
		if len(h.cur) >= hintGeneration {
			h.old, h.cur = h.cur, make(map[aggregateKey]int64, hintGeneration)
		}
		k := aggregateKey{types[i], ids[i]}
		h.cur[k] = seqs[i]
		delete(h.old, k)
	}
}

// arg is the hints as the claim's @hints: {aggregate_type: {aggregate_id: seq}},
// encoded as JSON.
func (h *headHints) arg() string {
	m := map[string]map[string]int64{}
	for _, g := range []map[aggregateKey]int64{h.old, h.cur} {
		for k, s := range g {
			if m[k.typ] == nil {
				m[k.typ] = map[string]int64{}
			}
			m[k.typ][k.id] = s
		}
	}
	b, _ := json.Marshal(m) // strings and integers: cannot fail
	return string(b)
}

// deepEvery is how often a claim reads from the start of the index: twice the
// lease, so a lease that ran out unseen behind the position is claimed again
// within about three leases.
func (c Config) deepEvery() time.Duration { return 2 * c.Lease }
