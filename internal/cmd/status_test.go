package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// statusLine is the plugin output's first line: level, text, performance data.
var statusLine = regexp.MustCompile(`^OUTBOXTOP (OK|WARNING|CRITICAL|UNKNOWN) - [^|\n]+( \|( [a-z_0-9]+=[0-9.]+s?;[0-9.]*;[0-9.]*;0)+)?$`)

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestStatusLevelsFollowTheCheckPluginConvention(t *testing.T) {
	t.Parallel()
	env, _ := outboxDB(t) // one failed event blocking one aggregate, two ready, one published
	for _, c := range []struct {
		args    []string
		code    int
		summary string // in the first line
		perf    []string
	}{
		// Defaults a check script can rely on: failed or blocked > 0 is not OK.
		{nil, ExitWarning, "OUTBOXTOP WARNING - failed 1 > 0, blocked 1 > 0 |", []string{"failed=1;0;;0", "blocked=1;0;;0", "ready=2;;;0"}},
		{[]string{"--warn-failed", "-1", "--warn-blocked", "-1"}, ExitOK, "OUTBOXTOP OK - ready 2, failed 1, blocked 1, oldest publishable", []string{"failed=1;;;0", "oldest_publishable="}},
		{[]string{"--crit-failed", "0"}, ExitCritical, "OUTBOXTOP CRITICAL - failed 1 > 0, blocked 1 > 0", []string{"failed=1;0;0;0"}},
		{[]string{"--warn-failed", "5", "--crit-blocked", "0"}, ExitCritical, "OUTBOXTOP CRITICAL - blocked 1 > 0 |", []string{"blocked=1;0;0;0", "failed=1;5;;0"}},
		// Today's --max-* flags keep working: crossing one is CRITICAL.
		{[]string{"--warn-failed", "-1", "--warn-blocked", "-1", "--max-failed", "0"}, ExitCritical, "OUTBOXTOP CRITICAL - failed 1 > 0 |", []string{"failed=1;;0;0"}},
		{[]string{"--max-failed", "0", "--crit-failed", "5"}, ExitCritical, "OUTBOXTOP CRITICAL - failed 1 > 0, blocked 1 > 0 |", []string{"failed=1;0;0;0"}},
		{[]string{"--warn-failed", "-1", "--warn-blocked", "-1", "--max-oldest", "30m"}, ExitCritical, "OUTBOXTOP CRITICAL - oldest pending 50m", []string{"oldest_pending=30", ";1800;0"}},
		{[]string{"--warn-failed", "-1", "--warn-blocked", "-1", "--max-oldest", "2h"}, ExitOK, "OUTBOXTOP OK - ", nil},
	} {
		r := run(t, env, append([]string{"status"}, c.args...)...)
		line := firstLine(r.out)
		if r.code != c.code || !strings.HasPrefix(line, c.summary) || !statusLine.MatchString(line) {
			t.Errorf("status %v: exit %d, want %d; first line %q, want prefix %q", c.args, r.code, c.code, line, c.summary)
			continue
		}
		for _, p := range c.perf {
			if _, perf, _ := strings.Cut(line, " | "); !strings.Contains(perf, p) {
				t.Errorf("status %v: performance data %q lacks %q", c.args, perf, p)
			}
		}
		// The report follows as long output; stderr has the reason on one line.
		if !strings.Contains(r.out, "\noutboxtop status — schema public") || !strings.Contains(r.out, "failed 1") {
			t.Errorf("status %v: no report after the summary:\n%s", c.args, r.out)
		}
		if c.code != ExitOK && (strings.Count(strings.TrimSpace(r.err), "\n") != 0 || !strings.Contains(r.err, "> ")) {
			t.Errorf("status %v: stderr %q, want the crossed thresholds on one line", c.args, r.err)
		}
		if strings.Contains(r.out, "\x1b") {
			t.Fatalf("escape sequence from last_error reached the terminal: %q", r.out)
		}
	}
}

