package console

import (
	"strings"
	"testing"
)

// Past the newest failures the snapshot groups, the Overview's error groups
// are said to be counts in those only, at every size, not totals.
func TestFailedGroupsSayTheyCountTheNewestOnly(t *testing.T) {
	t.Parallel()
	for _, c := range overviewCases() {
		if !strings.HasPrefix(c.name, "incident") {
			continue
		}
		c.snap.FailedGroupsOf, c.snap.Partial = 1001, true
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			_, screen := drawOverview(t, c, size[0], size[1])
			if !strings.Contains(screen, "FAILED BY ERROR (in the newest 1001 only)") {
				t.Errorf("%s at %v: the error groups are not said to count the newest 1001 only:\n%s", c.name, size, screen)
			}
		}
	}
}
