package fleet

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDeepNestingIsRefusedCheaply: inline tables 20,000 and 150,000 deep (80
// and 600 KB, under the size limit) took the decoder to 16 and 21 GB; they,
// and dotted keys and table headers as deep, are refused with one line naming
// the line, having allocated next to nothing (under 1 MiB; the decoder took
// 265 MiB in the first 300 ms). Not parallel: the heap is the process's.
func TestDeepNestingIsRefusedCheaply(t *testing.T) {
	const head = "[[outbox]]\nname = \"a\"\n"
	for name, text := range map[string]string{
		"inline 20000":  "x = " + strings.Repeat("{a=", 20_000) + "1" + strings.Repeat("}", 20_000),
		"inline 150000": "x = " + strings.Repeat("{a=", 150_000) + "1" + strings.Repeat("}", 150_000),
		"array 150000":  head + "x = " + strings.Repeat("[", 150_000) + strings.Repeat("]", 150_000),
		"dotted key":    head + "x" + strings.Repeat(".a", 20_000) + " = 1",
		"header":        head + "[x" + strings.Repeat(".a", 20_000) + "]\nb = 1",
		"array header":  head + "[[x" + strings.Repeat(".a", 20_000) + "]]\nb = 1",
		"after a multi-line string": head + "y = { s = \"\"\"a\"\"\"\", z = " +
			strings.Repeat("{a=", 20_000) + "1" + strings.Repeat("}", 20_000) + " }",
	} {
		allocated, took, err := parseWatched(t, text)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "nested more than 8 levels deep") {
			t.Errorf("%s: %v, want one line refusing the nesting", name, err)
			continue
		}
		want := "line 1:"
		if strings.HasPrefix(text, head) {
			want = "line 3:"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to name %s", name, err, want)
		}
		// The refusal itself allocates a few hundred bytes; the bound leaves room
		// for what the runtime and the test's own goroutines allocate meanwhile.
		if allocated > 1<<20 || took > 5*time.Second {
			t.Errorf("%s: refused after allocating %d bytes in %v", name, allocated, took)
		}
	}
}

// TestShapeAllowsWhatAFleetFileNeeds: strings and comments holding brackets
// and dots do not count, the deepest a fleet file goes passes, and a text over
// the size limit is refused before it is read.
func TestShapeAllowsWhatAFleetFileNeeds(t *testing.T) {
	t.Parallel()
	ok := `# [[[[[[[[[[ a.b.c.d.e.f.g.h.i
[[outbox]]
name = "a.b.c.d.e.f.g.h.i.j"
dsn = "host=x dbname=[[[[[[[[[[[[{{{{{{{{"
groups = ["x\"[[[[[[[[[[[[[[", """
[[[[[[[[[[[[[[[[[[[
a.b.c.d.e.f.g.h.i.j.k"""]
labels = { team = "a.b.c.d.e.f.g.h.i.j", owner = 'a.b.c.d.e.f.g.h.i.j[[[[[[[[[[\', tier = '''{{{{{{{{{{{{
'''}

[[outbox]]
name = "b"
dsn = "host=y"
[outbox.labels]
team = "x"
`
	if err := checkShape(ok); err != nil {
		t.Errorf("a fleet file with brackets and dots in strings and comments: %v", err)
	}
	if _, err := Parse("fleet.toml", ok, env()); err != nil {
		t.Errorf("it parses: %v", err)
	}
	if err := checkShape(strings.Repeat(" ", maxFleetFile+1)); err == nil || !strings.Contains(err.Error(), "more than a fleet file may have") {
		t.Errorf("a text over the size limit: %v", err)
	}
	if err := checkShape("x = " + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting)); err != nil {
		t.Errorf("nesting at the limit: %v", err)
	}
}

// parseWatched parses text and returns the bytes allocated, the time taken
// and the error. A parse whose heap grows past 256 MiB cannot be stopped
// (the decoder takes no context): the test binary panics then, rather than
// let it take the machine's memory.
func parseWatched(t *testing.T, text string) (uint64, time.Duration, error) {
	t.Helper()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := Parse("fleet.toml", text, env())
		done <- err
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			took := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			return after.TotalAlloc - before.TotalAlloc, took, err
		case <-tick.C:
			var now runtime.MemStats
			runtime.ReadMemStats(&now)
			if grown := now.TotalAlloc - before.TotalAlloc; grown > 256<<20 {
				panic(fmt.Sprintf("parsing a fleet file of %d bytes allocated %d MiB in %v and goes on", len(text), grown>>20, time.Since(start)))
			}
		}
	}
}
