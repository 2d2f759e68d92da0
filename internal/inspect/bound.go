package inspect

import "strconv"

// Bound says how a figure of a Snapshot relates to the truth of the same
// snapshot (one transaction, one now()). Counting stops at a cap to keep a
// Snapshot cheap on a big table (the package doc's "Cost on a big table"); a
// figure whose count stopped is never shown as if it were exact:
//
//	Exact       ""             the number of rows, counted
//	LowerBound  "lower_bound"  the truth is at least the value (shown "≥")
//	UpperBound  "upper_bound"  the truth is at most the value (shown "≤")
//
// No count of Counts or Blocked is a statistical estimate: PostgreSQL's
// statistics can be arbitrarily stale, so a number derived from them has no
// bound that holds. (Count, for the published, archived and inbox totals, is
// the exception: see its Estimate.)
type Bound string

// The bounds.
const (
	Exact      Bound = ""
	LowerBound Bound = "lower_bound"
	UpperBound Bound = "upper_bound"
)

// Mark is how text shows the bound before the number: "", "≥" or "≤".
func (b Bound) Mark() string {
	switch b {
	case LowerBound:
		return "≥"
	case UpperBound:
		return "≤"
	}
	return ""
}

// Format is n as text shows it, marked.
func (b Bound) Format(n int64) string { return b.Mark() + strconv.FormatInt(n, 10) }

// Bounds are the Bound of each figure of Counts, and of Snapshot.ExpiredLeases.
// Absent (empty) means exact. Counts.Approx says the same in booleans (true:
// not exact) for readers that predate Bounds.
type Bounds struct {
	Ready         Bound `json:"ready,omitempty"`
	Waiting       Bound `json:"waiting,omitempty"`
	Publishable   Bound `json:"publishable,omitempty"`
	Scheduled     Bound `json:"scheduled,omitempty"`
	Pending       Bound `json:"pending,omitempty"`
	Leased        Bound `json:"leased,omitempty"`
	Failed        Bound `json:"failed,omitempty"`
	ExpiredLeases Bound `json:"expired_leases,omitempty"`
}

// sumBound is the bound of a sum: exact when every term is, else a lower bound
// (every term is exact or a lower bound; an upper bound is never summed).
func sumBound(bs ...Bound) Bound {
	for _, b := range bs {
		if b != Exact {
			return LowerBound
		}
	}
	return Exact
}

// snapCaps are the rows a Snapshot reads or counts one by one (see the package
// doc's "Cost on a big table"). Tests make them small so that tables on both
// sides of every cap stay small; an Inspector without its own uses defaultCaps.
type snapCaps struct {
	// scan: unpublished, not failed rows read in seq order (the relay's order)
	// for the breakdowns and the aggregates to probe.
	scan int
	// probe: aggregates of the scanned rows whose head is read, most ready rows
	// first: where the ready rows wait, and which aggregates are blocked.
	probe int
	// count: rows counted along each of the three index ranges that partition
	// the unpublished, not failed rows, when the scan did not reach them all.
	count int
	// failed: failed rows counted (an index-only count of outbox_failed_idx).
	failed int
	// failedGroups: the newest failures grouped by type and error.
	failedGroups int
	// blockedProbe: the oldest failures and the soonest retries read to find the
	// blockers among them.
	blockedProbe int
	// hinted and unhinted: past the scan, the rows hinted blocked and the ready
	// rows not hinted that the blocked list's ranking reads (blockedrank.go),
	// grouped by aggregate; rankProbe: the aggregates it asks for their head.
	hinted, unhinted, rankProbe int
	// list: the blocked aggregates listed (BlockedLimit; tests list fewer,
	// so that tables past it stay small).
	list int
}

var defaultCaps = snapCaps{
	scan:         5_000,
	probe:        1_000,
	count:        5_000,
	failed:       250_000,
	failedGroups: 1_000,
	blockedProbe: 2_000,
	hinted:       100_000,
	unhinted:     20_000,
	rankProbe:    50_000,
	list:         BlockedLimit,
}

func (i *Inspector) snapCaps() snapCaps {
	if i.caps != nil {
		return *i.caps
	}
	return defaultCaps
}
