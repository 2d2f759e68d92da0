package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

const (
	cliFailed  = "d0000000-0000-0000-0000-000000000001"
	cliBehind  = "d1000000-0000-0000-0000-000000000001"
	cliReady   = "a0000000-0000-0000-0000-000000000001"
	cliPublish = "e0000000-0000-0000-0000-000000000001"
)

// outboxDB is a migrated database with one failed event blocking an aggregate, one
// ready event and one published event.
func outboxDB(t *testing.T) (map[string]string, *pgxpool.Pool) {
	t.Helper()
	pool, dsn := testenv.Pool(t)
	ctx := context.Background()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, attempts, failed_at, last_error)
			VALUES ($1, 'order', '7', 'OrderPlaced', '{}', now() - interval '1 hour', 5, now(), e'MESSAGE_TOO_LARGE\x1b[31m')`, []any{cliFailed}},
		{`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
			VALUES ($1, 'order', '7', 'OrderPaid', '{}', now() - interval '50 minutes'),
			       ($2, 'order', '8', 'OrderPlaced', '{}', now() - interval '1 minute')`, []any{cliBehind, cliReady}},
		{`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at)
			VALUES ($1, 'order', '9', 'OrderPlaced', '{}', now() - interval '10 seconds')`, []any{cliPublish}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{"DATABASE_URL": dsn}, pool
}

func auditCount(t *testing.T, pool *pgxpool.Pool) (n int, actor string) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT count(*), coalesce((SELECT actor FROM outbox_audit ORDER BY audit_id DESC LIMIT 1), '') FROM outbox_audit`).Scan(&n, &actor)
	if err != nil {
		t.Fatal(err)
	}
	return n, actor
}

func failedAt(t *testing.T, pool *pgxpool.Pool, id string) bool {
	t.Helper()
	var failed bool
	if err := pool.QueryRow(context.Background(), `SELECT failed_at IS NOT NULL FROM outbox_event WHERE event_id = $1`, id).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	return failed
}

