package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Past the newest 1,000 failures the groups by error and type count the
// newest ones only: status said "failed by error:" and a count of the newest
// as if it were the total (397 where 120,000 failed so). The text says which
// failures the counts are of, and the JSON's failed_groups_cover says it for
// every group (by error, by type, by_event_type's failed).
func TestStatusSaysWhatTheFailedGroupsCount(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t) // one failed event, MESSAGE_TOO_LARGE
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'account', 'a' || g, 'AccountOpened', '{}', 5,
		       now() - (CASE WHEN g <= 1100 THEN 3600 ELSE 0 END + g) * interval '1 second',
		       CASE WHEN g <= 1100 THEN 'timeout' ELSE 'poison' END
		FROM generate_series(1, 1200) g`); err != nil {
		t.Fatal(err)
	}
	args := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1"}
	r := run(t, env, args...)
	if !strings.Contains(r.out, "\nfailed by error, in the newest 1001 of 1201 failed only (each count is of those):\n     900  timeout\n     100  poison\n       1  MESSAGE_TOO_LARGE") {
		t.Errorf("status's failed groups are not said to be of the newest 1001:\n%s", r.out)
	}
	r = run(t, env, append(args, "--json")...)
	var got struct {
		Cover inspect.GroupsCover `json:"failed_groups_cover"`
		Of    int64               `json:"failed_groups_of"`
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil ||
		got.Cover != (inspect.GroupsCover{Failures: 1001, Failed: 1201}) || got.Of != 1001 {
		t.Errorf("status --json: %v, failed_groups_cover %+v, failed_groups_of %d", err, got.Cover, got.Of)
	}

	// Every failure grouped: the groups are totals, and say so.
	if _, err := pool.Exec(ctx, `DELETE FROM outbox_event WHERE last_error = 'timeout'`); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, append(args, "--json")...)
	got.Cover = inspect.GroupsCover{}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || got.Cover != (inspect.GroupsCover{Failures: 101, All: true, Failed: 101}) {
		t.Errorf("status --json, 101 failed: %v, failed_groups_cover %+v", err, got.Cover)
	}
	if r := run(t, env, args...); !strings.Contains(r.out, "\nfailed by error:\n     100  poison\n") {
		t.Errorf("status, 101 failed:\n%s", r.out)
	}
}
