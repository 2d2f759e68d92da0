package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// status reports the relays seen and, with --warn-no-relay / --crit-no-relay,
// checks that one is live: none ever seen crosses the bound, a fresh heartbeat
// is OK, a heartbeat gone for longer than the bound crosses it.
func TestStatusRelays(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	quiet := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1"}

	r := run(t, env, append(quiet, "--warn-no-relay", "1m")...)
	if r.code != ExitWarning || !strings.HasPrefix(firstLine(r.out), "OUTBOXTOP WARNING - no relay ever seen") ||
		!strings.Contains(r.out, "\nrelays: none seen") {
		t.Fatalf("no relay ever: exit %d\n%s", r.code, r.out)
	}
	if r := run(t, env, quiet...); r.code != ExitOK {
		t.Fatalf("the relay check is off by default: exit %d\n%s", r.code, r.out)
	}

	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms, version) VALUES
		('host-a:1', 'r', 'running', now() - interval '1 hour', now(), 5000, 'v9'),
		('host-b:2', 'r', 'stopped', now() - interval '1 hour', now() - interval '20 minutes', 5000, 'v8')`); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, append(quiet, "--warn-no-relay", "1m", "--crit-no-relay", "5m")...)
	if r.code != ExitOK || !strings.Contains(r.out, "relays: 1 live of 2 seen") || !strings.Contains(r.out, "host-a:1") ||
		!strings.Contains(firstLine(r.out), " relays=1;;;0 no_relay=0.000s;60;300;0") {
		t.Fatalf("a live relay: exit %d\n%s", r.code, r.out)
	}

	if _, err := pool.Exec(ctx, `UPDATE outbox_relay SET seen_at = now() - interval '10 minutes' WHERE holder = 'host-a:1'`); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, append(quiet, "--json", "--warn-no-relay", "1m", "--crit-no-relay", "5m")...)
	if r.code != ExitCritical {
		t.Fatalf("every relay gone 10 minutes: exit %d, want CRITICAL\n%s", r.code, r.out)
	}
	var s struct {
		Relays []struct {
			Holder, State string
			SeenAge       float64 `json:"seen_age_seconds"`
		}
		Check struct{ Crossed []string }
	}
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Relays) != 2 || s.Relays[0].Holder != "host-a:1" || s.Relays[0].State != "gone" || s.Relays[0].SeenAge < 590 ||
		len(s.Check.Crossed) != 1 || !strings.HasPrefix(s.Check.Crossed[0], "no relay seen for 10m") {
		t.Fatalf("json relays %+v crossed %q", s.Relays, s.Check.Crossed)
	}
}
