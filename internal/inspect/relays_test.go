package inspect_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// The snapshot's relays join the heartbeat rows with the live leases naming a
// holder: a fresh beat is live in its own state, a stale one is gone, a clean
// exit is stopped, and a holder with live leases but no heartbeat (an older
// relay) is seen as leasing. Expired leases name no one.
func TestSnapshotRelays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.pool.Exec(b.ctx, `
		INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms, in_flight, version, ordering, batch_size) VALUES
			('host-a:1', 'r', 'running', now() - interval '1 hour', now() - interval '2 seconds', 5000, 2, 'v1', 'aggregate', 1000),
			('host-b:2', 'r', 'paused', now() - interval '1 hour', now() - interval '1 second', 5000, 0, 'v1', 'aggregate', 1000),
			('host-c:3', 'r', 'running', now() - interval '1 hour', now() - interval '16 seconds', 5000, 0, 'v1', 'none', 500),
			('host-d:4', 'r', 'stopped', now() - interval '1 hour', now() - interval '5 minutes', 5000, 0, 'v0', 'aggregate', 1000);
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, attempts, lease_token, lease_until, lease_holder)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'E', '{}', 1, gen_random_uuid(),
			CASE WHEN g <= 5 THEN now() + interval '1 minute' ELSE now() - interval '1 minute' END,
			CASE WHEN g <= 2 THEN 'host-a:1' WHEN g <= 5 THEN 'old-relay:9' ELSE 'host-c:3' END
		FROM generate_series(1, 8) g`); err != nil {
		t.Fatal(err)
	}
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.Relays {
		got = append(got, r.Holder+" "+r.State+" leases="+itoa(r.Leases)+" in_flight="+itoa(r.InFlight))
	}
	want := []string{
		"host-a:1 running leases=2 in_flight=2",
		"host-b:2 paused leases=0 in_flight=0",
		"old-relay:9 leasing leases=3 in_flight=0",
		"host-c:3 gone leases=0 in_flight=0",    // 16 s > 3 × 5 s; its leases expired
		"host-d:4 stopped leases=0 in_flight=0", // after the gone one: seen longer ago
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("relays\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	if s.Relays[3].State != inspect.RelayGone || s.Relays[2].State != inspect.RelayLeasing {
		t.Errorf("states %q %q", s.Relays[3].State, s.Relays[2].State)
	}
	if n := s.RelaysLive(); n != 3 {
		t.Errorf("%d live relays, want 3", n)
	}
	if age, seen := s.NoRelayFor(); age != 0 || !seen {
		t.Errorf("NoRelayFor %v %v with relays live, want 0 true", age, seen)
	}
	if a := s.Relays[0]; a.SeenAge.Duration() < time.Second || a.SeenAge.Duration() > time.Minute || a.Version != "v1" ||
		a.Interval.Duration() != 5*time.Second || a.StartedAt == nil {
		t.Errorf("host-a:1 %+v", a)
	}
	// The JSON carries them (status --json).
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"relays":[{"holder":"host-a:1","state":"running","seen_age_seconds":`) {
		t.Errorf("snapshot JSON has no relays: %.400s", js)
	}
}

// With every relay gone or stopped, NoRelayFor is the freshest beat's age; with
// none ever seen it says so.
func TestNoRelayFor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, seen := s.NoRelayFor(); seen || s.Relays == nil || len(s.Relays) != 0 {
		t.Errorf("no heartbeat, no lease: seen %v, relays %#v; want false and an empty list", seen, s.Relays)
	}
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms) VALUES
		('a:1', 'r', 'running', now() - interval '1 day', now() - interval '10 minutes', 5000),
		('b:2', 'r', 'stopped', now() - interval '1 day', now() - interval '3 minutes', 5000)`); err != nil {
		t.Fatal(err)
	}
	if s, err = b.in.Snapshot(b.ctx); err != nil {
		t.Fatal(err)
	}
	age, seen := s.NoRelayFor()
	if !seen || age.Duration() < 3*time.Minute || age.Duration() > 4*time.Minute || s.RelaysLive() != 0 {
		t.Errorf("NoRelayFor %v %v, live %d; want ~3m true 0", age, seen, s.RelaysLive())
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
