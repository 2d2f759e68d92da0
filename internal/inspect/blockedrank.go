package inspect

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
)

// The blocked list is the BlockedLimit blocked aggregates with the most
// events waiting, then the oldest blocker (lowest seq): ranked, not sampled.
// An aggregate's waiting events are its ready rows (all come after a blocking
// head), so an aggregate without a ready row has none waiting, and one with
// ready rows has at most as many waiting as it has ready rows. The ranking
// reads every aggregate with a ready row and such a bound of its waiting
// events (a candidate), then asks the candidates, most first, for their head
// and, while they may still rank, their exact waiting events, until no
// candidate left can reach the list (rankCandidates). What it knows at the end
// says how many of the list's first aggregates are certainly the true first
// (certify): Blocked.Ranked.
//
// The candidates come from one of two places:
//
//   - When the snapshot's pass read every unpublished, not failed row
//     (unpublished.covered), its aggregates are every aggregate with a ready
//     row, each with its ready rows counted and its head probed, the most ready
//     rows first: exact, nothing more to read. When there were more than
//     caps.probe of them, those not probed have at most as many ready rows as
//     the last one probed.
//   - Past the pass, blocked_candidates.sql reads two index ranges that hold
//     every ready row once: the rows hinted blocked (outbox_blocked_idx, read
//     index-only, counted by aggregate in any state) and the ready rows not
//     hinted (outbox_claim_idx up to now()). Their sum bounds the aggregate's
//     waiting events. Each read stops at its cap (caps.hinted, caps.unhinted):
//     past either, an aggregate not read may have any number waiting, and
//     nothing is ranked for certain (Ranked 0: the list is the most found).
//     A live relay hints the rows it finds waiting as they reach its claim
//     window, so the rows not hinted are those it has not reached yet.

// rankCand is an aggregate with a ready row and ub, a bound of its waiting events.
type rankCand struct {
	key aggKey
	ub  int64
}

// rankEntry is a blocked aggregate with its blocker's seq and its exact waiting events.
type rankEntry struct {
	key     aggKey
	seq     int64
	waiting int64
}

// before: a ranks before b in the list's order.
func (a rankEntry) before(b rankEntry) bool {
	return a.waiting > b.waiting || a.waiting == b.waiting && a.seq < b.seq
}

// ranker keeps the k first blocked aggregates counted so far.
type ranker struct {
	k   int
	top []rankEntry // in the list's order, at most k
}

func (r *ranker) add(e rankEntry) {
	at, _ := slices.BinarySearchFunc(r.top, e, func(x, y rankEntry) int {
		if x.before(y) {
			return -1
		}
		return 1
	})
	r.top = slices.Insert(r.top, at, e)
	if len(r.top) > r.k {
		r.top = r.top[:r.k]
	}
}

// mayRank: whether an aggregate with at most ub events waiting and blocker seq
// could still enter the first k (seq math.MinInt64: unknown).
func (r *ranker) mayRank(ub, seq int64) bool {
	if len(r.top) < r.k {
		return true
	}
	return rankEntry{waiting: ub, seq: seq}.before(r.top[r.k-1])
}

// ranking is what the ranking learned: the first blocked aggregates counted,
// the blockers it met, and what bounds the waiting events of every aggregate
// it did not count.
type ranking struct {
	top   []rankEntry
	found map[aggKey]int64 // blocker seq by aggregate, every blocker met
	// known: every aggregate with a ready row was a candidate. rest, then:
	// every candidate not counted and not ranked after top's last has at most
	// rest events waiting (0: none is left).
	known bool
	rest  int64
}

// Batches of the ranking's reads: the heads of a batch of candidates are read
// at once, the first one rankBatch, then twice as many each time up to
// rankBatchMax; the waiting events rankCountBatch at a time.
const (
	rankBatch      = 2 * BlockedLimit
	rankBatchMax   = 4_096
	rankCountBatch = 32
)

