package cmd

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

func TestProgressFormats(t *testing.T) {
	t.Parallel()
	pr := inspect.Progress{Run: "6930a1b2-3f9a2c", Action: inspect.Retry, Total: 20000, Done: 8500, Changed: 8500,
		Rate: 500, Target: 500, ETA: 23 * time.Second}
	bar := progressBar(pr, 80)
	if want := "retry [" + strings.Repeat("█", 17) + strings.Repeat("░", 23) + "] 8500/20000  42% 500/s eta 23s"; bar != want {
		t.Errorf("bar\n got %q\nwant %q", bar, want)
	}
	if n := len([]rune(bar)); n >= 80 {
		t.Errorf("the bar takes %d cells of 80", n)
	}
	if n := len([]rune(progressBar(pr, 40))); n >= 40 {
		t.Errorf("the bar takes %d cells of 40", n)
	}
	if got, want := progressLine(pr), "retry run 6930a1b2-3f9a2c: 8500/20000 done (42%), 500/s, eta 23s"; got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	// Before a rate is measured: the target; unpaced and unmeasured: unknown.
	start := inspect.Progress{Run: "r", Action: inspect.Replay, Total: 3, ETA: -1}
	if got := progressLine(start); got != "replay run r: 0/3 done (0%), –/s, eta –" {
		t.Errorf("start line %q", got)
	}
	slow := inspect.Progress{Run: "r", Action: inspect.ResetLease, Total: 100, Done: 100, Target: 0.5}
	if got := progressLine(slow); got != "reset-lease run r: 100/100 done (100%), 0.5/s, eta 0s" {
		t.Errorf("end line %q", got)
	}
	for d, want := range map[time.Duration]string{23 * time.Second: "23s", 100 * time.Second: "1m40s", 2*time.Hour + 5*time.Minute: "2h05m"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// Without a terminal a run prints a plain line every 5 s, never a carriage
// return; on one it redraws one line in place.
func TestProgressOutput(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&buf)
	p.now = func() time.Time { return now }
	if p.tty {
		t.Fatal("a buffer is no terminal")
	}
	pr := inspect.Progress{Run: "r", Action: inspect.Retry, Total: 1000, Target: 100, ETA: 10 * time.Second}
	for k := range 12 { // a chunk a second
		pr.Done = int64(k * 100)
		p.update(pr)
		now = now.Add(time.Second)
	}
	pr.Done = 1000
	p.finish(pr)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		"retry run r: 0/1000 done (0%), 100/s, eta 10s",
		"retry run r: 500/1000 done (50%), 100/s, eta 10s",
		"retry run r: 1000/1000 done (100%), 100/s, eta 0s",
		"retry run r: 1000/1000 done (100%), 100/s, eta 0s",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") || strings.Contains(buf.String(), "\r") {
		t.Fatalf("plain output\n%s\nwant\n%s", buf.String(), strings.Join(want, "\n"))
	}

	buf.Reset()
	tty := &progress{out: &buf, tty: true, width: 80, every: progressEvery, now: time.Now}
	pr.Done = 300
	tty.update(pr)
	pr.Done = 1000
	tty.finish(pr)
	got := buf.String()
	if !strings.HasPrefix(got, "\rretry [") || strings.Count(got, "\r") != 2 || strings.Count(got, "\x1b[K") != 2 ||
		!strings.HasSuffix(got, "1000/1000 100% 100/s eta 0s\x1b[K\n") {
		t.Fatalf("terminal output %q", got)
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"500": 500, "500/s": 500, "30/m": 0.5, "30/min": 0.5, "3600/h": 1, " 2.5 /s": 2.5} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5/s", "fast", "5/d", "NaN", "Inf"} {
		if _, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q) accepted", in)
		}
	}
}

var runIDIn = regexp.MustCompile(`run ([0-9a-f]{8}-[0-9a-f]{6}):`)

// A paced retry from the command line: the dry run says what the pace would
// take, --max stops the run, --resume finishes it, and no event is retried
// twice (the audit rows' ids are distinct and add up).
func TestPacedRetryCommand(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'bulk-' || g, 'OrderPlaced', '{}', 5, now(), 'boom' FROM generate_series(1, 1500) g`); err != nil {
		t.Fatal(err)
	}
	r := run(t, env, "retry", "--from", "failed", "--all", "--rate", "500/s", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.out, "retry: 1501 events (") ||
		!strings.Contains(r.out, "paced at 500/s: 1501 events in 4 chunks of up to 500, about 3s\n") {
		t.Fatalf("dry run: %+v", r)
	}
	if n, _ := auditCount(t, pool); n != 0 {
		t.Fatal("the dry run wrote audit rows")
	}
	r = run(t, env, "retry", "--from", "failed", "--all", "--max", "600", "--chunk", "200")
	if r.code != ExitUsage || !strings.Contains(r.err, "pass --yes") {
		t.Fatalf("without --yes and no terminal: %+v", r)
	}
	r = run(t, env, "retry", "--from", "failed", "--all", "--max", "600", "--chunk", "200", "--yes", "--actor", "alice")
	m := runIDIn.FindStringSubmatch(r.out)
	if r.code != ExitOK || m == nil || !strings.Contains(r.out, "retried 600 of 600 events in 3 chunks, ") ||
		!strings.Contains(r.out, "stopped at --max 600; outboxtop retry --resume "+m[1]+" --max N") {
		t.Fatalf("paced retry: %+v", r)
	}
	id := m[1]
	if !strings.Contains(r.out, "retry run "+id+": 0/600 done (0%)") {
		t.Fatalf("no plain progress line: %q", r.out)
	}
	if r := run(t, env, "retry", "--resume", id, "--all", "--from", "failed", "--yes"); r.code != ExitUsage || !strings.Contains(r.err, "drop --all, --from") {
		t.Fatalf("resume with a target: %+v", r)
	}
	if r := run(t, env, "replay", "--resume", id, "--yes"); r.code != ExitUsage || !strings.Contains(r.err, "is a retry run") {
		t.Fatalf("resume as another action: %+v", r)
	}
	if r := run(t, env, "retry", "--resume", "6930a1b2-3f9a2c", "--yes"); r.code != ExitFailure || !strings.Contains(r.err, "no chunk of this run is recorded") {
		t.Fatalf("resume of an unknown run: %+v", r)
	}
	r = run(t, env, "retry", "--resume", id, "--max", "0", "--yes", "--actor", "bob")
	if r.code != ExitOK || !strings.Contains(r.out, "retry run "+id+": 600 events done before, 901 to go") ||
		!strings.Contains(r.out, "retried 901 of 901 events in 5 chunks, ") || !strings.Contains(r.out, "run "+id+" in all: 1501 of 1501 events") {
		t.Fatalf("resume: %+v", r)
	}
	var rows, distinct, audits int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(rows), 0), (SELECT count(DISTINCT e) FROM outbox_audit, unnest(event_ids) e
		WHERE filter->'run'->>'id' = $1), count(*) FROM outbox_audit WHERE filter->'run'->>'id' = $1`, id).Scan(&rows, &distinct, &audits); err != nil {
		t.Fatal(err)
	}
	if rows != 1501 || distinct != 1501 || audits != 8 {
		t.Fatalf("audit rows: %d rows, %d distinct ids, %d rows", rows, distinct, audits)
	}
	var failed int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE failed_at IS NOT NULL`).Scan(&failed); err != nil || failed != 0 {
		t.Fatalf("%d still failed %v", failed, err)
	}
}
