package inspect

import "testing"

// TestExtrapolate: a window is exact while the newest rows read (capped) reach back
// over it; past the cap it is the newest rows' rate over the part of the window
// that has any history, and never below the rows counted.
func TestExtrapolate(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name     string
		n        int64
		span     float64
		inWindow int64
		w        float64
		history  *float64
		want     Count
	}{
		{"under the cap: exact", 1500, 3000, 1500, 3600, f(3000), Count{Value: 1500}},
		{"cap reached after the window: exact", publishedWindowCap, 400, 3000, 300, f(5000), Count{Value: 3000}},
		// 20,000 in the last 400 s (50/s) and 8 minutes of history: not 180,000 for the hour.
		{"short history", publishedWindowCap, 400, publishedWindowCap, 3600, f(480), Count{Value: 24000, Estimate: true}},
		{"full hour of history", publishedWindowCap, 400, publishedWindowCap, 3600, f(7200), Count{Value: 180000, Estimate: true}},
		{"history unknown", publishedWindowCap, 400, publishedWindowCap, 3600, nil, Count{Value: 180000, Estimate: true}},
		{"never below the rows counted", publishedWindowCap, 400, publishedWindowCap, 3600, f(10), Count{Value: publishedWindowCap, Estimate: true}},
	} {
		if got := extrapolate(c.n, c.span, c.inWindow, c.w, c.history); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
