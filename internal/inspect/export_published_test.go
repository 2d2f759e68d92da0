package inspect

// SetPublishedCaps makes i's snapshots read at most window of the newest
// published rows for the windows, and count the published and archived
// totals one by one up to total (0: the production cap of either).
func SetPublishedCaps(i *Inspector, window, total int64) {
	cp := pubCaps{window: publishedWindowCap, total: totalExactCap}
	if window > 0 {
		cp.window = window
	}
	if total > 0 {
		cp.total = total
	}
	i.pub = &cp
}