// rankCovered ranks the aggregates the pass probed when it read every
// unpublished, not failed row: their ready rows are exact. k: the list's length.
func rankCovered(u *unpublished, k int) ranking {
	r := ranker{k: k}
	rk := ranking{found: map[aggKey]int64{}, known: true}
	for _, p := range u.probes {
		if !p.blocks {
			continue
		}
		rk.found[p.key] = p.headSeq
		r.add(rankEntry{key: p.key, seq: p.headSeq, waiting: p.ready})
	}
	if !u.probedAll && len(u.probes) > 0 {
		// Most ready rows first: the aggregates not probed have at most as
		// many as the last one probed.
		rk.rest = u.probes[len(u.probes)-1].ready
	}
	rk.top = r.top
	return rk
}

// rankPastScan reads the candidates (blocked_candidates.sql) and ranks them
// (rankCandidates).
func (i *Inspector) rankPastScan(ctx context.Context, tx pgx.Tx, heads []byte) (ranking, error) {
	cp := i.snapCaps()
	// Sorting off: the two reads walk their indexes in order (planned with
	// sorts, the claim range was read along outbox_claim_seq_idx and sorted).
	// The candidates are still sorted: no index gives their order.
	if _, err := tx.Exec(ctx, "SET LOCAL enable_sort = off"); err != nil {
		return ranking{}, err
	}
	rows, err := tx.Query(ctx, i.q.SQL("blocked_candidates"), cp.hinted+1, cp.unhinted+1, cp.rankProbe+1)
	if err != nil {
		return ranking{}, err
	}
	var cands []rankCand
	var hinted, unhinted int64
	for rows.Next() {
		var kind int
		var typ, id *string
		var n int64
		var m *int64
		if err := rows.Scan(&kind, &typ, &id, &n, &m); err != nil {
			rows.Close()
			return ranking{}, err
		}
		if kind == 0 {
			hinted, unhinted = n, *m
			continue
		}
		cands = append(cands, rankCand{key: aggKey{*typ, *id}, ub: n})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ranking{}, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL enable_sort TO DEFAULT"); err != nil {
		return ranking{}, err
	}
	// Past either cap an aggregate not read may have any number waiting:
	// nothing can be ranked for certain, and the most found are what the
	// first caps.probe candidates give.
	known := hinted <= int64(cp.hinted) && unhinted <= int64(cp.unhinted)
	budget := cp.rankProbe
	if !known {
		budget = min(budget, cp.probe)
	}
	// The first candidate left out bounds every one left out.
	var beyond int64
	if len(cands) > budget {
		beyond = cands[budget].ub
		cands = cands[:budget]
	}
	rk, err := i.rankCandidates(ctx, tx, cands, beyond, heads, cp.list)
	rk.known = known
	return rk, err
}

