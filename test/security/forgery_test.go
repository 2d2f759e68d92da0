package security

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/inbox"
	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/outbox"
)

// roles are every role `outboxtop grants` prints.
var roles = []string{"relay", "console", "operator", "producer", "consumer"}

// forgeries are the attacks found against the earlier grants, plus the
// doors around the action functions. {pending} is a pending event's id, {archived} an
// archived one's. Every role must be refused each by the database itself.
var forgeries = []struct{ what, sql string }{
	{"rewrite a payload keeping its id and seq", `WITH d AS (DELETE FROM outbox_event WHERE event_id = '{pending}' RETURNING *)
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, seq)
		OVERRIDING SYSTEM VALUE
		SELECT event_id, aggregate_type, aggregate_id, event_type, '{"amount":1000000}', created_at, seq FROM d`},
	{"rewrite a payload in place", `UPDATE outbox_event SET payload = '{"amount":1000000}' WHERE event_id = '{pending}'`},
	{"rewrite an archived payload (to replay it)", `UPDATE outbox_event_archive SET payload = '{"amount":1000000}' WHERE event_id = '{archived}'`},
	{"insert into the archive", `INSERT INTO outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type, payload,
		created_at, available_at, attempts, seq) VALUES (gen_random_uuid(), 'order', 'x', 'e', '{}', now(), now(), 0, 1)`},
	{"delete from the archive", `DELETE FROM outbox_event_archive`},
	{"insert a published event", `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
		published_at, kafka_topic, kafka_partition, kafka_offset) VALUES (gen_random_uuid(), 'order', 'x', 'e', '{}', now(), 't', 0, 7)`},
	{"insert a failed event", `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at)
		VALUES (gen_random_uuid(), 'order', 'x', 'e', '{}', now())`},
	{"insert an event leased for a century (blocks its aggregate)", `INSERT INTO outbox_event (event_id, aggregate_type,
		aggregate_id, event_type, payload, lease_until) VALUES (gen_random_uuid(), 'order', 'x', 'e', '{}', now() + interval '100 years')`},
	{"insert an event naming its lease holder", `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id,
		event_type, payload, lease_holder) VALUES (gen_random_uuid(), 'order', 'x', 'e', '{}', 'relay-a:1')`},
	{"insert an event with a chosen seq", `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, seq)
		OVERRIDING SYSTEM VALUE VALUES (gen_random_uuid(), 'order', 'x', 'e', '{}', -5)`},
	{"insert an event with a chosen created_at", `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
		VALUES (gen_random_uuid(), 'order', 'x', 'e', '{}', '2020-01-01')`},
	{"delete a pending event", `DELETE FROM outbox_event WHERE event_id = '{pending}'`},
	{"forge an audit row with its id and time", `INSERT INTO outbox_audit (audit_id, at, actor, action, rows, reason)
		OVERRIDING SYSTEM VALUE VALUES (-1, '2020-01-01', 'alice', 'skip', 1, 'forged')`},
	{"insert an audit row", `INSERT INTO outbox_audit (actor, action, rows) VALUES ('alice', 'skip', 1)`},
	{"rewrite the audit trail", `UPDATE outbox_audit SET actor = 'someone else'`},
	{"delete the audit trail", `DELETE FROM outbox_audit`},
	{"truncate the audit trail", `TRUNCATE outbox_audit`},
	{"write an audit row through the internal helper", `SELECT outboxtop_audit_write('alice', 'skip', '{}', NULL, 1, 'forged')`},
	{"lock events through the actions' internal helper (rows held from the relays)",
		`SELECT outboxtop_lock_events(ARRAY['{pending}']::uuid[])`},
	{"archive without an audit row (housekeeping function)", `SELECT outboxtop_archive_published(interval '0', 100)`},
	{"delete archived events (housekeeping function)", `SELECT outboxtop_delete_archived(interval '0', 100)`},
	{"prune another consumer's inbox", `SELECT outboxtop_inbox_prune('billing', now(), 100)`},
	{"loosen an action's bounds through its internal helper", `SELECT outboxtop_hold_bound('retry', 'alice', 1)`},
	{"forge a relay heartbeat", `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms)
		VALUES ('forged:1', 'someone', 'running', now(), now() + interval '100 years', 5000)`},
	{"keep a dead relay alive", `UPDATE outbox_relay SET seen_at = now() + interval '100 years'`},
	{"rename a relay's state", `UPDATE outbox_relay SET state = 'stopped'`},
	{"erase the relays' heartbeats", `DELETE FROM outbox_relay`},
	{"change the version table", `DELETE FROM outboxtop_schema_version`},
	{"forge a corrected copy (an event in another's place, linked to it)", `INSERT INTO outbox_event (event_id, aggregate_type,
		aggregate_id, event_type, payload, correction_of) VALUES (gen_random_uuid(), 'order', 'o-1', 'e', '{"amount":1000000}', '{pending}')`},
	{"forge a corrected copy in the original's seq", `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
		payload, seq, correction_of) OVERRIDING SYSTEM VALUE SELECT gen_random_uuid(), aggregate_type, aggregate_id, event_type,
		'{"amount":1000000}', seq, event_id FROM outbox_event WHERE event_id = '{pending}'`},
	{"link an archived event to a forged correction", `UPDATE outbox_event_archive SET correction_of = gen_random_uuid() WHERE event_id = '{archived}'`},
	{"forge an attempt with a chosen time", `INSERT INTO outbox_attempt (event_id, at, attempt, class, outcome)
		VALUES ('{pending}', '2020-01-01', 1, 'retriable', 'schedule')`},
	{"forge an attempt with a chosen id", `INSERT INTO outbox_attempt (event_id, attempt_id, attempt, class, outcome)
		OVERRIDING SYSTEM VALUE VALUES ('{pending}', -1, 1, 'retriable', 'schedule')`},
	{"rewrite an attempt", `UPDATE outbox_attempt SET error = 'nothing happened'`},
	{"erase the attempt history", `DELETE FROM outbox_attempt`},
	{"truncate the attempt history", `TRUNCATE outbox_attempt`},
	{"prune the attempt history through its trigger function", `SELECT outboxtop_attempt_prune()`},
	{"create a table", `CREATE TABLE public.forged (x int)`},
	{"replace an action function", `CREATE OR REPLACE FUNCTION public.outboxtop_audit_relay(p_actor text, p_action text)
		RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'`},
}