func TestStatusJSONCarriesTheVerdict(t *testing.T) {
	t.Parallel()
	env, _ := outboxDB(t)
	r := run(t, env, "status", "--json", "--max-oldest", "30m")
	if r.code != ExitCritical {
		t.Fatalf("max-oldest: %+v", r)
	}
	var s struct {
		Counts struct {
			Ready, Failed int64
			Published     struct {
				Value    int64
				Estimate bool
			}
		}
		OldestPendingAge     float64  `json:"oldest_pending_age_seconds"`
		OldestPublishableAge *float64 `json:"oldest_publishable_age_seconds"`
		Blocked              struct{ Count int64 }
		Check                struct {
			Level      string
			Healthy    bool
			Crossed    []string
			Thresholds []struct {
				Name              string
				Value             float64
				Warning, Critical *float64
			}
		}
	}
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatalf("json: %v\n%s", err, r.out)
	}
	if s.Counts.Ready != 2 || s.Counts.Failed != 1 || s.Counts.Published.Value != 1 || s.Counts.Published.Estimate ||
		s.Blocked.Count != 1 || s.Check.Healthy || s.Check.Level != "CRITICAL" || len(s.Check.Crossed) != 3 ||
		s.OldestPendingAge < 2900 || s.OldestPublishableAge == nil {
		t.Fatalf("json %+v", s)
	}
	names := map[string]bool{}
	for _, th := range s.Check.Thresholds {
		names[th.Name] = true
	}
	for _, n := range []string{"oldest publishable", "failed", "blocked", "oldest pending"} {
		if !names[n] {
			t.Errorf("thresholds lack %q: %+v", n, s.Check.Thresholds)
		}
	}
}

// One poison event must not make the check page for lag: the events behind it
// are not publishable, so they are the failed check's business, not the lag's.
func TestStatusOldestPublishableIgnoresEventsBehindAFailedOne(t *testing.T) {
	t.Parallel()
	pool, dsn := testenv.Pool(t)
	env := map[string]string{"DATABASE_URL": dsn}
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, failed_at, last_error)
		VALUES (gen_random_uuid(), 'order', 'p', 'Poison', '{}', now() - interval '2 hours', now() - interval '2 hours', now(), e'too large \u202e evil');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', 'p', 'Behind', '{}', now() - interval '1 hour', now() - interval '1 hour' FROM generate_series(1, 50)`); err != nil {
		t.Fatal(err)
	}
	quiet := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1"}
	r := run(t, env, quiet...)
	if r.code != ExitOK || !strings.Contains(firstLine(r.out), "oldest_publishable=0.000s;60;300;0") {
		t.Fatalf("poison only: exit %d, want OK with no publishable lag:\n%s\n%s", r.code, r.out, r.err)
	}
	// Hostile text is shown the console's way: the bidi override made visible.
	if strings.ContainsRune(r.out, '\u202e') || !strings.Contains(r.out, "<U+202E>") {
		t.Errorf("U+202E from last_error printed raw:\n%s", r.out)
	}
	// The failed check still sees it by default.
	if r := run(t, env, "status"); r.code != ExitWarning {
		t.Errorf("default status with a poison event: exit %d, want WARNING", r.code)
	}
	// A publishable event waiting 10 minutes is the relay's lag: CRITICAL by default.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		VALUES (gen_random_uuid(), 'order', 'q', 'Stuck', '{}', now() - interval '10 minutes', now() - interval '10 minutes')`); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, quiet...)
	if r.code != ExitCritical || !strings.HasPrefix(firstLine(r.out), "OUTBOXTOP CRITICAL - oldest publishable 10m") {
		t.Fatalf("10 minutes of lag: exit %d:\n%s", r.code, r.out)
	}
	if r := run(t, env, append(quiet, "--crit-oldest", "0", "--warn-oldest", "9m")...); r.code != ExitWarning {
		t.Errorf("--warn-oldest 9m, --crit-oldest off: exit %d, want WARNING:\n%s", r.code, r.out)
	}
	if r := run(t, env, append(quiet, "--crit-oldest", "0", "--warn-oldest", "0")...); r.code != ExitOK {
		t.Errorf("lag checks off: exit %d, want OK:\n%s", r.code, r.out)
	}
}

func TestStatusUnknownWhenTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	// A database that answered a moment ago and was then shut down.
	c, err := pgtemp.Start(context.Background(), pgtemp.Options{NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	up := c.DSN("postgres")
	if r := run(t, nil, "migrate", "--dsn", up); r.code != ExitOK {
		t.Fatalf("migrate: %+v", r)
	}
	if r := run(t, nil, "status", "--dsn", up); r.code != ExitOK || !strings.HasPrefix(r.out, "OUTBOXTOP OK - ") {
		t.Fatalf("status while up: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, "status", "--dsn", up, "--connect-timeout", "2s"); r.code != ExitUnknown || !strings.HasPrefix(r.out, "OUTBOXTOP UNKNOWN - cannot connect to PostgreSQL") {
		t.Fatalf("status after shutdown: exit %d, want 3 (UNKNOWN)\n%s%s", r.code, r.out, r.err)
	}

	// And one that never was, with a password that must not be echoed: a port
	// this test holds and that hangs up on every connection.
	dsn := fmt.Sprintf("postgres://outboxtop:hunter2@%s/outbox?sslmode=disable", hangUpListener(t))
	for _, asJSON := range []bool{false, true} {
		args := []string{"status", "--dsn", dsn, "--connect-timeout", "2s"}
		if asJSON {
			args = append(args, "--json")
		}
		r := run(t, nil, args...)
		if r.code != ExitUnknown || strings.Contains(r.out+r.err, "hunter2") {
			t.Fatalf("status %v against a port that hangs up: exit %d, want 3 (UNKNOWN)\n%s\n%s", args, r.code, r.out, r.err)
		}
		if asJSON {
			var v struct{ Check struct{ Level, Error string } }
			if err := json.Unmarshal([]byte(r.out), &v); err != nil || v.Check.Level != "UNKNOWN" || !strings.Contains(v.Check.Error, "cannot connect") {
				t.Errorf("--json: %v %+v\n%s", err, v, r.out)
			}
		} else if line := firstLine(r.out); !strings.HasPrefix(line, "OUTBOXTOP UNKNOWN - cannot connect to PostgreSQL") || !statusLine.MatchString(line) {
			t.Errorf("first line %q", line)
		}
	}
}

// Bad usage must not read as CRITICAL (2) to a monitoring system: status exits 64.
func TestStatusUsageErrorsExit64(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"status", "--max-oldest", "-1s"},
		{"status", "--warn-failed", "-2"},
		{"status", "--crit-oldest", "soon"},
		{"status", "--bogus"},
		{"status", "extra"},
		{"status", "--dsn", "postgres://u:hunter2@[oops"},
		{"status", "--schema", "bad name"},
	} {
		r := run(t, nil, args...)
		if r.code != ExitStatusUsage || strings.Count(strings.TrimSpace(r.err), "\n") != 0 || strings.Contains(r.err, "hunter2") || r.err == "" {
			t.Errorf("%v: exit %d, want 64, one line on stderr: %q", args, r.code, r.err)
		}
	}
	if r := run(t, nil, "status", "--help-all"); r.code != ExitOK || !strings.Contains(r.out+r.err, "--crit-blocked") {
		t.Errorf("status --help: exit %d", r.code)
	}
}

