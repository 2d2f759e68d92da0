package security

import (
	"strconv"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestAuditRowsCannotBeExtended: archive's later batches add to the audit row
// its first batch wrote, and only the session that wrote it may: another
// session, even of the same login naming the same actor, cannot add its archive
// to alice's earlier row (which would keep the row's old time).
func TestAuditRowsCannotBeExtended(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	ids := b.insert(t, "order", "o-1", 3)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET published_at = now() - interval '2 hours', attempts = 1
		WHERE event_id = ANY($1::uuid[])`, ids); err != nil {
		t.Fatal(err)
	}
	first, err := b.as.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	second, err := b.as.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	const archive = `SELECT out_audit_id, out_rows FROM outboxtop_archive('alice', '', ARRAY[$1::uuid], NULL, $2)`
	var audit int64
	var n int
	if err := first.QueryRow(b.ctx, archive, ids[0], nil).Scan(&audit, &n); err != nil || n != 1 {
		t.Fatalf("alice's archive: %d rows, %v", n, err)
	}
	var again int64
	err = second.QueryRow(b.ctx, archive, ids[1], audit).Scan(&again, &n)
	assertRefused(t, "another session adds to alice's audit row", "22023", err)
	// The session that wrote it may (the CLI's batches).
	if err := first.QueryRow(b.ctx, archive, ids[1], audit).Scan(&again, &n); err != nil || again != audit || n != 1 {
		t.Fatalf("the same session's next batch: audit %d (want %d), %d rows, %v", again, audit, n, err)
	}
	var rows int
	if err := b.admin.QueryRow(b.ctx, `SELECT rows FROM outbox_audit WHERE audit_id = $1`, audit).Scan(&rows); err != nil || rows != 2 {
		t.Errorf("alice's audit row counts %d (%v), want 2", rows, err)
	}
	// The inspector's archive (several batches) still writes one row.
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	b.insert(t, "order", "o-2", 3)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET published_at = now() - interval '2 hours', attempts = 1 WHERE published_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	res, err := in.Do(b.ctx, inspect.Request{Action: inspect.Archive, Filter: inspect.Filter{OlderThan: time.Hour}, BatchSize: 1, Actor: "bob"})
	if err != nil || res.Rows != 4 {
		t.Fatalf("archive in batches of one: %+v, %v; want 4 rows", res, err)
	}
	var bobs int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_audit WHERE actor = 'bob'`).Scan(&bobs); err != nil || bobs != 1 {
		t.Errorf("%d audit rows for bob's archive (%v), want 1", bobs, err)
	}
}

// TestActionsNeedAVisibleActor: an actor that is nothing once white space,
// control, format and zero-width characters are taken out names no one; every
// action and the pause audit refuse it.
func TestActionsNeedAVisibleActor(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	id := b.insert(t, "order", "o-1", 1)[0]
	for _, actor := range []string{"", " ", "\t", "\u200b", " \u200b\u00a0\u3000", "\u2066\u2069", "\ufeff", "\u00ad", "\U000e0041", "\u3164"} {
		for _, sql := range []string{
			`SELECT out_audit_id FROM outboxtop_retry($1, NULL, ARRAY[$2::uuid], NULL, '{}')`,
			`SELECT out_audit_id FROM outboxtop_archive($1, NULL, ARRAY[$2::uuid], NULL, NULL)`,
		} {
			_, err := b.as.Exec(b.ctx, sql, actor, id)
			assertRefused(t, "an action by "+strconv.QuoteToASCII(actor), "22023", err)
		}
		_, err := b.as.Exec(b.ctx, `SELECT outboxtop_audit_relay($1, 'pause')`, actor)
		assertRefused(t, "a pause by "+strconv.QuoteToASCII(actor), "22023", err)
	}
	var n int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_audit`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d audit rows written by invisible actors (%v)", n, err)
	}
	if _, err := b.as.Exec(b.ctx, `SELECT outboxtop_audit_relay($1, 'pause')`, " zoë\u200b "); err != nil {
		t.Errorf("a visible actor with a zero-width space in it: %v", err)
	}
}