// TestForgeriesRefusedForEveryRole attempts each forgery under exactly the grants
// `outboxtop grants --role R` prints, for every R, and requires PostgreSQL's
// permission error (42501) and nothing changed.
func TestForgeriesRefusedForEveryRole(t *testing.T) {
	t.Parallel()
	for _, role := range roles {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			b := setup(t, role)
			pending := b.insert(t, "order", "o-1", 1)[0]
			archived := b.insert(t, "order", "o-2", 1)[0]
			if _, err := b.admin.Exec(b.ctx, `WITH d AS (DELETE FROM outbox_event WHERE event_id = $1 RETURNING *)
				INSERT INTO outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type, payload, created_at,
					available_at, attempts, seq, published_at)
				SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, 1, seq, now() FROM d`,
				archived); err != nil {
				t.Fatal(err)
			}
			if _, err := b.admin.Exec(b.ctx, `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms)
				VALUES ('relay-a:1', 'outboxtop', 'running', now(), now(), 5000)`); err != nil {
				t.Fatal(err)
			}
			before := b.fingerprint(t)
			for _, f := range forgeries {
				_, err := b.as.Exec(b.ctx, strings.NewReplacer("{pending}", pending, "{archived}", archived).Replace(f.sql))
				assertDenied(t, role+" may not "+f.what, err)
			}
			if after := b.fingerprint(t); after != before {
				t.Errorf("the tables changed under %s:\nbefore %s\nafter  %s", role, before, after)
			}
		})
	}
}

// TestOnlyTheRelayNamesAHolder: lease_holder says which relay holds a lease (and,
// afterwards, which one published the event); only the relay role may write it,
// at claim time. Every other role is refused by the database.
func TestOnlyTheRelayNamesAHolder(t *testing.T) {
	t.Parallel()
	for _, role := range roles {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			b := setup(t, role)
			id := b.insert(t, "order", "o-1", 1)[0]
			_, err := b.as.Exec(b.ctx, `UPDATE outbox_event SET lease_holder = 'forged:1' WHERE event_id = $1`, id)
			if role == "relay" {
				if err != nil {
					t.Fatalf("the relay may not write lease_holder: its claims would fail: %v", err)
				}
				return
			}
			assertDenied(t, role+" may not name a lease holder", err)
			if n := b.count(t, "lease_holder IS NOT NULL"); n != 0 {
				t.Errorf("%d rows name a holder after %s's refused update", n, role)
			}
		})
	}
}

