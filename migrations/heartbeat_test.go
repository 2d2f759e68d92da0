package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// TestUpgradeTo010 takes a database back to version 9 (no outbox_relay) with a
// relay role and a console role holding the grants `outboxtop grants` printed
// before 010, and a producer role. Migrating lets the relay role beat and the
// console role read the heartbeats, and gives the producer neither; the beat
// then works under the relay role and stamps the row with the database's time
// and the session's role.
func TestUpgradeTo010(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.DB(t))
	suffix := randomSuffix()
	names := map[string]string{}
	for _, role := range []string{"relay", "console", "producer"} {
		names[role] = "outboxtop_" + role + "_" + suffix
		id := pgx.Identifier{names[role]}.Sanitize()
		if _, err := conn.Exec(ctx, "CREATE ROLE "+id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx := context.Background()
			_, _ = conn.Exec(ctx, "DROP OWNED BY "+id)
			_, _ = conn.Exec(ctx, "DROP ROLE IF EXISTS "+id)
		})
	}
	relay, console, producer := pgx.Identifier{names["relay"]}.Sanitize(), pgx.Identifier{names["console"]}.Sanitize(),
		pgx.Identifier{names["producer"]}.Sanitize()
	for _, stmt := range []string{
		`DROP FUNCTION outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)`,
		`DROP TABLE outbox_relay`,
		`UPDATE outboxtop_schema_version SET version = 9`,
		`GRANT USAGE ON SCHEMA public TO ` + relay + `, ` + console + `, ` + producer,
		`GRANT SELECT ON outbox_event TO ` + relay,
		`GRANT UPDATE (lease_token, lease_until, lease_holder, attempts, available_at, last_error, failed_at,
			published_at, kafka_topic, kafka_partition, kafka_offset, blocked) ON outbox_event TO ` + relay,
		`GRANT SELECT ON outbox_event, outbox_event_archive, consumed_event, outbox_audit TO ` + console,
		`GRANT INSERT (event_id, aggregate_type, aggregate_id, event_type, payload) ON outbox_event TO ` + producer,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	from, to, err := migrations.Migrate(ctx, conn, "public", nil)
	if err != nil {
		t.Fatalf("migrating from 9: %v", err)
	}
	if from != 9 || int(to) != count(t) {
		t.Fatalf("migrated from %d to %d, want 9 to %d", from, to, count(t))
	}
	const fn = "outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)"
	for _, c := range []struct {
		role                 string
		wantBeat, wantSelect bool
	}{{"relay", true, false}, {"console", false, true}, {"producer", false, false}} {
		var beat, sel, write bool
		if err := conn.QueryRow(ctx, `SELECT has_function_privilege($1, $2, 'EXECUTE'),
			has_table_privilege($1, 'outbox_relay', 'SELECT'),
			has_table_privilege($1, 'outbox_relay', 'INSERT, UPDATE, DELETE')`, names[c.role], fn).Scan(&beat, &sel, &write); err != nil {
			t.Fatal(err)
		}
		if beat != c.wantBeat || sel != c.wantSelect || write {
			t.Errorf("%s after 010: may beat %v (want %v), read %v (want %v), write %v (want false)",
				c.role, beat, c.wantBeat, sel, c.wantSelect, write)
		}
	}

	// The beat under the relay role: time and role come from the database.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+relay); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT outboxtop_relay_beat('host-a:7', 'paused', true, 5000, 3, 'v1', 'aggregate', 500)`).Scan(&ok); err != nil || !ok {
		t.Fatalf("beat as the upgraded relay role: %v, %v", ok, err)
	}
	if _, err := tx.Exec(ctx, "RESET ROLE"); err != nil {
		t.Fatal(err)
	}
	var state, dbUser string
	var inFlight int
	var now bool
	if err := tx.QueryRow(ctx, `SELECT state, db_user, in_flight, seen_at = now() AND started_at = now()
		FROM outbox_relay WHERE holder = 'host-a:7'`).Scan(&state, &dbUser, &inFlight, &now); err != nil {
		t.Fatal(err)
	}
	if state != "paused" || inFlight != 3 || !now {
		t.Errorf("heartbeat row: state %q in_flight %d stamped now %v", state, inFlight, now)
	}
	// session_user is the login role, not the role SET ROLE chose: the test
	// connects as the superuser, so that is who the row names.
	var login string
	if err := tx.QueryRow(ctx, `SELECT session_user`).Scan(&login); err != nil || dbUser != login {
		t.Errorf("heartbeat row names %q, want the session's %q (%v)", dbUser, login, err)
	}
}

// TestHeartbeatCleansUp: each beat deletes rows stopped more than an hour ago
// and rows not seen for a day, and keeps the rest.
func TestHeartbeatCleansUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.DB(t))
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms) VALUES
		('stopped-old:1', session_user, 'stopped', now() - interval '3 hours', now() - interval '2 hours', 5000),
		('stopped-new:1', session_user, 'stopped', now() - interval '3 hours', now() - interval '5 minutes', 5000),
		('gone-old:1', session_user, 'running', now() - interval '3 days', now() - interval '2 days', 5000),
		('gone-new:1', session_user, 'running', now() - interval '3 hours', now() - interval '2 hours', 5000)`); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT outboxtop_relay_beat('me:1', 'running', true, 5000, 0, '', '', 0)`).Scan(&ok); err != nil || !ok {
		t.Fatalf("beat: %v, %v", ok, err)
	}
	var left string
	if err := conn.QueryRow(ctx, `SELECT string_agg(holder, ' ' ORDER BY holder) FROM outbox_relay`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if want := "gone-new:1 me:1 stopped-new:1"; left != want {
		t.Errorf("rows after a beat: %q, want %q", left, want)
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
