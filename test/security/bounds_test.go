package security

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// status runs `outboxtop status` with args against b's database as its owner.
func (b *bundle) status(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmd.Run(b.ctx, append([]string{"status"}, args...), cmd.IO{Out: &out, Err: &errb,
		Getenv: func(k string) string {
			if k == "OUTBOXTOP_DSN" {
				return b.dsn
			}
			return ""
		}})
	return code, out.String() + errb.String()
}

// assertRefused checks that the database refused err's statement with code.
func assertRefused(t *testing.T, what, code string, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Fatalf("%s: want the database's refusal (%s), got %v", what, code, err)
	}
}

// TestHeartbeatIntervalIsBounded: a relay role's beat with an interval past an
// hour (what --heartbeat-interval allows) is refused: 800000000 ms made every
// reader's interval_ms * 3 overflow, 700000000 ms kept a relay last seen 20 hours
// ago "running". Rows stored before the bound read as an hour's interval.
func TestHeartbeatIntervalIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, "relay")
	for _, ms := range []int{800000000, 700000000, 3600001, 0, -5} {
		_, err := b.as.Exec(b.ctx, `SELECT outboxtop_relay_beat('ghost:3', 'paused', true, $1, 0, 'v', 'aggregate', 1000)`, ms)
		assertRefused(t, fmt.Sprintf("a beat with an interval of %d ms", ms), "22023", err)
	}
	var n int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_relay`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d heartbeat rows after the refused beats (%v)", n, err)
	}
	var ok bool
	if err := b.as.QueryRow(b.ctx, `SELECT outboxtop_relay_beat('real:1', 'running', true, 3600000, 0, 'v', 'aggregate', 1000)`).Scan(&ok); err != nil || !ok {
		t.Fatalf("a beat of an hour's interval: %v, %v", ok, err)
	}

	// Rows an earlier beat accepted.
	if _, err := b.admin.Exec(b.ctx, `ALTER TABLE outbox_relay DROP CONSTRAINT outbox_relay_interval_ms_bound;
		INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms) VALUES
			('ghost:3', 'r', 'paused', now(), now(), 800000000),
			('ghost:4', 'r', 'running', now() - interval '1 day', now() - interval '20 hours', 700000000);
		DELETE FROM outbox_relay WHERE holder = 'real:1'`); err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(b.admin, "public")
	if err != nil {
		t.Fatal(err)
	}
	s, err := in.Snapshot(b.ctx)
	if err != nil {
		t.Fatalf("Snapshot over the stored heartbeats: %v", err)
	}
	states := map[string]string{}
	for _, r := range s.Relays {
		states[r.Holder] = r.State
	}
	if states["ghost:4"] != "gone" || states["ghost:3"] != "paused" {
		t.Errorf("relays %v; want ghost:4 gone (seen 20 h ago), ghost:3 paused", states)
	}
	code, out := b.status(t, "--warn-failed", "-1", "--warn-blocked", "-1", "--warn-no-relay", "1h")
	if code == 3 || strings.Contains(out, "out of range") {
		t.Fatalf("status over the stored heartbeats: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "1 live of 2 seen") {
		t.Errorf("status over the stored heartbeats: want 1 live of 2 seen (ghost:3 paused now):\n%s", out)
	}
}

// TestConsumerCannotLockOtherInboxes: a consumer role may not LOCK
// consumed_event in any mode that blocks another consumer's INSERT (a
// table-level DELETE let it take ACCESS EXCLUSIVE: another consumer's insert
// waited as long as it held it). In the modes it may take, the insert goes on.
func TestConsumerCannotLockOtherInboxes(t *testing.T) {
	t.Parallel()
	b := setup(t, "consumer")
	other, otherRole := b.login(t, "consumer")
	for _, mode := range []string{"ACCESS SHARE", "ROW SHARE", "ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE",
		"SHARE", "SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE"} {
		tx, err := b.as.Begin(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, lockErr := tx.Exec(b.ctx, "LOCK TABLE consumed_event IN "+mode+" MODE")
		if lockErr != nil {
			_ = tx.Rollback(b.ctx)
			assertDenied(t, "a consumer may not lock consumed_event in "+mode+" mode", lockErr)
			continue
		}
		// Held: another consumer's insert must not wait for it.
		conn, err := other.Acquire(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(b.ctx, `SET lock_timeout = '2s'`)
		if err == nil {
			_, err = conn.Exec(b.ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ($1, gen_random_uuid())`, otherRole)
		}
		conn.Release()
		_ = tx.Rollback(b.ctx)
		if err != nil {
			t.Errorf("with a consumer holding consumed_event in %s mode, another consumer's insert: %v", mode, err)
		}
	}
}