// rankCandidates ranks cands (most first; beyond bounds the waiting events of
// every aggregate with a ready row not among them): their heads a batch at a
// time, then the exact waiting events of those that block, in the order of
// their bound and blocker, while each may still rank among the first
// BlockedLimit (k). It stops when the next candidate's bound is below the last of
// those (none after it can rank; an equal one may, by an older blocker) or
// when every candidate was asked.
func (i *Inspector) rankCandidates(ctx context.Context, tx pgx.Tx, cands []rankCand, beyond int64, heads []byte, k int) (ranking, error) {
	r := ranker{k: k}
	rk := ranking{found: map[aggKey]int64{}}
	next, batch := 0, rankBatch
	for next < len(cands) && r.mayRank(cands[next].ub, math.MinInt64) {
		part := cands[next:min(len(cands), next+batch)]
		next += len(part)
		batch = min(2*batch, rankBatchMax)
		types, ids := make([]string, len(part)), make([]string, len(part))
		ub := make(map[aggKey]int64, len(part))
		for k, c := range part {
			types[k], ids[k] = c.key.typ, c.key.id
			ub[c.key] = c.ub
		}
		rows, err := tx.Query(ctx, i.q.SQL("blocked_heads"), types, ids, heads)
		if err != nil {
			return rk, err
		}
		var blocking []rankEntry // waiting: the bound until counted
		for rows.Next() {
			var k aggKey
			var seq int64
			var blocks bool
			if err := rows.Scan(&k.typ, &k.id, &seq, &blocks); err != nil {
				rows.Close()
				return rk, err
			}
			if blocks {
				rk.found[k] = seq
				blocking = append(blocking, rankEntry{key: k, seq: seq, waiting: ub[k]})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return rk, err
		}
		// In the order of their bound, then blocker: once one cannot rank,
		// none after it can.
		slices.SortFunc(blocking, func(a, b rankEntry) int {
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
		for at := 0; at < len(blocking); {
			end := at
			for end < len(blocking) && end-at < rankCountBatch && r.mayRank(blocking[end].waiting, blocking[end].seq) {
				end++
			}
			if end == at {
				break
			}
			counted, err := i.countWaiting(ctx, tx, blocking[at:end])
			if err != nil {
				return rk, err
			}
			for _, e := range counted {
				r.add(e)
			}
			at = end
		}
	}
	rk.top, rk.rest = r.top, beyond
	if next < len(cands) {
		rk.rest = max(rk.rest, cands[next].ub)
	}
	return rk, nil
}

// countWaiting counts the ready events behind each blocker of es.
func (i *Inspector) countWaiting(ctx context.Context, tx pgx.Tx, es []rankEntry) ([]rankEntry, error) {
	types, ids, seqs := make([]string, len(es)), make([]string, len(es)), make([]int64, len(es))
	bySeq := make(map[aggKey]int64, len(es))
	for k, e := range es {
		types[k], ids[k], seqs[k] = e.key.typ, e.key.id, e.seq
		bySeq[e.key] = e.seq
	}
	rows, err := tx.Query(ctx, i.q.SQL("blocked_waiting"), types, ids, seqs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (rankEntry, error) {
		var e rankEntry
		err := row.Scan(&e.key.typ, &e.key.id, &e.waiting)
		e.seq = bySeq[e.key]
		return e, err
	})
}

// chosen is the aggregates to list: the first counted with events waiting,
// then, while there is room, the other blockers found (found: every one met,
// those the ranking counted among them), oldest first. Those counted with none
// waiting are among them: they rank by their blocker, as the others found do.
// The figures of all are read with the list's.
func (rk ranking) chosen(found map[aggKey]int64, k int) []aggKey {
	out := make([]aggKey, 0, k)
	in := map[aggKey]bool{}
	for _, e := range rk.top {
		if e.waiting > 0 {
			out = append(out, e.key)
			in[e.key] = true
		}
	}
	rest := make([]rankEntry, 0, len(found))
	for k, seq := range found {
		if !in[k] {
			rest = append(rest, rankEntry{key: k, seq: seq})
		}
	}
	slices.SortFunc(rest, func(a, b rankEntry) int { return cmp.Compare(a.seq, b.seq) })
	for _, e := range rest[:min(len(rest), k-len(out))] {
		out = append(out, e.key)
	}
	return out
}

// certify is how many of list's first aggregates (in the list's order, with
// their exact figures) are certainly the first of every blocked aggregate:
// each one with events waiting ranks before every aggregate not counted when
// it has more than rk.rest waiting (those counted and left out rank after the
// list's last; those without a ready row have none waiting); one with none
// waiting, when every aggregate with a ready row was asked (rest 0) and every
// blocked aggregate was found (allBlockers: then the list holds the oldest
// blockers of those with none waiting).
func (rk ranking) certify(list []BlockedAggregate, allBlockers bool) int {
	if !rk.known {
		return 0
	}
	n := 0
	for _, a := range list {
		if a.Waiting > 0 && a.Waiting <= rk.rest || a.Waiting == 0 && (rk.rest > 0 || !allBlockers) {
			break
		}
		n++
	}
	return n
}
