package cmd

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A fleet is a target every database command understands: --fleet FILE
// --outbox NAME works on that outbox, its database and schema taken from the
// file; the commands that show a whole fleet still take --fleet alone, and the
// others say which outboxes there are.
func TestFleetOutboxIsATargetOfEveryCommand(t *testing.T) {
	t.Parallel()
	path, env := fleetFile(t)

	// The same outbox through the fleet as through its DSN.
	r := run(t, env, "events", "--fleet", path, "--outbox", "billing", "--state", "failed", "--json")
	if r.code != ExitOK || strings.Count(r.out, `"event_id"`) != 40 {
		t.Fatalf("events --outbox billing: exit %d, %d events, stderr %s", r.code, strings.Count(r.out, `"event_id"`), r.err)
	}
	ids := regexp.MustCompile(`"event_id":\s*"[^"]+"`)
	direct := run(t, env, "events", "--dsn", env["BILLING_DSN"], "--state", "failed", "--json")
	if !slices.Equal(ids.FindAllString(direct.out, -1), ids.FindAllString(r.out, -1)) {
		t.Errorf("events through the fleet and through --dsn differ:\n%s\n%s", r.out, direct.out)
	}
	r = run(t, env, "events", "--fleet", path, "--outbox", "orders", "--state", "failed", "--json")
	if r.code != ExitOK || strings.Contains(r.out, `"event_id"`) {
		t.Errorf("events --outbox orders: exit %d, %s %s", r.code, r.out, r.err)
	}

	// status: --fleet alone is the fleet's check, with --outbox the outbox's own
	// report; variables name the target as well as flags.
	r = run(t, env, "status", "--fleet", path, "--outbox", "billing")
	if r.code != 1 || !strings.Contains(r.out, "failed") || strings.Contains(r.out, "orders") {
		t.Errorf("status --outbox billing: exit %d, %s %s", r.code, r.out, r.err)
	}
	withEnv := map[string]string{"OUTBOXTOP_FLEET": path, "OUTBOXTOP_OUTBOX": "billing"}
	for k, v := range env {
		withEnv[k] = v
	}
	verdict := func(out string) string { v, _, _ := strings.Cut(out, "|"); return v }
	if r2 := run(t, withEnv, "status"); r2.code != r.code || verdict(r2.out) != verdict(r.out) {
		t.Errorf("status from OUTBOXTOP_FLEET and OUTBOXTOP_OUTBOX: exit %d, %s", r2.code, r2.out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "--fleet", path}, "name it with --outbox (orders, billing, search)"},
		{[]string{"retry", "--fleet", path, "--id", "0123456"}, "name it with --outbox"},
		{[]string{"migrate", "--fleet", path}, "name it with --outbox"},
		{[]string{"events", "--outbox", "billing"}, "give the file with --fleet"},
		{[]string{"events", "--fleet", path, "--outbox", "shipping"}, `--outbox "shipping" is not an outbox of`},
		{[]string{"events", "--fleet", path, "--outbox", "billing", "--dsn", env["BILLING_DSN"]}, "--dsn and --outbox"},
		{[]string{"events", "--fleet", path, "--outbox", "billing", "--schema", "other"}, "--schema and --outbox"},
	} {
		r := run(t, env, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) || strings.Count(r.err, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want one line of bad usage saying %q", c.args, r.code, r.err, c.want)
		}
	}
}
