package cmd

import (
	"context"
	"strings"
	"testing"
)

// A request inspect refuses as invalid (inspect.ErrInvalidRequest, matched with
// errors.Is, not by its text) is a usage error: one line, exit 2, nothing changed.
func TestActionInvalidRequestIsAUsageError(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"retry", "--id", "d0000000-0000-0000-0000-00000000000x", "--yes"}, "is not an event id"},
		{[]string{"retry", "--id", cliFailed, "--from", "published", "--yes"}, "applies to"},
		{[]string{"park", "--id", cliReady, "--from", "failed", "--reason", "x", "--yes"}, "applies to"},
	} {
		r := run(t, env, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.says) || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
			t.Errorf("%v: %+v; want exit %d, one line saying %q", c.args, r, ExitUsage, c.says)
		}
	}
	if n, _ := auditCount(t, pool); n != 0 || !failedAt(t, pool, cliFailed) || failedAt(t, pool, cliReady) {
		t.Fatal("a refused action changed something")
	}
}

// The actions take the short ids trace takes, through the same resolver: the
// start of an id, or from 6 hex digits its end. A short id that names no event
// or several is refused on one line, exit 2, with the candidates; nothing changes.
func TestActionAcceptsTheShortIdsTraceAccepts(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"retry", "--id", "d", "--yes"}, []string{"is ambiguous", cliFailed, cliBehind}},
		{[]string{"park", "--id", "000000000001", "--reason", "x", "--yes"}, []string{"is ambiguous", cliReady, cliFailed}},
		{[]string{"skip", "--id", "ff", "--reason", "x", "--yes"}, []string{"no event id starts with \"ff\""}},
		{[]string{"retry", "--id", "1; DROP TABLE x", "--yes"}, []string{"is not an event id"}},
	} {
		r := run(t, env, c.args...)
		ok := r.code == ExitUsage && strings.Count(strings.TrimSpace(r.err), "\n") == 0
		for _, s := range c.says {
			ok = ok && strings.Contains(r.err, s)
		}
		if !ok {
			t.Errorf("%v: %+v; want exit %d, one line saying %q", c.args, r, ExitUsage, c.says)
		}
	}
	if n, _ := auditCount(t, pool); n != 0 {
		t.Fatal("a refused action changed something")
	}

	// What the console and trace show: the start of the id, or its end.
	if r := run(t, env, "retry", "--id", "d0", "--dry-run"); r.code != ExitOK || !strings.Contains(r.out, "retry: 1 event ("+cliFailed+")") {
		t.Fatalf("retry --id d0 --dry-run: %+v", r)
	}
	if r := run(t, env, "park", "--id", "a0000000", "--reason", "x", "--yes"); r.code != ExitOK || !failedAt(t, pool, cliReady) {
		t.Fatalf("park --id a0000000: %+v", r)
	}
	if r := run(t, env, "skip", "--id", "d0000000", "--reason", "poison", "--yes"); r.code != ExitOK || !strings.Contains(r.out, "skipped 1 of 1 event") {
		t.Fatalf("skip --id d0000000: %+v", r)
	}
	var archived bool
	if err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM outbox_event_archive WHERE event_id = $1 AND published_at IS NULL)`, cliFailed).Scan(&archived); err != nil || !archived {
		t.Fatalf("the skipped event is not in the archive, unpublished: %v", err)
	}
}

// The help names what each action does to an event: skip archives the blocking
// event without publishing it (outboxtop_skip), so its aggregate moves on;
// park is the one that marks events failed.
func TestHelpSaysWhatSkipAndParkDo(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "help")
	lines := map[string]string{}
	for _, l := range strings.Split(r.out, "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			lines[f[0]] = l
		}
	}
	if s := lines["skip"]; !strings.Contains(s, "archive") || !strings.Contains(s, "unpublished") || strings.Contains(s, "park") {
		t.Errorf("help on skip: %q", s)
	}
	if p := lines["park"]; !strings.Contains(p, "failed on purpose") {
		t.Errorf("help on park: %q", p)
	}
}
