package console

import (
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestOverviewSaysWhatOfTheBlockedListIsRanked: the blocked aggregates' title
// says when its lines are not all ranked against every blocked aggregate
// (inspect.Blocked.Ranked): the most found, or only the first ones ranked; a
// list ranked whole carries nothing.
func TestOverviewSaysWhatOfTheBlockedListIsRanked(t *testing.T) {
	t.Parallel()
	c := overviewCases()[2]
	n := len(c.snap.Blocked.Aggregates)
	if n < 3 {
		t.Fatalf("fixture lists %d blocked aggregates, want 3 or more", n)
	}
	c.snap.Blocked.Bound = inspect.LowerBound
	for _, tc := range []struct {
		ranked int
		want   string
	}{
		{n, "BLOCKED AGGREGATES (≥70001)"},
		{0, "BLOCKED AGGREGATES (≥70001) · most found, not ranked"},
		{2, "BLOCKED AGGREGATES (≥70001) · first 2 ranked"},
	} {
		c.snap.Blocked.Ranked = tc.ranked
		_, screen := drawOverview(t, c, 80, 24)
		var title string
		for l := range strings.SplitSeq(screen, "\n") {
			if strings.HasPrefix(l, "BLOCKED AGGREGATES") {
				title = strings.TrimRight(l, " ")
			}
		}
		if title != tc.want {
			t.Errorf("%d of %d ranked: title %q, want %q\n%s", tc.ranked, n, title, tc.want, screen)
		}
	}
}
