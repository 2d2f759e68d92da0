package inspect_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// The timeline is oldest first, an action after a try of the same instant, and
// each entry says on one line what it was.
func TestTimelineOrdersAndSaysEachEntry(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	code, backoff := int16(6), int64(1500)
	d := inspect.EventDetail{
		AttemptHistory: []inspect.Attempt{
			{At: at, Attempt: 1, Holder: "relay-a:1", Class: "retriable", Outcome: "schedule", KafkaCode: &code, BackoffMS: &backoff,
				Error: "kafka: NOT_LEADER_FOR_PARTITION: this server is not the leader"},
			{At: at.Add(time.Minute), Attempt: 2, Holder: "relay-a:1", Class: "permanent", Outcome: "fail", Error: "too large"},
			{At: at.Add(2 * time.Minute), Attempt: 1, Class: "unreachable", Outcome: "release"},
		},
		Audit: []inspect.AuditEntry{
			{ID: 7, At: at.Add(time.Minute), Actor: "alice", Action: "correct", Rows: 1, Reason: "typo",
				Diff: []inspect.Change{{Path: []string{"customer", "id"}, Old: json.RawMessage(`41`), New: json.RawMessage(`42`)},
					{Path: []string{"note"}, New: json.RawMessage(`"x"`)}, {Path: []string{"blob"}, Old: json.RawMessage(`"…"`)}}},
		},
	}
	want := []string{
		"try 1 by relay-a:1: retriable, kafka code 6 (NOT_LEADER_FOR_PARTITION) → again in 1.5s: kafka: NOT_LEADER_FOR_PARTITIO…",
		"try 2 by relay-a:1: permanent → failed: too large",
		`action #7 correct by alice: typo; customer.id: 41 → 42; note: added "x"; blob: removed`,
		"try 1: unreachable → ready again, not counted",
	}
	tl := d.Timeline()
	if len(tl) != len(want) {
		t.Fatalf("%d entries, want %d", len(tl), len(want))
	}
	for k, h := range tl {
		if got := h.What(30); got != want[k] {
			t.Errorf("entry %d: %q, want %q", k, got, want[k])
		}
	}
	if got := tl[0].What(0); got != "try 1 by relay-a:1: retriable, kafka code 6 (NOT_LEADER_FOR_PARTITION) → again in 1.5s: kafka: NOT_LEADER_FOR_PARTITION: this server is not the leader" {
		t.Errorf("uncut: %q", got)
	}
}