// TestOnlyTheRelayBeats: a heartbeat (outbox_relay) is written only through
// outboxtop_relay_beat, which only the relay role may execute; the function takes
// the time and the database role from the session, and a relay role cannot take
// over a holder name another role's relay beats under.
func TestOnlyTheRelayBeats(t *testing.T) {
	t.Parallel()
	const beat = `SELECT outboxtop_relay_beat($1, 'running', true, 5000, 0, 'v', 'aggregate', 1000)`
	for _, role := range roles {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			b := setup(t, role)
			var ok bool
			err := b.as.QueryRow(b.ctx, beat, "mine:1").Scan(&ok)
			if role != "relay" {
				assertDenied(t, role+" may not beat as a relay", err)
				var n int
				if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_relay`).Scan(&n); err != nil || n != 0 {
					t.Errorf("%d heartbeat rows after %s's refused beat (%v)", n, role, err)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("the relay's beat: %v, %v", ok, err)
			}
			var dbUser string
			var fresh bool
			if err := b.admin.QueryRow(b.ctx, `SELECT db_user, seen_at = now() OR seen_at > now() - interval '1 minute'
				FROM outbox_relay WHERE holder = 'mine:1'`).Scan(&dbUser, &fresh); err != nil || dbUser != b.role || !fresh {
				t.Errorf("the relay's row: db_user %q fresh %v (%v); want %q, now", dbUser, fresh, err, b.role)
			}
			// Another role's relay beats as "theirs:1": this relay role cannot
			// overwrite it, e.g. to hide that it is gone.
			if _, err := b.admin.Exec(b.ctx, `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms)
				VALUES ('theirs:1', 'another_role', 'running', now() - interval '1 hour', now() - interval '1 hour', 5000)`); err != nil {
				t.Fatal(err)
			}
			if err := b.as.QueryRow(b.ctx, beat, "theirs:1").Scan(&ok); err != nil || ok {
				t.Errorf("beat under another role's holder: %v, %v; want false", ok, err)
			}
			var old bool
			if err := b.admin.QueryRow(b.ctx, `SELECT seen_at < now() - interval '30 minutes' AND db_user = 'another_role'
				FROM outbox_relay WHERE holder = 'theirs:1'`).Scan(&old); err != nil || !old {
				t.Errorf("another role's heartbeat was overwritten (%v)", err)
			}
			// Nor may it read the table: a relay needs no SELECT on it.
			_, err = b.as.Exec(b.ctx, `SELECT * FROM outbox_relay`)
			assertDenied(t, "relay may not read outbox_relay", err)
		})
	}
}

// fingerprint sums up every row of the outbox, the archive and the audit trail.
func (b *bundle) fingerprint(t *testing.T) string {
	t.Helper()
	var s string
	if err := b.admin.QueryRow(b.ctx, `SELECT
		(SELECT coalesce(md5(string_agg(e::text, '|' ORDER BY seq)), '') FROM outbox_event e) || ' ' ||
		(SELECT coalesce(md5(string_agg(a::text, '|' ORDER BY seq)), '') FROM outbox_event_archive a) || ' ' ||
		(SELECT count(*) FROM outbox_audit) || ' ' ||
		(SELECT coalesce(md5(string_agg(r::text, '|' ORDER BY holder)), '') FROM outbox_relay r)`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestProducerGrants: the application writes events (one at a time and in bulk)
// with only the producer grants; the columns it may not set are refused above.
func TestProducerGrants(t *testing.T) {
	t.Parallel()
	b := setup(t, "producer")
	if _, err := outbox.Add(b.ctx, b.as, outbox.Event{AggregateType: "order", AggregateID: "o-1", EventType: "order.created",
		Payload: map[string]int{"n": 1}, Topic: "orders", Headers: map[string]string{"trace": "t1"},
		AvailableAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatalf("Add under the producer grants: %v", err)
	}
	var evs []outbox.Event
	for k := 0; k < 20; k++ {
		evs = append(evs, outbox.Event{AggregateType: "order", AggregateID: "o-2", EventType: "order.paid", Payload: map[string]int{"n": k}})
	}
	if _, err := outbox.AddMany(b.ctx, b.as, evs); err != nil {
		t.Fatalf("AddMany under the producer grants: %v", err)
	}
	if n := b.count(t, "true"); n != 21 {
		t.Errorf("%d events written, want 21", n)
	}
}

// TestConsumerSeesOnlyItsOwnInbox: row-level security keys consumed_event on the
// role's name, so a consumer cannot read, delete or write another's inbox rows.
func TestConsumerSeesOnlyItsOwnInbox(t *testing.T) {
	t.Parallel()
	b := setup(t, "consumer")
	theirs := uuid.New()
	if _, err := b.admin.Exec(b.ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', $1)`, theirs); err != nil {
		t.Fatal(err)
	}
	mine := uuid.New()
	applied, err := inbox.HandleID(b.ctx, b.as, b.role, mine, func(context.Context, pgx.Tx) error { return nil })
	if err != nil || !applied {
		t.Fatalf("HandleID as its own consumer: applied %v, %v", applied, err)
	}
	if applied, err := inbox.HandleID(b.ctx, b.as, b.role, mine, func(context.Context, pgx.Tx) error { return nil }); err != nil || applied {
		t.Fatalf("the second delivery: applied %v, %v; want skipped", applied, err)
	}
	var seen int
	if err := b.as.QueryRow(b.ctx, `SELECT count(*) FROM consumed_event`).Scan(&seen); err != nil || seen != 1 {
		t.Errorf("the consumer sees %d inbox rows (%v), want only its own 1", seen, err)
	}
	// No DELETE at all (pruning goes through outboxtop_inbox_prune), and the
	// function prunes only the role's own inbox.
	_, err = b.as.Exec(b.ctx, `DELETE FROM consumed_event WHERE consumer_name = 'billing'`)
	assertDenied(t, "consumer may not delete inbox rows directly", err)
	_, err = b.as.Exec(b.ctx, `SELECT outboxtop_inbox_prune('billing', now() + interval '1 day', 1000)`)
	assertDenied(t, "consumer may not prune another consumer's inbox", err)
	if n, err := inbox.Prune(b.ctx, b.as, b.role, 0); err != nil || n != 1 {
		t.Errorf("the consumer prunes its own inbox: %d, %v; want 1", n, err)
	}
	_, err = b.as.Exec(b.ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', gen_random_uuid())`)
	assertDenied(t, "consumer may not write another consumer's inbox", err)
	_, err = inbox.HandleID(b.ctx, b.as, "billing", uuid.New(), func(context.Context, pgx.Tx) error { return nil })
	assertDenied(t, "consumer may not handle as another consumer", err)
	var left int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM consumed_event WHERE consumer_name = 'billing'`).Scan(&left); err != nil || left != 1 {
		t.Errorf("billing's inbox has %d rows (%v), want 1", left, err)
	}
}

// TestEveryActionWritesExactlyOneAuditRow: under the operator grants each action,
// and pause and resume, add exactly one audit row whose id, time and database
// user come from the database, not the caller.
func TestEveryActionWritesExactlyOneAuditRow(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	ids := b.insert(t, "order", "o-1", 3)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), last_error = 'boom' WHERE event_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET published_at = now() - interval '2 hours' WHERE event_id = ANY($1::uuid[])`, ids[1:]); err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	audits := func() int {
		var n int
		if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_audit`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := time.Now()
	for _, req := range []inspect.Request{
		{Action: inspect.Retry, IDs: ids[:1]},
		{Action: inspect.Park, IDs: ids[:1], Reason: "hold"},
		{Action: inspect.Retry, IDs: ids[:1], Reason: "nothing left to retry: still one row"}, // parked is failed: retried again
		{Action: inspect.Archive, Filter: inspect.Filter{OlderThan: time.Hour}, BatchSize: 1}, // batches of one, one audit row
		{Action: inspect.Replay, IDs: ids[1:2]},
		{Action: inspect.ResetLease, IDs: ids[2:3]}, // not leased: touches nothing, audited anyway
	} {
		req.Actor = "carol"
		n := audits()
		res, err := in.Do(b.ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", req.Action, err)
		}
		if got := audits(); got != n+1 {
			t.Errorf("%s wrote %d audit rows, want 1", req.Action, got-n)
		}
		if req.Action == inspect.Archive && res.Rows != 2 {
			t.Errorf("archive in batches of one moved %d events, want 2", res.Rows)
		}
		var rows int64
		var dbUser, actor string
		var at time.Time
		if err := b.admin.QueryRow(b.ctx, `SELECT rows, db_user, actor, at FROM outbox_audit WHERE audit_id = $1`, res.AuditID).
			Scan(&rows, &dbUser, &actor, &at); err != nil {
			t.Fatalf("%s: its audit row %d: %v", req.Action, res.AuditID, err)
		}
		if rows != res.Rows || dbUser != b.role || actor != "carol" || at.Before(start.Add(-time.Minute)) {
			t.Errorf("%s: audit row rows=%d db_user=%q actor=%q at=%v; want rows=%d db_user=%q actor=carol, now",
				req.Action, rows, dbUser, actor, at, res.Rows, b.role)
		}
	}
	for _, pause := range []bool{true, false} {
		n := audits()
		if _, err := in.AuditRelay(b.ctx, "SHA256:abc alice@laptop", pause); err != nil {
			t.Fatalf("AuditRelay(%v): %v", pause, err)
		}
		if got := audits(); got != n+1 {
			t.Errorf("pause=%v wrote %d audit rows, want 1", pause, got-n)
		}
	}
	// A correction: one audit row naming the original and the copy, with the
	// diff the database computed, whatever the caller passed as its filter.
	failed := b.insert(t, "order", "o-9", 1)[0]
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), last_error = 'bad amount' WHERE event_id = $1`, failed); err != nil {
		t.Fatal(err)
	}
	n := audits()
	res, err := in.Correct(b.ctx, inspect.Correction{ID: failed, Payload: []byte(`{"amount": 5}`), Reason: "typo", Actor: "carol"})
	if err != nil {
		t.Fatalf("correct under the operator grants: %v", err)
	}
	var ids2 []string
	var diff, dbUser string
	if err := b.admin.QueryRow(b.ctx, `SELECT event_ids::text[], diff::text, db_user FROM outbox_audit WHERE audit_id = $1`, res.AuditID).
		Scan(&ids2, &diff, &dbUser); err != nil {
		t.Fatal(err)
	}
	if got := audits(); got != n+1 || len(ids2) != 2 || ids2[0] != failed || ids2[1] != res.EventIDs[0] || dbUser != b.role || !strings.Contains(diff, `"path"`) {
		t.Errorf("correct wrote %d audit rows: ids %v diff %s db_user %q; want 1 naming %s and %v, a diff, %s",
			got-n, ids2, diff, dbUser, failed, res.EventIDs, b.role)
	}
	// The function checks the state itself: a pending event is not corrected.
	pending := b.insert(t, "order", "o-10", 1)[0]
	if _, err := b.as.Exec(b.ctx, `SELECT outboxtop_correct('carol', 'x', $1, '{"amount": 6}', '{}')`, pending); err == nil ||
		!strings.Contains(err.Error(), "is not failed") {
		t.Errorf("correcting a pending event through the function: %v, want a refusal", err)
	}
	var actions string
	if err := b.admin.QueryRow(b.ctx, `SELECT string_agg(action, ' ' ORDER BY audit_id) FROM outbox_audit`).Scan(&actions); err != nil {
		t.Fatal(err)
	}
	if want := "retry park retry archive replay reset-lease pause resume correct"; actions != want {
		t.Errorf("audit actions %q, want %q", actions, want)
	}
	// An archive cannot add its rows to another action's audit row.
	var id int64
	if err := b.admin.QueryRow(b.ctx, `SELECT min(audit_id) FROM outbox_audit`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	_, err = b.as.Exec(b.ctx, `SELECT outboxtop_archive('carol', NULL, '{}', '{}', $1)`, id)
	if err == nil || !strings.Contains(err.Error(), "is not this archive's") {
		t.Errorf("archive into the retry's audit row: %v", err)
	}
	// The functions check state themselves: parking a published event through the
	// function directly changes nothing.
	var parked int
	if err := b.as.QueryRow(b.ctx, `SELECT out_rows FROM outboxtop_park('carol', 'x', $1::uuid[], ARRAY['published'], '{}')`,
		ids[2:]).Scan(&parked); err == nil {
		t.Errorf("park of published events through the function: %d rows, want a refusal", parked)
	}
}

// TestActionFunctionsArePinned: every SECURITY DEFINER function in the schema
// pins its search_path (pg_temp last), belongs to the role that migrated, and is
// not executable by PUBLIC; only the operator's printed grants give EXECUTE, and
// only on the actions and the pause and terminate audits.
func TestActionFunctionsArePinned(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	rows, err := b.admin.Query(b.ctx, `SELECT p.proname, coalesce(array_to_string(p.proconfig, ','), ''),
			pg_get_userbyid(p.proowner) = current_user,
			has_function_privilege('public', p.oid, 'EXECUTE'),
			has_function_privilege($1, p.oid, 'EXECUTE')
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.prosecdef ORDER BY 1`, b.role)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// outboxtop_relay_beat is the relay's (TestOnlyTheRelayBeats).
	operatorMay := map[string]bool{"outboxtop_retry": true, "outboxtop_reset_lease": true, "outboxtop_park": true,
		"outboxtop_skip": true, "outboxtop_archive": true, "outboxtop_replay": true, "outboxtop_audit_relay": true,
		"outboxtop_audit_terminate": true, "outboxtop_correct": true}
	n := 0
	for rows.Next() {
		var name, config string
		var owned, public, operator bool
		if err := rows.Scan(&name, &config, &owned, &public, &operator); err != nil {
			t.Fatal(err)
		}
		n++
		if !strings.HasPrefix(config, "search_path=pg_catalog,") || !strings.HasSuffix(config, "pg_temp") {
			t.Errorf("%s: search_path not pinned with pg_temp last: %q", name, config)
		}
		if !owned || public {
			t.Errorf("%s: owned by the migrating role %v, executable by PUBLIC %v", name, owned, public)
		}
		if operator != operatorMay[name] {
			t.Errorf("%s: the operator may execute it: %v, want %v", name, operator, operatorMay[name])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 16 {
		t.Errorf("%d SECURITY DEFINER functions, want 16 (the six actions and the correction, the audit writer, the pause and terminate audits, two housekeeping, the relay heartbeat, the relays' insert count, the inbox prune, the history's prune)", n)
	}
}

// An operator set up with an earlier outboxtop's grants (table-level INSERT,
// UPDATE, DELETE and audit INSERT) loses them when the printed grants are applied
// again: the output begins by revoking everything on outboxtop's tables.
func TestPrintedGrantsReplaceEarlierOnes(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	g := pgx.Identifier{b.role}.Sanitize()
	if _, err := b.admin.Exec(b.ctx, `GRANT INSERT, UPDATE, DELETE ON outbox_event, outbox_event_archive TO `+g+`;
		GRANT INSERT ON outbox_audit TO `+g); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := cmd.Run(b.ctx, []string{"grants", "--role", "operator", "--to", b.role}, cmd.IO{Out: &out, Err: &errb,
		Getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("grants: %s", errb.String())
	}
	if _, err := b.admin.Exec(b.ctx, out.String()); err != nil {
		t.Fatal(err)
	}
	for _, f := range forgeries {
		_, err := b.as.Exec(b.ctx, strings.NewReplacer("{pending}", uuid.NewString(), "{archived}", uuid.NewString()).Replace(f.sql))
		assertDenied(t, "after re-applying the grants, operator may not "+f.what, err)
	}
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Do(b.ctx, inspect.Request{Action: inspect.Retry, Filter: inspect.Filter{All: true}, Actor: "erin"}); err != nil {
		t.Errorf("the operator's actions after re-applying the grants: %v", err)
	}
}

// TestConsoleReadsTheRelays: the console grants read the heartbeats; a console
// role set up before migration 010 and never upgraded (no SELECT on
// outbox_relay) still gets its snapshot, with the relays seen by their leases
// and the reason the heartbeats are missing.
func TestConsoleReadsTheRelays(t *testing.T) {
	t.Parallel()
	b := setup(t, "console")
	id := b.insert(t, "order", "o-1", 1)[0]
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET lease_token = gen_random_uuid(), lease_until = now() + interval '1 minute',
			lease_holder = 'relay-a:1', attempts = 1 WHERE event_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Exec(b.ctx, `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms)
		VALUES ('relay-a:1', 'outboxtop_relay', 'running', now(), now(), 5000)`); err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	s, err := in.Snapshot(b.ctx)
	if err != nil {
		t.Fatalf("Snapshot under the console grants: %v", err)
	}
	if len(s.Relays) != 1 || s.Relays[0].State != "running" || s.Relays[0].Leases != 1 || s.RelaysError != "" {
		t.Fatalf("relays %+v (%q), want relay-a:1 running with its lease", s.Relays, s.RelaysError)
	}
	if _, err := b.admin.Exec(b.ctx, "REVOKE SELECT ON outbox_relay FROM "+pgx.Identifier{b.role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	s, err = in.Snapshot(b.ctx)
	if err != nil {
		t.Fatalf("Snapshot without SELECT on outbox_relay: %v", err)
	}
	if len(s.Relays) != 1 || s.Relays[0].State != inspect.RelayLeasing || s.RelaysError == "" || s.Counts.Leased != 1 {
		t.Fatalf("without the heartbeat grant: relays %+v (%q), leased %d; want relay-a:1 leasing and the reason", s.Relays, s.RelaysError, s.Counts.Leased)
	}
}
