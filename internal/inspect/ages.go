package inspect

// oldestAges completes a Snapshot's oldest pending and ready ages past the
// pass (countPastScan): the oldest among the rows the pass and the three
// ranges past it read. When every range was read whole (all), those rows are
// every unpublished, not failed row and the ages are exact; else they are
// lower bounds (OldestPendingBound, OldestReadyBound), never shown bare: the
// one an incident's console showed as 1h04m was 1h22m49s, older rows lying
// past the rows read.
func oldestAges(s *Snapshot, pending, ready Age, all bool) {
	s.OldestPendingAge = max(s.OldestPendingAge, pending)
	s.OldestReadyAge = max(s.OldestReadyAge, ready)
	if !all {
		s.OldestPendingBound, s.OldestReadyBound = LowerBound, LowerBound
	}
}

// AgeText is an age as text shows it: "≥" before one that is a lower bound.
func AgeText(a Age, b Bound) string { return b.Mark() + a.String() }
