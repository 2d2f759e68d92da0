package console

import (
	"fmt"
	"testing"
)

// TestGolden renders every view at 80×24 and 120×40 over the seeded database.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			b.size(size[0], size[1])
			for v := range viewCount {
				b.keys(fmt.Sprint(int(v) + 1))
				golden(t, fmt.Sprintf("%d-%s-%dx%d", v+1, viewTitles[v], size[0], size[1]), b.screen())
			}
			b.keys("4", "enter")
			golden(t, fmt.Sprintf("detail-%dx%d", size[0], size[1]), b.screen())
			b.keys("esc", "?")
			golden(t, fmt.Sprintf("help-%dx%d", size[0], size[1]), b.screen())
		})
	}
}