func TestStatusLeavesOutItsOwnSession(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	own := conn.Conn().PgConn().PID()
	conn.Release()
	other := inspect.XminHolder{Kind: "session", PID: int32(own) + 100000, Age: inspect.Age(60e9)}
	slot := inspect.XminHolder{Kind: "replication slot", Name: "s"}
	h := withoutOwnSessions(ctx, pool, inspect.Horizon{Holders: []inspect.XminHolder{
		{Kind: "session", PID: int32(own), Age: inspect.Age(5e9)},
		{Kind: "writer", PID: int32(own), Age: inspect.Age(5e9)},
		{Kind: "session", PID: int32(own) + 100000, Age: inspect.Age(-107e6)}, // begun after the snapshot
		other, slot,
	}})
	if len(h.Holders) != 2 || h.Holders[0] != other || h.Holders[1].Name != "s" {
		t.Errorf("kept %+v, want only another session's long transaction and the slot", h.Holders)
	}
}

// Counts that are bounds carry their mark (≥, ≤) in the summary and the report,
// a threshold a lower bound stayed under is said to be unsure, and perfdata
// stays numeric with a <label>_lower_bound=1 beside each bound.
func TestStatusMarksBounds(t *testing.T) {
	t.Parallel()
	var s inspect.Snapshot
	s.Counts = inspect.Counts{Ready: 5001, Waiting: 101, Publishable: 4900, Scheduled: 60001, Pending: 65002, Failed: 250001}
	s.Counts.Bounds = inspect.Bounds{Ready: inspect.LowerBound, Waiting: inspect.LowerBound, Publishable: inspect.LowerBound,
		Scheduled: inspect.LowerBound, Pending: inspect.LowerBound, Failed: inspect.LowerBound}
	s.Counts.Approx = inspect.Approx{Ready: true, Waiting: true, Scheduled: true, Pending: true, Failed: true}
	s.Blocked = inspect.Blocked{Count: 30, Bound: inspect.LowerBound, Estimate: true, Aggregates: []inspect.BlockedAggregate{
		{AggregateType: "order", AggregateID: "o-7", Waiting: 506, Blocker: inspect.Event{State: "failed"}},
		{AggregateType: "account", AggregateID: "a-1", Waiting: 0, FailedBehind: 9, Blocker: inspect.Event{State: "failed"}},
	}}
	th := fleet.Thresholds{WarnFailed: 300000, CritFailed: -1, WarnBlocked: 10, CritBlocked: 100}
	v := th.Check(s, 0)
	check := statusCheck{Level: levelNames[v.Level], Crossed: v.Crossed, Thresholds: v.Thresholds, Unsure: v.Unsure}
	first := statusSummary(check, s, 0, nil)
	for _, want := range []string{"OUTBOXTOP WARNING - blocked ≥30 > 10", "failed ≥250001: a lower bound, not known to be within 300000",
		"blocked ≥30: a lower bound, not known to be within 100", "failed=250001;300000;;0", "failed_lower_bound=1;;;0;1",
		"ready=5001;;;0", "ready_lower_bound=1", "waiting=101;;;0", "publishable=4900;;;0"} {
		if !strings.Contains(first, want) {
			t.Errorf("summary lacks %q:\n%s", want, first)
		}
	}
	if perf := first[strings.Index(first, "|"):]; strings.ContainsAny(perf, "≥≤~") {
		t.Errorf("perfdata not numeric: %s", perf)
	}
	var b strings.Builder
	printStatus(&b, s, inspect.HorizonWarnAfter)
	for _, want := range []string{"pending ≥65002 (ready ≥5001, of them waiting ≥101, publishable ≥4900; scheduled ≥60001)", "failed ≥250001",
		"counts marked ≥ are at least that", "blocked aggregates ≥30 (most waiting first of those found):\n  order/o-7 behind  (failed) with 506 waiting\n",
		"account/a-1 behind  (failed) with 0 waiting, 9 failed behind"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	js, err := json.Marshal(statusJSON{Snapshot: s, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"bounds":{"ready":"lower_bound"`, `"approx":{"ready":true`, `"bound":"lower_bound"`, `"unsure":["failed`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
}

// hangUpListener listens on a port of the kernel's choice for the test's
// duration and closes every connection at once: nothing else can take the port
// while the test uses it, as it could a port closed after looking free.
func hangUpListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}
