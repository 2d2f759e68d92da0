package inspect

import "testing"

// TestWindowCount: a window is exact while the newest rows read (capped) reach
// back over it; past the cap it is the newest rows' rate over the part of the
// window that has any history, never below the rows counted and never above
// the table's published rows.
func TestWindowCount(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	const c = publishedWindowCap
	for _, k := range []struct {
		name     string
		v        windows
		inWindow int64
		w        float64
		want     Count
	}{
		{"under the cap: exact", windows{1500, 3000, f(3000), c, 1e9}, 1500, 3600, Count{Value: 1500}},
		{"cap reached after the window: exact", windows{c, 400, f(5000), c, 1e9}, 3000, 300, Count{Value: 3000}},
		// 20,000 in the last 400 s (50/s) and 8 minutes of history: not 180,000 for the hour.
		{"short history", windows{c, 400, f(480), c, 1e9}, c, 3600, Count{Value: 24000, Estimate: true, AtLeast: c}},
		{"full hour of history", windows{c, 400, f(7200), c, 1e9}, c, 3600, Count{Value: 180000, Estimate: true, AtLeast: c}},
		{"history unknown", windows{c, 400, nil, c, 1e9}, c, 3600, Count{Value: 180000, Estimate: true, AtLeast: c}},
		{"never below the rows counted", windows{c, 400, f(10), c, 1e9}, c, 3600, Count{Value: c, Estimate: true, AtLeast: c}},
		// The incident: 20,000 rows published in the last 19.3 s of a burst
		// extrapolate to 310,771 for 5 minutes, more than the table's 150,000.
		{"never above the table", windows{c, 19.3, f(86400), c, 150000}, c, 300, Count{Value: 150000, Estimate: true, AtLeast: c}},
		{"a table below the rows counted", windows{c, 19.3, f(86400), c, 100}, c, 300, Count{Value: c, Estimate: true, AtLeast: c}},
	} {
		if got := k.v.count(k.inWindow, k.w); got != k.want {
			t.Errorf("%s: got %+v, want %+v", k.name, got, k.want)
		}
	}
}
