package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Past what a snapshot reads one by one (10,100 scheduled retries: past the
// scan and past the count of the range that holds them), the oldest pending
// age is of the rows read, and older ones may lie past them: status marks it
// "≥" in the text, says so in the JSON and the performance data, and a
// --max-oldest it stays under is not known to hold.
func TestStatusMarksAnOldestPendingAgeThatIsABound(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts)
		SELECT gen_random_uuid(), 'account', 'a' || g, 'AccountOpened', '{}', now() - interval '2 minutes', now() + g * interval '1 second', 1
		FROM generate_series(1, 10100) g`); err != nil {
		t.Fatal(err)
	}
	args := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1", "--max-oldest", "2h"}
	r := run(t, env, args...)
	if !strings.Contains(r.out, "\noldest pending ≥") || !strings.Contains(firstLine(r.out), " oldest_pending_lower_bound=1;;;0;1") ||
		!strings.Contains(firstLine(r.out), "oldest pending ≥") {
		t.Errorf("status does not mark the oldest pending age a lower bound:\n%s", r.out)
	}
	r = run(t, env, append(args, "--json")...)
	var got struct {
		Bound inspect.Bound `json:"oldest_pending_age_bound"`
		Check struct {
			Unsure []string `json:"unsure"`
		} `json:"check"`
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || got.Bound != inspect.LowerBound ||
		len(got.Check.Unsure) == 0 || !strings.Contains(strings.Join(got.Check.Unsure, ";"), "oldest pending ≥") {
		t.Errorf("status --json: %v, oldest_pending_age_bound %q, unsure %q", err, got.Bound, got.Check.Unsure)
	}
}
