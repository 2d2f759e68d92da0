package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEventsAggregateShowsTheTimeline(t *testing.T) {
	t.Parallel()
	env, _ := outboxDB(t)
	r := run(t, env, "events", "--aggregate", "order/7")
	if r.code != ExitOK {
		t.Fatalf("events --aggregate: %+v", r)
	}
	for _, want := range []string{"AGGREGATE order/7 · 2 events listed", "BLOCKED by seq 1 " + cliFailed + " (failed ",
		": 1 waiting behind it, the oldest for 50m", "last error: MESSAGE_TOO_LARGE^[[31m", ">>        1  " + cliFailed + "  FAILED",
		"          2  " + cliBehind + "  ready*    "} {
		if !strings.Contains(r.out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "\x1b") {
		t.Errorf("an escape sequence reached the terminal:\n%q", r.out)
	}
	r = run(t, env, "events", "--aggregate", "order/7", "--json")
	var tl struct {
		Blocker struct {
			EventID string `json:"event_id"`
		} `json:"blocker"`
		Waiting int `json:"waiting"`
		Events  []struct {
			EventID string `json:"event_id"`
		} `json:"events"`
	}
	if r.code != ExitOK || json.Unmarshal([]byte(r.out), &tl) != nil || tl.Blocker.EventID != cliFailed || tl.Waiting != 1 || len(tl.Events) != 2 {
		t.Fatalf("events --aggregate --json: %+v", r)
	}
	if r = run(t, env, "skip", "--id", cliFailed, "--reason", "poison", "--yes"); r.code != ExitOK {
		t.Fatalf("skip: %+v", r)
	}
	if r = run(t, env, "events", "--aggregate", "order/7"); r.code != ExitOK || !strings.Contains(r.out, "not blocked") ||
		!strings.Contains(r.out, cliFailed+"  skipped") {
		t.Fatalf("after skipping the blocker: %+v", r)
	}
	if r = run(t, env, "events", "--aggregate", "order/9"); r.code != ExitOK || !strings.Contains(r.out, "not blocked") {
		t.Fatalf("a published aggregate: %+v", r)
	}
	if r = run(t, env, "events", "--aggregate", "order"); r.code != ExitUsage {
		t.Fatalf("no id: %+v", r)
	}
	if r = run(t, env, "events", "--aggregate", "order/none"); r.code != ExitFailure || !strings.Contains(r.err, "has no events") {
		t.Fatalf("unknown aggregate: %+v", r)
	}
}

func TestAuditListsActionsWithFilters(t *testing.T) {
	t.Parallel()
	env, _ := outboxDB(t)
	if r := run(t, env, "retry", "--id", cliFailed, "--actor", "alice", "--yes"); r.code != ExitOK {
		t.Fatalf("retry: %+v", r)
	}
	if r := run(t, env, "park", "--id", cliReady, "--actor", "bob", "--reason", "bad\x1b[31m payload", "--yes"); r.code != ExitOK {
		t.Fatalf("park: %+v", r)
	}
	r := run(t, env, "audit")
	if r.code != ExitOK || strings.Index(r.out, "park") > strings.Index(r.out, "retry") || !strings.Contains(r.out, "bad^[[31m payload · "+cliReady) {
		t.Fatalf("audit: %+v", r)
	}
	r = run(t, env, "audit", "--actor", "ALI", "--json")
	var recs []struct {
		Action   string   `json:"action"`
		EventIDs []string `json:"event_ids"`
	}
	if r.code != ExitOK || json.Unmarshal([]byte(r.out), &recs) != nil || len(recs) != 1 || recs[0].Action != "retry" || recs[0].EventIDs[0] != cliFailed {
		t.Fatalf("audit --actor: %+v", r)
	}
	if r = run(t, env, "audit", "--action", "park", "--older-than", "1h"); r.code != ExitOK || strings.Contains(r.out, "park ") {
		t.Fatalf("audit --older-than: %+v", r)
	}
	if r = run(t, env, "audit", "--limit", "1"); r.code != ExitOK || !strings.Contains(r.out, "next: --before ") {
		t.Fatalf("audit --limit 1: %+v", r)
	}
	if r = run(t, env, "audit", "--event", "nope"); r.code != ExitUsage {
		t.Fatalf("audit --event nope: %+v", r)
	}
	// The ids trace and the console print: the start of an id (or a
	// UUIDv7's end, as --id takes them); one that names several events says
	// which.
	if r = run(t, env, "audit", "--event", cliReady[:30], "--json"); r.code != ExitOK || json.Unmarshal([]byte(r.out), &recs) != nil ||
		len(recs) != 1 || recs[0].Action != "park" {
		t.Fatalf("audit --event %s: %+v", cliReady[:30], r)
	}
	if r = run(t, env, "audit", "--event", "00000001"); r.code != ExitUsage || !strings.Contains(r.err, "--event event id \"00000001\" is ambiguous") ||
		!strings.Contains(r.err, cliReady) {
		t.Fatalf("audit --event of several events: %+v", r)
	}
}
