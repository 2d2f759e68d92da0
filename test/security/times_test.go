package security

import (
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// TestNonFiniteTimesAreRefused: the producer may set available_at; 'infinity'
// made status fail (infinite timestamps cannot be subtracted) and the listings
// fail to scan, '-infinity' the published listing, trace and timeline once
// published. The table refuses both (check_violation), and a consumer's inbox
// row refuses them in consumed_at.
func TestNonFiniteTimesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "producer")
	for _, at := range []string{"infinity", "-infinity"} {
		_, err := b.as.Exec(b.ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at)
			VALUES (gen_random_uuid(), 'order', 'o-1', 'E', '{}', $1::timestamptz)`, at)
		assertRefused(t, "the producer's event available at "+at, "23514", err)
	}
	consumer, name := b.login(t, "consumer")
	_, err := consumer.Exec(b.ctx, `INSERT INTO consumed_event (consumer_name, event_id, consumed_at) VALUES ($1, gen_random_uuid(), '-infinity')`, name)
	assertRefused(t, "an inbox row consumed at -infinity", "23514", err)
	if n := b.count(t, "true"); n != 0 {
		t.Errorf("%d events written", n)
	}
}

// nonFinite stores rows with ±infinity as an earlier schema let them in:
// without the constraints, which then come back NOT VALID, as migration 016
// leaves them on such a table. It returns a console's inspector.
func nonFinite(t *testing.T, inbox bool) (*bundle, *inspect.Inspector, []string) {
	t.Helper()
	b := setup(t, "console")
	ids := b.insert(t, "order", "o-1", 3)
	for _, stmt := range []string{
		`ALTER TABLE outbox_event DROP CONSTRAINT outbox_event_times_finite`,
		`ALTER TABLE consumed_event DROP CONSTRAINT consumed_event_consumed_at_finite`,
		`UPDATE outbox_event SET available_at = 'infinity' WHERE event_id = '{0}'`,
		`UPDATE outbox_event SET available_at = '-infinity', published_at = now(), attempts = 1,
			kafka_topic = 'outbox.order', kafka_partition = 0, kafka_offset = 1 WHERE event_id = '{1}'`,
		`UPDATE outbox_event SET available_at = '-infinity', created_at = '-infinity', published_at = '-infinity',
			attempts = 1 WHERE event_id = '{2}'`,
		`INSERT INTO consumed_event (consumer_name, event_id, consumed_at) VALUES ('billing', '{1}', '-infinity'),
			('billing', '{0}', ` + map[bool]string{true: `'infinity'`, false: `now()`}[inbox] + `)`,
		`ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_times_finite CHECK (isfinite(created_at) AND isfinite(available_at)
			AND isfinite(lease_until) AND isfinite(published_at) AND isfinite(failed_at)) NOT VALID`,
		`ALTER TABLE consumed_event ADD CONSTRAINT consumed_event_consumed_at_finite CHECK (isfinite(consumed_at)) NOT VALID`,
	} {
		if _, err := b.admin.Exec(b.ctx, strings.NewReplacer("{0}", ids[0], "{1}", ids[1], "{2}", ids[2]).Replace(stmt)); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	return b, in, ids
}

// TestReadersSurviveNonFiniteTimes: rows stored with ±infinity before the
// tables refused them (an upgraded database keeps them) are listed, traced and
// shown in their aggregate's timeline, the times shown as the latest or
// earliest instant there is.
func TestReadersSurviveNonFiniteTimes(t *testing.T) {
	t.Parallel()
	b, in, ids := nonFinite(t, true)
	for _, st := range []wire.State{wire.Scheduled, wire.Published, wire.Ready, wire.Pending} {
		for _, sort := range []inspect.Sort{"", inspect.SortAvailableAt, inspect.SortCreatedAt, inspect.SortPublishedAt} {
			p, err := in.List(b.ctx, inspect.ListOptions{State: st, Sort: sort})
			if err != nil {
				t.Errorf("List %s by %q: %v", st, sort, err)
				continue
			}
			if st == wire.Scheduled && (len(p.Events) != 1 || p.Events[0].AvailableAt.Year() != 9999) {
				t.Errorf("the event available at infinity: %+v, want it scheduled, available in 9999", p.Events)
			}
		}
	}
	for _, id := range ids {
		if _, err := in.Trace(b.ctx, id); err != nil {
			t.Errorf("Trace %s: %v", id, err)
		}
	}
	if _, err := in.Timeline(b.ctx, "order", "o-1", 0); err != nil {
		t.Errorf("Timeline: %v", err)
	}
}

// TestSnapshotSurvivesNonFiniteTimes: the snapshot and status count such rows.
func TestSnapshotSurvivesNonFiniteTimes(t *testing.T) {
	t.Parallel()
	t.Run("outbox", func(t *testing.T) { t.Parallel(); snapshotSurvives(t, false) })
	t.Run("inbox", func(t *testing.T) {
		t.Parallel()
		snapshotSurvives(t, true)
	})
}

func snapshotSurvives(t *testing.T, inbox bool) {
	b, in, _ := nonFinite(t, inbox)
	if _, err := in.Snapshot(b.ctx); err != nil {
		t.Errorf("Snapshot: %v", err)
	}
	code, out := b.status(t, "--warn-failed", "-1", "--warn-blocked", "-1")
	if code == 3 || strings.Contains(out, "infinite") || strings.Contains(out, "Infinity") {
		t.Errorf("status over the stored rows: exit %d\n%s", code, out)
	}
	code, out = b.status(t, "--json")
	if code == 3 || strings.Contains(out, "infinite") || strings.Contains(out, "Infinity") {
		t.Errorf("status --json over the stored rows: exit %d\n%s", code, out)
	}
}
