package inspect

import (
	"testing"
	"time"
)

// TestPacerSpacesChunksAtTheRate checks the pacer by its arithmetic on a
// clock that only moves when told: never by timing a real run.
func TestPacerSpacesChunksAtTheRate(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := pacer{rate: 100}
	now := t0
	var waits []time.Duration
	for range 4 {
		d := p.reserve(now, 50)
		waits = append(waits, d)
		now = now.Add(d) // the chunk takes no time
	}
	want := []time.Duration{0, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
	for k := range want {
		if waits[k] != want[k] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	// 200 events started within 1.5 s: the fourth chunk's 50 are due by 2 s.
	if got := now.Sub(t0); got != 1500*time.Millisecond {
		t.Fatalf("the fourth chunk started after %v", got)
	}
	// A chunk that took 3 s (a lock wait) is not made up for with a burst:
	// the next chunk still waits its own slot after the late start.
	now = now.Add(3 * time.Second)
	if d := p.reserve(now, 50); d != 0 {
		t.Fatalf("after a slow chunk the next waited %v", d)
	}
	if d := p.reserve(now, 50); d != 500*time.Millisecond {
		t.Fatalf("the chunk after a slow one waited %v, want 500ms", d)
	}
	// Time a chunk takes counts toward its slot.
	q := pacer{rate: 10}
	_ = q.reserve(t0, 10) // 1 s of events
	if d := q.reserve(t0.Add(400*time.Millisecond), 10); d != 600*time.Millisecond {
		t.Fatalf("a chunk that took 400 ms of a 1 s slot waited %v", d)
	}
	// Not paced: no wait ever.
	var none pacer
	for range 3 {
		if d := none.reserve(t0, 1000); d != 0 {
			t.Fatalf("an unpaced run waited %v", d)
		}
	}
}

func TestDefaultChunkAndEstimate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate float64
		want int
	}{{0, 1000}, {0.5, 1}, {1, 1}, {37.2, 38}, {500, 500}, {5000, 1000}} {
		if got := DefaultChunk(c.rate); got != c.want {
			t.Errorf("DefaultChunk(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
	// 20,000 at 500/s in chunks of 500: 40 chunks, the last starting at 39 s.
	if n, chunks, d := PacedEstimate(20000, 0, 500, 0); n != 20000 || chunks != 40 || d != 39*time.Second {
		t.Errorf("estimate %d %d %v", n, chunks, d)
	}
	if n, chunks, d := PacedEstimate(20000, 1200, 100, 0); n != 1200 || chunks != 12 || d != 11*time.Second {
		t.Errorf("estimate with a maximum %d %d %v", n, chunks, d)
	}
	if n, chunks, d := PacedEstimate(3, 0, 0, 0); n != 3 || chunks != 1 || d != 0 {
		t.Errorf("estimate unpaced %d %d %v", n, chunks, d)
	}
}

func TestRunID(t *testing.T) {
	t.Parallel()
	id := newRunID(0x6930a1b2)
	start, err := parseRunID(id)
	if err != nil || start != 0x6930a1b2 || len(id) != 15 {
		t.Fatalf("%q: %d %v", id, start, err)
	}
	for _, bad := range []string{"", "6930a1b2", "6930a1b2-3f9a2", "zz30a1b2-3f9a2c", "6930a1b2-3f9a2g", "'; drop-table"} {
		if _, err := parseRunID(bad); err == nil {
			t.Errorf("%q read as a run id", bad)
		}
	}
}
