package inspect

import "fmt"

// GroupsCover is what a Snapshot's failed groups count: FailedByType,
// FailedByError and the Failed of each ByEventType. They are read from the
// newest failures only (the package doc's "Cost on a big table"), so past
// that read a group's count is of those, never a total: 397 of the newest
// 1,001 failures can be 120,000 of all of them.
type GroupsCover struct {
	// Failures is how many failed events the groups count: the newest
	// Failures, or every one (All).
	Failures int64 `json:"failures"`
	All      bool  `json:"all"`
	// Failed is every failed event (Counts.Failed), FailedBound its bound.
	Failed      int64 `json:"failed"`
	FailedBound Bound `json:"failed_bound,omitempty"`
}

// FailedGroupsCover says what the failed groups of s count.
func (s Snapshot) FailedGroupsCover() GroupsCover {
	c := GroupsCover{Failed: s.Counts.Failed, FailedBound: s.Counts.Bounds.Failed}
	if s.FailedGroupsOf > 0 {
		c.Failures = s.FailedGroupsOf
		return c
	}
	c.Failures, c.All = s.Counts.Failed, true
	return c
}

// Label is how text qualifies the groups: "" when they count every failed
// event, else "the newest 1001 of ≥250000 failed only".
func (c GroupsCover) Label() string {
	if c.All {
		return ""
	}
	return fmt.Sprintf("the newest %d of %s failed only", c.Failures, c.FailedBound.Format(c.Failed))
}
