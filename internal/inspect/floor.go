package inspect

import (
	"encoding/json"
	"math"
	"sync"
)

// A long-lived Inspector (the console, /metrics) does not read each Snapshot's
// pass from the start of outbox_claim_seq_idx, nor probe each aggregate's head
// from the aggregate's first entry in outbox_aggregate_idx. While a long
// transaction holds the xmin horizon, the entries of every row published since
// cannot be removed, and a read from the start of either index, or a range
// read to the end of one, steps over all of them again (see the package doc,
// "A held horizon").
//
// What the previous snapshot saw bounds what this one can find:
//
//   - A row becomes unpublished by its insert and not failed by a retry, and
//     is never unpublished again. Either is done by a transaction the previous
//     snapshot did not see committed, and records that transaction in ready_xid
//     (the column's default; the trigger in
//     migrations/functions/outbox_event_ready_xid.sql), which no later write
//     sets to an earlier one. Those transactions are the ones from the
//     snapshot's xmax on and the ones in its xip: the pass reads their
//     unpublished rows, the late rows, through outbox_ready_xid_idx (not
//     failed, not blocked) and outbox_stopped_xid_idx (failed or blocked).
//   - Every other unpublished, not failed row was one the previous snapshot
//     saw. When its pass read all of them (below the scan cap), their seqs are
//     kept and each is looked up again by seq: the pass reads no range at all.
//     When it did not, the pass reads the range from the first row it found
//     (seq only grows), beside the late rows below it.
//   - Every unpublished row of an aggregate the previous snapshot saw had seq
//     at or after the head it probed, or the first late row found since: the
//     head probe seeks from there.
//
// The argument holds while ready_xid is written only by its default and the
// trigger: no role that outboxtop grants prints may set it (a producer inserts
// named columns, and ready_xid is not one of them). There is no periodic pass
// from the start as a check: its cost grows with the horizon (in the horizon
// profile, at about 1,000,000 dead rows, a backlog read of the relay's
// /metrics that fell on one was cancelled at its 5 s limit). A new Inspector
// (the one-shot status, a restarted console) reads from the start once.
//
// The late rows cost what changed since the previous snapshot, their dead
// entries included: a console refreshing every second reads a second's worth
// of transactions, a /metrics scraped every minute a minute's worth.
type snapFloor struct {
	seq   int64            // every unpublished, not failed row seen has seq >= seq
	seen  []int64          // when the pass read all of them, their seqs; nil when not
	xmax  uint64           // the snapshot's xmax
	xip   []uint64         // and its transactions in progress
	heads map[aggKey]int64 // every unpublished row seen of the aggregate has seq >= heads[k]
}

const (
	// headsKept bounds the aggregates whose head an Inspector remembers: a
	// pass probes at most caps.probe (1,000) aggregates, and the heads go to
	// two statements of every snapshot as one jsonb parameter.
	headsKept = 4_096
)

// floorState is an Inspector's snapFloor, nil until its first pass.
type floorState struct {
	mu sync.Mutex
	f  *snapFloor
}

// get returns the floor to start a pass from, nil to read from the start.
func (s *floorState) get() *snapFloor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f
}

// set keeps f, built whole from one snapshot, as the next pass's floor. Two
// passes that ran at once each leave a floor that holds; the later one stays.
func (s *floorState) set(f *snapFloor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = f
}

// passArgs are the pass's parameters $3 to $7 (see passSQL): from the start
// when f is nil.
func (f *snapFloor) passArgs() []any {
	if f == nil {
		return []any{int64(math.MinInt64), nil, []uint64{}, []byte("{}"), []int64{}}
	}
	from, seen := f.seq, []int64{}
	if f.seen != nil {
		from, seen = math.MaxInt64, f.seen
	}
	return []any{from, f.xmax, f.xip, f.headsJSON(), seen}
}

// headsJSON is heads as jsonb: {type: {id: seq}}.
func (f *snapFloor) headsJSON() []byte {
	m := map[string]map[string]int64{}
	for k, seq := range f.heads {
		if m[k.typ] == nil {
			m[k.typ] = map[string]int64{}
		}
		m[k.typ][k.id] = seq
	}
	b, _ := json.Marshal(m) // strings and integers: cannot fail
	return b
}

// next is the floor a pass leaves: prev (nil: the pass read from the start),
// lowered by the late rows it found (lateMin: each aggregate's
// first late row), and moved to what it saw: the seqs it read in order (all
// of them when covered), and the heads it probed.
func (prev *snapFloor) next(xmax uint64, xip []uint64, read []int64, covered bool, lateMin map[aggKey]int64, probes []probed) *snapFloor {
	f := &snapFloor{seq: math.MaxInt64, xmax: xmax, xip: xip, heads: map[aggKey]int64{}}
	if xip == nil {
		f.xip = []uint64{}
	}
	if len(read) > 0 {
		f.seq = read[0]
	}
	if covered {
		f.seen = read
		if f.seen == nil {
			f.seen = []int64{}
		}
	}
	// Full: keep this pass's heads only (a head forgotten is read from the
	// aggregate's start, which is never wrong).
	if prev != nil && len(prev.heads)+len(probes) <= headsKept {
		for k, seq := range prev.heads {
			if late, ok := lateMin[k]; ok && late < seq {
				seq = late
			}
			f.heads[k] = seq
		}
	}
	for _, p := range probes {
		f.heads[p.key] = p.headSeq
	}
	return f
}