func TestEventsListsAState(t *testing.T) {
	t.Parallel()
	env, _ := outboxDB(t)
	r := run(t, env, "events", "--state", "ready", "--aggregate-id", "7", "--json")
	var page struct {
		Events []struct {
			EventID string `json:"event_id"`
		}
	}
	if r.code != ExitOK || json.Unmarshal([]byte(r.out), &page) != nil || len(page.Events) != 1 || page.Events[0].EventID != cliBehind {
		t.Fatalf("events: %+v", r)
	}
	r = run(t, env, "events", "--state", "failed", "--limit", "1")
	if r.code != ExitOK || !strings.Contains(r.out, cliFailed) || strings.Contains(r.out, "\x1b") {
		t.Fatalf("events table: %+v", r)
	}
	r = run(t, env, "events", "--state", "pending", "--limit", "1")
	if r.code != ExitOK || !strings.Contains(r.out, "next: ") {
		t.Fatalf("events pagination: %+v", r)
	}
	for _, args := range [][]string{{"events"}, {"events", "--state", "stuck"}, {"events", "--state", "ready", "--sort", "nope"}, {"events", "--state", "ready", "--id-prefix", "x'"}} {
		if r := run(t, env, args...); r.code != ExitUsage {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

func TestActionRefusesWithoutTerminalOrYes(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	r := run(t, env, "retry", "--id", cliFailed)
	if r.code != ExitUsage || !strings.Contains(r.err, "not a terminal") || !strings.Contains(r.err, "--yes") {
		t.Fatalf("no terminal: %+v", r)
	}
	if n, _ := auditCount(t, pool); n != 0 || !failedAt(t, pool, cliFailed) {
		t.Fatal("refused action changed something")
	}
	r = run(t, env, "retry", "--id", cliFailed, "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.out, "retry: 1 event ("+cliFailed+")") {
		t.Fatalf("dry run: %+v", r)
	}
	if n, _ := auditCount(t, pool); n != 0 || !failedAt(t, pool, cliFailed) {
		t.Fatal("dry run changed something")
	}
}

func TestActionReadOnlyRefusal(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	for _, args := range [][]string{
		{"retry", "--id", cliFailed, "--yes", "--read-only"},
		{"park", "--id", cliReady, "--reason", "x", "--yes"}, // OUTBOXTOP_READ_ONLY below
	} {
		e := map[string]string{"DATABASE_URL": env["DATABASE_URL"], "OUTBOXTOP_READ_ONLY": "true"}
		r := run(t, e, args...)
		if r.code != ExitUsage || !strings.Contains(r.err, "read-only") {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	if n, _ := auditCount(t, pool); n != 0 || !failedAt(t, pool, cliFailed) || failedAt(t, pool, cliReady) {
		t.Fatal("read-only action changed something")
	}
}

func TestActionsWithYesChangeTheTargetAndAudit(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	env["SSH_CONNECTION"] = "198.51.100.4 50000 10.0.0.2 22"
	if r := run(t, env, "park", "--id", cliReady, "--yes"); r.code != ExitUsage || !strings.Contains(r.err, "--reason") {
		t.Fatalf("park without reason: %+v", r)
	}
	if r := run(t, env, "retry", "--yes"); r.code != ExitUsage || !strings.Contains(r.err, "--all") {
		t.Fatalf("retry without target: %+v", r)
	}
	r := run(t, env, "retry", "--aggregate-id", "7", "--from", "failed", "--yes", "--reason", "topic fixed")
	if r.code != ExitOK || !strings.Contains(r.out, "retried 1 of 1 event") {
		t.Fatalf("retry: %+v", r)
	}
	if failedAt(t, pool, cliFailed) {
		t.Fatal("not retried")
	}
	if n, actor := auditCount(t, pool); n != 1 || !strings.HasSuffix(actor, " via ssh from 198.51.100.4") {
		t.Fatalf("audit %d %q", n, actor)
	}
	r = run(t, env, "park", "--id", cliReady, "--id", cliPublish, "--reason", "poison", "--actor", "oncall-ann", "--yes")
	if r.code != ExitOK || !strings.Contains(r.out, "parked 1 of 1 event") || !failedAt(t, pool, cliReady) || failedAt(t, pool, cliPublish) {
		t.Fatalf("park: %+v", r)
	}
	if n, actor := auditCount(t, pool); n != 2 || actor != "oncall-ann" {
		t.Fatalf("audit %d %q", n, actor)
	}
	r = run(t, env, "archive", "--yes", "--batch-size", "1")
	if r.code != ExitOK || !strings.Contains(r.out, "archived 1 of 1 event") {
		t.Fatalf("archive: %+v", r)
	}
	r = run(t, env, "replay", "--id", cliPublish, "--new-id", "--yes")
	if r.code != ExitOK || !strings.Contains(r.out, "replayed 1 of 1 event") || !strings.Contains(r.out, "new ids: ") {
		t.Fatalf("replay: %+v", r)
	}
	if r := run(t, env, "reset-lease", "--all", "--yes"); r.code != ExitOK || !strings.Contains(r.out, "nothing to reset-lease") {
		t.Fatalf("reset-lease with nothing leased: %+v", r)
	}
	if r := run(t, env, "skip", "--aggregate-id", "7", "--reason", "x", "--yes"); r.code != ExitOK || !strings.Contains(r.out, "nothing to skip") {
		t.Fatalf("skip with nothing blocked: %+v", r)
	}
}

func TestConfirmDefaultsToNo(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, "\n": false, "": false, "n\n": false, "yep\n": false} {
		var out strings.Builder
		if got := confirm(strings.NewReader(in), &out, "retry 3 events?"); got != want || out.String() != "retry 3 events? [y/N] " {
			t.Errorf("%q: %v %q", in, got, out.String())
		}
	}
}
