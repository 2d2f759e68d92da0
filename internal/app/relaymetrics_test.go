package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// gatherRelays scrapes a fresh relaysCollector on pool (fresh: the collector
// keeps a snapshot for 15 s) and returns its gauges by name.
func gatherRelays(t *testing.T, pool *pgxpool.Pool) map[string]float64 {
	t.Helper()
	in, err := inspect.New(pool, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newRelaysCollector(in))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	return got
}

func beatRow(t *testing.T, pool *pgxpool.Pool, holder, state, ago string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_relay (holder, db_user, state, started_at, seen_at, interval_ms)
		VALUES ($1, current_user, $2, now() - interval '1 hour', now() - $3::interval, 5000)`, holder, state, ago); err != nil {
		t.Fatal(err)
	}
}

// The relay gauges follow the outbox's heartbeats and leases as the Overview
// does: none ever seen (no_relay NaN), only a gone and a stopped one (no_relay
// is the freshest beat's age), a relay seen only by its live lease, and a
// live heartbeat.
func TestRelayGaugesFollowHeartbeatsAndLeases(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()

	got := gatherRelays(t, pool)
	if got["outboxtop_relays_live"] != 0 || got["outboxtop_relays_gone"] != 0 || got["outboxtop_relays_seen"] != 0 {
		t.Errorf("empty outbox: %v", got)
	}
	if v, ok := got["outboxtop_no_relay_seconds"]; !ok || !math.IsNaN(v) {
		t.Errorf("no relay ever seen: outboxtop_no_relay_seconds %v (exported %v), want NaN", v, ok)
	}

	// Died two minutes ago without a last beat; stopped cleanly ten minutes ago.
	beatRow(t, pool, "host-a:1", "running", "2 minutes")
	beatRow(t, pool, "host-b:2", "stopped", "10 minutes")
	got = gatherRelays(t, pool)
	if got["outboxtop_relays_live"] != 0 || got["outboxtop_relays_gone"] != 1 || got["outboxtop_relays_seen"] != 2 {
		t.Errorf("one gone, one stopped: %v", got)
	}
	if v := got["outboxtop_no_relay_seconds"]; v < 120 || v > 300 {
		t.Errorf("outboxtop_no_relay_seconds %v, want the gone relay's last beat, ~120 s ago", v)
	}

	// A relay without a heartbeat (older binary, heartbeat off) holding a live lease.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			lease_token, lease_until, lease_holder, attempts)
		VALUES (gen_random_uuid(), 'order', 'o-1', 'OrderPlaced', '{}', gen_random_uuid(), now() + interval '1 hour', 'host-c:3', 1)`); err != nil {
		t.Fatal(err)
	}
	got = gatherRelays(t, pool)
	if got["outboxtop_relays_live"] != 1 || got["outboxtop_relays_seen"] != 3 || got["outboxtop_no_relay_seconds"] != 0 {
		t.Errorf("a lease holder is live: %v", got)
	}

	if _, err := pool.Exec(ctx, `UPDATE outbox_event SET lease_token = NULL, lease_until = NULL`); err != nil {
		t.Fatal(err)
	}
	beatRow(t, pool, "host-d:4", "paused", "1 second")
	got = gatherRelays(t, pool)
	if got["outboxtop_relays_live"] != 1 || got["outboxtop_relays_gone"] != 1 || got["outboxtop_relays_seen"] != 3 ||
		got["outboxtop_no_relay_seconds"] != 0 {
		t.Errorf("a paused relay beating is live: %v", got)
	}
}

// A role that cannot read the heartbeats exports no relay gauges rather than
// "none live": the relay role (no snapshot at all) and a console role whose
// SELECT on outbox_relay was taken away (relays seen only by their leases).
func TestRelayGaugesAbsentWithoutTheHeartbeats(t *testing.T) {
	t.Parallel()
	admin, dsn := testenv.Pool(t)
	beatRow(t, admin, "host-a:1", "running", "1 second")
	if got := gatherRelays(t, admin); got["outboxtop_relays_live"] != 1 {
		t.Fatalf("the owner sees the relay: %v", got)
	}
	for _, c := range []struct{ role, revoke string }{
		{"relay", ""},
		{"console", "REVOKE SELECT ON outbox_relay FROM %s"},
	} {
		pool := asRole(t, admin, dsn, c.role, c.revoke)
		if got := gatherRelays(t, pool); len(got) != 0 {
			t.Errorf("%s role: %v, want no relay gauges", c.role, got)
		}
	}
}

// asRole is a pool logged in as a new role with `outboxtop grants --role role`'s
// grants, less revoke (a statement with %s for the role, or "").
func asRole(t *testing.T, admin *pgxpool.Pool, dsn, role, revoke string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "outboxtop_" + role + "_" + hex.EncodeToString(b)
	id := pgx.Identifier{name}.Sanitize()
	grants, err := migrations.GrantSQL(role, "public", name)
	if err != nil {
		t.Fatal(err)
	}
	const password = "role-pw-Rl42"
	if _, err := admin.Exec(ctx, "CREATE ROLE "+id+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+id)
		_, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+id)
	})
	if _, err := admin.Exec(ctx, grants); err != nil {
		t.Fatalf("grants: %v\n%s", err, grants)
	}
	if revoke != "" {
		if _, err := admin.Exec(ctx, fmt.Sprintf(revoke, id)); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User, cfg.ConnConfig.Password = name, password
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
