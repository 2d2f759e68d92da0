package security

import (
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestRelayGrantsReadTheBacklog: the relay's /metrics count with
// inspect.Inspector.Backlog, which reads only what the relay grants allow
// (outbox_event), and gives the counts and bounds a console's Snapshot does. A
// full Snapshot reads more (the archive, the inbox, the heartbeats), which the
// relay may not.
func TestRelayGrantsReadTheBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t, "relay")
	b.insert(t, "order", "o-1", 3)
	b.insert(t, "order", "o-2", 2)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), last_error = 'boom'
		WHERE seq = (SELECT min(seq) FROM outbox_event WHERE aggregate_id = 'o-2')`); err != nil {
		t.Fatal(err)
	}
	as, err := inspect.New(b.as, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	got, err := as.Backlog(b.ctx)
	if err != nil {
		t.Fatalf("Backlog under the relay grants: %v", err)
	}
	admin, err := inspect.New(b.admin, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	s, err := admin.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := s.Counts
	want.Published, want.Archived, want.Skipped = inspect.Count{}, inspect.Count{}, 0
	if got.Counts != want || got.Blocked.Count != s.Blocked.Count || got.Blocked.Bound != s.Blocked.Bound {
		t.Errorf("Backlog under the relay grants: %+v, blocked %d; the snapshot's: %+v, blocked %d",
			got.Counts, got.Blocked.Count, want, s.Blocked.Count)
	}
	if got.Counts.Ready != 4 || got.Counts.Failed != 1 || got.Counts.Waiting != 1 || got.Blocked.Count != 1 || !got.Exact() {
		t.Errorf("Backlog %+v, blocked %d: want 4 ready (1 waiting), 1 failed, 1 blocked, exact", got.Counts, got.Blocked.Count)
	}
	_, err = as.Snapshot(b.ctx)
	assertDenied(t, "a full Snapshot under the relay grants", err)
}
