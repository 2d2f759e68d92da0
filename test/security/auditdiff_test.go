package security

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAuditShowsTheDatabasesDiff: an operator calling outboxtop_correct with
// a filter shaped like a diff (claiming amount went 10 → 11) while the
// payload goes to 12. audit, text and --json, shows the diff the function
// computed as the diff, and the caller's filter only under a label saying it
// is as given; before, it showed the forged one as "filter" and the real
// change only in trace.
func TestAuditShowsTheDatabasesDiff(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	id := b.insert(t, "order", "o-1", 1)[0]
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET payload = '{"amount": 10}', failed_at = now(), last_error = 'bad amount'
		WHERE event_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	const forged = `{"diff": [{"new": 11, "old": 10, "path": ["amount"]}]}`
	if _, err := b.as.Exec(b.ctx, `SELECT * FROM outboxtop_correct('mallory', 'typo', $1, '{"amount": 12}', $2)`, id, forged); err != nil {
		t.Fatalf("correct under the operator grants: %v", err)
	}

	code, out := b.cliAs(t, "audit", "--json")
	var recs []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil || len(recs) != 1 {
		t.Fatalf("audit --json: exit %d, %v\n%s", code, err, out)
	}
	rec := recs[0]
	var diff []struct {
		Path []string `json:"path"`
		Old  int      `json:"old"`
		New  int      `json:"new"`
	}
	if err := json.Unmarshal(rec["diff"], &diff); err != nil || len(diff) != 1 || diff[0].Path[0] != "amount" || diff[0].Old != 10 || diff[0].New != 12 {
		t.Errorf("audit --json diff %s (%v), want the database's amount 10 → 12", rec["diff"], err)
	}
	if got := string(rec["caller_filter"]); compactJSON(t, got) != compactJSON(t, forged) {
		t.Errorf("audit --json caller_filter %s, want the caller's %s as given", got, forged)
	}
	if _, ok := rec["filter"]; ok {
		t.Errorf("audit --json has a bare \"filter\", which reads as the database's: %s", out)
	}

	code, out = b.cliAs(t, "audit")
	for _, want := range []string{"diff (computed by the database): amount: 10 → 12", `filter (as given): {"diff": [{"new": 11`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("audit lacks %q: exit %d\n%s", want, code, out)
		}
	}
	if strings.Contains(out, "diff (computed by the database): amount: 10 → 11") {
		t.Errorf("audit shows the forged change as the database's:\n%s", out)
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
