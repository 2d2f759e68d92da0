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
//   - Only the first claim reads from the start (the relay has no position
//     yet). What none of the above sees is a row another relay claimed from
//     behind this one's position and left leased when it died or froze: no
//     write makes it claimable, its lease just runs out. The rescue
//     (sql/rescue.sql, rescueLoop) ends such leases every rescueEvery, beside
//     the claims: its read of the index up to the position grows with a held
//     horizon, and run in the claim loop it once stalled every claim for the
//     length of the read (19 s after 30 minutes at 1,500 events/s).

// claimCursor is where the next claim's window starts and what the previous
// claim's snapshot did not see. Claims are serial in Run; the mutex is for
// Status and tests.
type claimCursor struct {
	mu    sync.Mutex
	valid bool // false: no claim yet, the next one reads from the start
	at    time.Time
	seq   int64
	xmax  *uint64  // the previous claim's snapshot; nil: none
	xip   []uint64 //
}

// position is the next claim's window start and the previous claim's
// snapshot; before the first claim, the start of the index and no snapshot.
func (c *claimCursor) position() (at pgtype.Timestamptz, seq int64, xmax *uint64, xip []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, math.MinInt64, nil, []uint64{}
	}
	return pgtype.Timestamptz{Time: c.at, Valid: true}, c.seq, c.xmax, c.xip
}

// rescuePosition is the position the rescue reads up to; ok is false before
// the first claim, which reads the whole index itself.
func (c *claimCursor) rescuePosition() (at time.Time, seq int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at, c.seq, c.valid
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
func (c *claimCursor) advance(p claimPosition, xmax uint64, xip []uint64) {
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
}

// headHints are the heads the ordered claim last found, by aggregate: the head
// probe of the next claim seeks from there. Two generations of at most
// hintGeneration aggregates each: the older is dropped when the newer fills,
// so an aggregate seen in the last few claims keeps its hint and the
// statement's parameters stay bounded. An aggregate whose hint was dropped is
// probed from its start, over every dead entry a held horizon keeps of it: at
// 4,096 a generation, 5,000 busy aggregates (the horizon profile's) lose about
// a fifth of their hints each generation. 8,192 keeps up to that many busy
// aggregates hinted, at a @hints parameter of at most about 330 kB.
type headHints struct {
	cur, old map[aggregateKey]int64
}

const hintGeneration = 8192

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

// rescueEvery is how often the rescue runs: twice the lease, so a lease that
// ran out unseen behind the position is claimed again within about three
// leases (the rescue waits longer when its own read took long: rescueLoop).
func (c Config) rescueEvery() time.Duration { return 2 * c.Lease }
