package inspect_test

import (
	"testing"
	"time"
)

// TestSnapshotReadsInfiniteTimes: rows stored with ±infinity before the table
// refused them are counted, and the ages and times read through them stay
// within what Go holds, on both sides of the scan's cap.
func TestSnapshotReadsInfiniteTimes(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	b.exec(t, `ALTER TABLE outbox_event DROP CONSTRAINT IF EXISTS outbox_event_times_finite`,
		`UPDATE outbox_event SET available_at = 'infinity' WHERE event_id = '`+idSched+`'`,
		`UPDATE outbox_event SET created_at = '-infinity', available_at = '-infinity' WHERE event_id = '`+idReady1+`'`,
		`UPDATE outbox_event SET published_at = '-infinity', created_at = '-infinity' WHERE event_id = '`+idPub2h+`'`)
	for _, caps := range []bool{false, true} {
		if caps {
			// Past the scan the oldest publishable age comes from
			// sql/oldest_publishable.sql, which subtracts a ready row's times
			// as they are: the ready row gets finite ones.
			b.exec(t, `UPDATE outbox_event SET created_at = now() - interval '10 minutes', available_at = now() - interval '10 minutes'
				WHERE event_id = '`+idReady1+`'`)
			setCaps(b, inspectDefaultSmall())
		}
		s, err := b.in.Snapshot(b.ctx)
		if err != nil {
			t.Fatalf("small caps %v: %v", caps, err)
		}
		if !caps && (s.Counts.Ready != 6 || s.Counts.Scheduled != 1 || s.OldestPendingAge.Duration() < 100*365*24*time.Hour) {
			t.Errorf("small caps %v: counts %+v, oldest pending %v", caps, s.Counts, s.OldestPendingAge)
		}
	}
}
