package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// openHolder connects as application app and runs statements, leaving the
// connection (and its transaction) open until the test ends.
func openHolder(t *testing.T, dsn, app string, statements ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, q := range statements {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// status names the xmin horizon's holders, and --warn-horizon/--crit-horizon
// check the oldest one's transaction age like every other threshold: the
// crossed line, the performance data with its bounds, JSON's thresholds[] and
// health.horizon. terminate-backend ends a holder only with --yes (or a yes on
// a terminal), only a pid that holds the horizon, never in read-only mode, and
// audits what it ended.
func TestStatusHorizonAndTerminateBackend(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	dsn := env["DATABASE_URL"]
	quiet := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1", "--warn-oldest", "0", "--crit-oldest", "0"}

	r := run(t, env, quiet...)
	if r.code != ExitOK || !strings.Contains(r.out, "\nxmin horizon: nothing holds it back besides this check\n") ||
		!strings.Contains(firstLine(r.out), " xmin_horizon=0.000s;300;1800;0 xmin_horizon_xids=0;;;0") {
		t.Fatalf("no holder: exit %d\n%s", r.code, r.out)
	}

	report := openHolder(t, dsn, "nightly-report", `BEGIN ISOLATION LEVEL REPEATABLE READ`, "SELECT count(*) FROM outbox_event -- \x1b[2J\u202e")
	rpid := report.PgConn().PID()
	time.Sleep(300 * time.Millisecond)
	r = run(t, env, append(quiet, "--warn-horizon", "100ms", "--crit-horizon", "1h")...)
	first := firstLine(r.out)
	if r.code != ExitWarning || !strings.HasPrefix(first, "OUTBOXTOP WARNING - xmin horizon ") ||
		!strings.Contains(first, fmt.Sprintf("(session pid %d) > 100ms", rpid)) || !strings.Contains(first, ";0.1;3600;0 xmin_horizon_xids=") {
		t.Fatalf("a report open 300 ms past --warn-horizon 100ms: exit %d\n%s", r.code, r.out)
	}
	for _, want := range []string{
		fmt.Sprintf("\nxmin horizon HELD by session pid %d user postgres application nightly-report client 127.0.0.1 (idle in transaction), open ", rpid),
		"dead rows in outbox_event now — vacuum of every table in the database waits for it",
		"\n    query: SELECT count(*) FROM outbox_event -- ^[[2J<U+202E>\n", // the query's text sanitized
		fmt.Sprintf("\nto end it: outboxtop terminate-backend --pid %d (or the console's T)\n", rpid),
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("report lacks %q:\n%s", want, r.out)
		}
	}
	if strings.ContainsAny(r.out, "\x1b\u202e") {
		t.Errorf("raw escape or bidi control in the report:\n%q", r.out)
	}
	if r := run(t, env, append(quiet, "--warn-horizon", "100ms", "--crit-horizon", "200ms")...); r.code != ExitCritical {
		t.Errorf("past --crit-horizon: exit %d\n%s", r.code, r.out)
	}
	if r := run(t, env, append(quiet, "--warn-horizon", "0", "--crit-horizon", "0")...); r.code != ExitOK || strings.Contains(firstLine(r.out), ";0.1;") {
		t.Errorf("the horizon check off: exit %d\n%s", r.code, r.out)
	}
	if r := run(t, env, "status", "--warn-horizon", "-1s"); r.code != ExitStatusUsage {
		t.Errorf("a negative --warn-horizon: exit %d, want 64", r.code)
	}

	writer := openHolder(t, dsn, "batch-writer", `BEGIN`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES (gen_random_uuid(), 'order', 'w-1', 'E', '{}')`)
	wpid := writer.PgConn().PID()
	r = run(t, env, append(quiet, "--json", "--warn-horizon", "100ms", "--crit-horizon", "1h")...)
	var s struct {
		Health struct {
			OldestXmin struct {
				Kind string
				PID  int
			} `json:"oldest_xmin"`
			Horizon struct {
				Holders []struct {
					Kind, State, Application, User string
					PID                            int
					Age                            float64 `json:"age_seconds"`
				}
			}
		}
		Check struct {
			Crossed    []string
			Thresholds []struct {
				Name              string
				Value             float64
				Warning, Critical *float64
			}
		}
	}
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	kinds := map[int]string{}
	for _, x := range s.Health.Horizon.Holders {
		kinds[x.PID] = x.Kind
	}
	if r.code != ExitWarning || kinds[int(rpid)] != "session" || kinds[int(wpid)] != "writer" || s.Health.OldestXmin.PID != int(rpid) ||
		s.Health.Horizon.Holders[0].Application != "nightly-report" || s.Health.Horizon.Holders[0].Age < 0.3 {
		t.Fatalf("json: exit %d horizon %+v oldest %+v", r.code, s.Health.Horizon, s.Health.OldestXmin)
	}
	found := false
	for _, th := range s.Check.Thresholds {
		if th.Name == "xmin horizon" {
			found = th.Value >= 0.3 && th.Warning != nil && *th.Warning == 0.1 && th.Critical != nil && *th.Critical == 3600
		}
	}
	if !found || len(s.Check.Crossed) != 1 || !strings.HasPrefix(s.Check.Crossed[0], "xmin horizon ") {
		t.Errorf("thresholds %+v crossed %q", s.Check.Thresholds, s.Check.Crossed)
	}

	w := fmt.Sprint(wpid)
	if r := run(t, env, "terminate-backend", "--pid", w); r.code != ExitUsage || !strings.Contains(r.err, "stdin is not a terminal; pass --yes") {
		t.Errorf("without --yes: exit %d %s", r.code, r.err)
	}
	if r := run(t, env, "terminate-backend", "--pid", w, "--yes", "--read-only"); r.code != ExitUsage || !strings.Contains(r.err, "read-only") {
		t.Errorf("--read-only: exit %d %s", r.code, r.err)
	}
	if r := run(t, env, "terminate-backend", "--pid", "999999", "--yes"); r.code != ExitUsage ||
		!strings.Contains(r.err, "pid 999999 does not hold the xmin horizon (the backends holding it: ") {
		t.Errorf("a pid that holds nothing: exit %d %s", r.code, r.err)
	}
	if n, _ := auditCount(t, pool); n != 0 {
		t.Fatalf("%d audit rows before the termination", n)
	}
	r = run(t, env, "terminate-backend", "--pid", w, "--yes", "--actor", "carol", "--reason", "holding the horizon")
	if r.code != ExitOK || !strings.Contains(r.out, "terminate-backend: writer pid "+w+" user postgres application batch-writer") ||
		!strings.Contains(r.out, "ended pid "+w+" (audit #") {
		t.Fatalf("terminate-backend --yes: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if err := writer.Ping(context.Background()); err == nil {
		t.Errorf("the writer still answers")
	}
	if n, actor := auditCount(t, pool); n != 1 || actor != "carol" {
		t.Errorf("%d audit rows, last by %q; want one by carol", n, actor)
	}
	if err := report.Ping(context.Background()); err != nil {
		t.Errorf("the report was ended too: %v", err)
	}
}
