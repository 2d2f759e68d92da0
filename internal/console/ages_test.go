package console

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// An oldest pending age read from the rows a snapshot reads, past its caps, is
// a lower bound: the Overview marks it "≥" (it showed 1h04m where the oldest
// pending event was 1h22m49s old), and leaves an exact one bare.
func TestOldestPendingMarkedWhenABound(t *testing.T) {
	t.Parallel()
	for _, c := range overviewCases() {
		if !strings.HasPrefix(c.name, "incident") {
			continue
		}
		c.snap.OldestPendingAge = inspect.Age(64 * time.Minute)
		for _, b := range []inspect.Bound{inspect.LowerBound, inspect.Exact} {
			c.snap.OldestPendingBound = b
			_, screen := drawOverview(t, c, 80, 24)
			want := "oldest pending " + b.Mark() + "1h04m"
			if !strings.Contains(screen, want) {
				t.Errorf("%s, bound %q: no %q:\n%s", c.name, b, want, screen)
			}
		}
	}
}
