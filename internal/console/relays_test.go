package console

import (
	"context"
	"strings"
	"testing"
)

// A relay's holder is text from the database: escape sequences in it never
// reach the terminal, and a relay that stopped beating is flagged gone. Its last
// beat is an hour before the console's clock (not the database's now(), which is
// up to a second later: "59m59s ago" one run in two).
func TestOverviewRelaysSanitizedAndFlagged(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	if _, err := b.pool.Exec(context.Background(), `WITH gone AS (DELETE FROM outbox_relay)
		INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms)
		VALUES (e'evil\x1b[31m:1', 'r', 'running', $1::timestamptz - interval '2 hours', $1::timestamptz - interval '1 hour', 5000)`, b.clock); err != nil {
		t.Fatal(err)
	}
	b.size(120, 40)
	b.run(b.m.startLoad())
	screen := b.screen()
	if strings.Contains(screen, "\x1b[31m") {
		t.Fatalf("a holder's escape sequence reached the screen:\n%q", screen)
	}
	// The seeded leases' holders have no heartbeat now: live by their leases.
	for _, want := range []string{"2 live · \x1b[1m1 gone", "relay-a:4242                 leasing     1 lease",
		"!evil^[[31m:1                 gone        1h00m ago"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the Overview lacks %q:\n%s", want, screen)
		}
	}
}
