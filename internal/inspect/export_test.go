package inspect

// TestCaps are the bounds of what a Snapshot reads (see snapCaps), settable in
// tests so that tables on both sides of every cap stay small.
type TestCaps struct{ Scan, Probe, Count, Failed, FailedGroups, BlockedProbe int }

// DefaultTestCaps are the production caps.
func DefaultTestCaps() TestCaps {
	c := defaultCaps
	return TestCaps{c.scan, c.probe, c.count, c.failed, c.failedGroups, c.blockedProbe}
}

// SetTestCaps makes i's snapshots use c.
func SetTestCaps(i *Inspector, c TestCaps) {
	i.caps = &snapCaps{scan: c.Scan, probe: c.Probe, count: c.Count, failed: c.Failed,
		failedGroups: c.FailedGroups, blockedProbe: c.BlockedProbe}
}
