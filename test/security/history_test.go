package security

import (
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// archivedRow sums up one archive row: what a replay would send again.
func (b *bundle) archivedRow(t *testing.T, id string) string {
	t.Helper()
	var s string
	if err := b.admin.QueryRow(b.ctx, `SELECT a::text FROM outbox_event_archive a WHERE event_id = $1`, id).Scan(&s); err != nil {
		t.Fatalf("archive row %s: %v", id, err)
	}
	return s
}

// TestArchiveNeverReplacesArchivedHistory: the producer chooses event ids, so
// it can insert a new event under an archived event's id. Archiving that event
// (the operator's archive, the housekeeping's, a skip) must leave the archived
// row as it is and the new row in the outbox, and say so: the action's result
// and its audit row count it as refused.
func TestArchiveNeverReplacesArchivedHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	producer, _ := b.login(t, "producer")
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	ids := b.insert(t, "order", "o-1", 2)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET published_at = now() - interval '2 hours', attempts = 1,
		kafka_topic = 'outbox.order', kafka_partition = 0, kafka_offset = 7 WHERE event_id = ANY($1::uuid[])`, ids); err != nil {
		t.Fatal(err)
	}
	if res, err := in.Do(b.ctx, inspect.Request{Action: inspect.Archive, IDs: ids, Actor: "alice"}); err != nil || res.Rows != 2 {
		t.Fatalf("archiving the originals: %+v, %v", res, err)
	}
	before := []string{b.archivedRow(t, ids[0]), b.archivedRow(t, ids[1])}

	// The producer reuses both ids: one is published (by the relay, here the
	// owner), the other waits, scheduled, so that skip applies to it.
	for k, id := range ids {
		if _, err := producer.Exec(b.ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at)
			VALUES ($1, 'order', $2, 'Forged', '{"amount": 1000000}', now() + interval '1 hour')`, id, "f-"+string(rune('a'+k))); err != nil {
			t.Fatalf("the producer's insert under an archived id: %v", err)
		}
	}
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET published_at = now() - interval '2 hours', attempts = 1,
		kafka_topic = 'outbox.order', kafka_partition = 1, kafka_offset = 99 WHERE event_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}

	res, err := in.Do(b.ctx, inspect.Request{Action: inspect.Archive, Filter: inspect.Filter{OlderThan: time.Hour}, Actor: "alice"})
	if err != nil {
		t.Fatalf("archive: %v", err)
	}
	if res.Rows != 0 || res.Refused != 1 {
		t.Errorf("archive over an archived id: %d moved, %d refused; want 0 and 1", res.Rows, res.Refused)
	}
	var rows, refused int
	if err := b.admin.QueryRow(b.ctx, `SELECT rows, refused FROM outbox_audit WHERE audit_id = $1`, res.AuditID).Scan(&rows, &refused); err != nil ||
		rows != 0 || refused != 1 {
		t.Errorf("the archive's audit row: rows %d refused %d (%v); want 0 and 1", rows, refused, err)
	}
	// The function itself, called as the probe did.
	var n, nRefused int
	if err := b.as.QueryRow(b.ctx, `SELECT out_rows, out_refused FROM outboxtop_archive('alice', '', ARRAY[$1::uuid], NULL, NULL)`, ids[0]).
		Scan(&n, &nRefused); err != nil || n != 0 || nRefused != 1 {
		t.Errorf("outboxtop_archive over an archived id: %d moved, %d refused (%v); want 0 and 1", n, nRefused, err)
	}
	// The housekeeping passes it over.
	if err := b.admin.QueryRow(b.ctx, `SELECT outboxtop_archive_published(interval '0', 100)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("housekeeping over an archived id: %d moved (%v), want 0", n, err)
	}
	// Skip refuses to archive the scheduled one.
	res, err = in.Do(b.ctx, inspect.Request{Action: inspect.Skip, IDs: ids[1:], Reason: "bad data", Actor: "alice"})
	if err != nil || res.Rows != 0 {
		t.Errorf("skip over an archived id: %+v, %v; want nothing moved", res, err)
	} else if err := b.admin.QueryRow(b.ctx, `SELECT refused FROM outbox_audit WHERE audit_id = $1`, res.AuditID).Scan(&refused); err != nil || refused != 1 {
		t.Errorf("the skip's audit row: refused %d (%v), want 1", refused, err)
	}

	for k, id := range ids {
		if after := b.archivedRow(t, id); after != before[k] {
			t.Errorf("archived history of %s replaced:\nbefore %s\nafter  %s", id, before[k], after)
		}
	}
	if n := b.count(t, "event_type = 'Forged'"); n != 2 {
		t.Errorf("%d of the producer's rows left in the outbox, want both", n)
	}
}
