package security

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/relay"
	"github.com/outboxtop/outboxtop/wire"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bundle is a migrated test database, a superuser pool on it (the owner: it
// migrates and seeds) and a pool logged in as a role holding only the grants
// 'outboxtop grants --role <role>' prints.
type bundle struct {
	ctx    context.Context
	admin  *pgxpool.Pool
	as     *pgxpool.Pool
	role   string
	dsn    string // the database's, as the superuser
	schema string
}

func setup(t *testing.T, role string) *bundle { t.Helper(); return setupIn(t, role, "public") }

// setupIn is setup with outboxtop's tables in schema (migrated there first when
// it is not the template's public).
func setupIn(t *testing.T, role, schema string) *bundle {
	t.Helper()
	ctx := context.Background()
	admin, dsn := testenv.Pool(t)
	if schema != "public" {
		conn, err := admin.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = migrations.Apply(ctx, conn.Conn(), schema, nil)
		conn.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	b := &bundle{ctx: ctx, admin: admin, dsn: dsn, schema: schema}
	b.as, b.role = b.login(t, role)
	return b
}

// login creates a login role holding exactly the grants 'outboxtop grants
// --role <role>' prints for b's schema and returns a pool logged in as it, and
// its name. The role is dropped when the test ends.
func (b *bundle) login(t *testing.T, role string) (*pgxpool.Pool, string) {
	t.Helper()
	ctx, admin, dsn, schema := b.ctx, b.admin, b.dsn, b.schema
	name := "outboxtop_" + role + "_" + randomHex(4)
	var out, errb bytes.Buffer
	if code := cmd.Run(ctx, []string{"grants", "--role", role, "--to", name, "--schema", schema}, cmd.IO{Out: &out, Err: &errb,
		Getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("outboxtop grants: exit %d: %s", code, errb.String())
	}
	if _, err := admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN PASSWORD '"+rolePassword+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Before the database is dropped: revoke in it, then drop the cluster-wide role.
		ctx := context.Background()
		_, _ = admin.Exec(ctx, "DROP OWNED BY "+pgx.Identifier{name}.Sanitize())
		_, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	})
	if _, err := admin.Exec(ctx, out.String()); err != nil {
		t.Fatalf("running the printed grants: %v\n%s", err, out.String())
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User, cfg.ConnConfig.Password = name, rolePassword
	as, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close) // runs before the role is dropped
	var who string
	if err := as.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != name {
		t.Fatalf("logged in as %q (%v), want %q", who, err, name)
	}
	return as, name
}

// rolePassword is the password of every role login creates.
const rolePassword = "role-pw-Zq81"

// roleDSN is dsn logged in as role name, one login created.
func roleDSN(t *testing.T, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, rolePassword)
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// insert adds events as the application would (the superuser stands in for it).
func (b *bundle) insert(t *testing.T, aggregateType, aggregateID string, n int) []string {
	t.Helper()
	var ids []string
	for k := 0; k < n; k++ {
		id := uuid.NewString()
		if _, err := b.admin.Exec(b.ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			VALUES ($1, $2, $3, 'Tested', $4)`, id, aggregateType, aggregateID, fmt.Sprintf(`{"n": %d}`, k)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// assertDenied checks that PostgreSQL itself refused err's statement.
func assertDenied(t *testing.T, what string, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("%s: want the database's permission denied (42501), got %v", what, err)
	}
}

func (b *bundle) count(t *testing.T, where string) int {
	t.Helper()
	var n int
	if err := b.admin.QueryRow(b.ctx, "SELECT count(*) FROM outbox_event WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRelayGrants: the relay claims, publishes, marks and fails a poison event with
// only the relay grants, and can do nothing else.
func TestRelayGrants(t *testing.T) {
	t.Parallel()
	b := setup(t, "relay")
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	b.insert(t, "order", "o-1", 20)
	b.insert(t, "order", "o-2", 5)
	b.insert(t, "bad topic!", "p-1", 1) // poison: an illegal topic name
	// Two events of one aggregate from overlapping transactions: the relay
	// marks the later one of unknown order, under its column grant.
	overlap, err := b.admin.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := overlap.Exec(b.ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		VALUES (gen_random_uuid(), 'order', 'ov', 'Tested', '{}')`); err != nil {
		t.Fatal(err)
	}
	b.insert(t, "order", "ov", 1)
	if err := overlap.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	// The wake-ups' probe is the relay's to call.
	var inserted int64
	if err := b.as.QueryRow(b.ctx, `SELECT outboxtop_inserted()`).Scan(&inserted); err != nil || inserted < 28 {
		t.Errorf("the relay's wake-up probe under the relay grants: %d (%v), want at least 28", inserted, err)
	}

	client, err := relay.NewKafkaClient(relay.KafkaConfig{Brokers: k.Brokers, DeliveryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	m := relay.NewMetrics(nil)
	r, err := relay.New(b.as, client, relay.Config{TopicTemplate: k.Prefix + "outbox.{aggregate_type}", Drain: true,
		PollInterval: 50 * time.Millisecond, BackoffBase: 10 * time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("relay under the relay grants: %v", err)
	}
	if n := b.count(t, wire.PublishedSQL); n != 27 {
		t.Errorf("published %d events, want 27", n)
	}
	if n := b.count(t, "unserialized AND aggregate_id = 'ov'"); n != 1 {
		t.Errorf("%d events of the overlapping writers marked of unknown order, want 1", n)
	}
	if n := b.count(t, wire.FailedSQL+" AND aggregate_type = 'bad topic!'"); n != 1 {
		t.Errorf("the poison event is not failed (%d)", n)
	}
	// Every row the relay claimed names it (host:pid), the column grant allowing.
	if n := b.count(t, "lease_holder = '"+relay.DefaultHolder()+"'"); n != 28 {
		t.Errorf("%d rows name the relay %s as their holder, want 28", n, relay.DefaultHolder())
	}
	// Its heartbeat too, through the beat function: the last one says stopped.
	var state, dbUser string
	if err := b.admin.QueryRow(b.ctx, `SELECT state, db_user FROM outbox_relay WHERE holder = $1`, relay.DefaultHolder()).
		Scan(&state, &dbUser); err != nil || state != "stopped" || dbUser != b.role {
		t.Errorf("the relay's heartbeat under the relay grants: state %q db_user %q (%v); want stopped, %s", state, dbUser, err, b.role)
	}
	if n := testutil.ToFloat64(m.HeartbeatFailures); n != 0 {
		t.Errorf("%v heartbeats refused under the relay grants", n)
	}
	if got := len(k.Consume(t, 27, 30*time.Second, k.Prefix+"outbox.order")); got < 27 {
		t.Errorf("Kafka holds %d records, want 27", got)
	}
	// The poison event's failed try is in its attempt history, written under
	// the relay grants (column-level INSERT on outbox_attempt): by this relay,
	// with the database's own time. The published events have none.
	var tries int
	var holder, class string
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*), min(h.lease_holder), min(h.class) FROM outbox_attempt h
		JOIN outbox_event e USING (event_id) WHERE e.aggregate_type = 'bad topic!' AND h.at > now() - interval '5 minutes'`).
		Scan(&tries, &holder, &class); err != nil || tries != 1 || holder != relay.DefaultHolder() || class != "permanent" {
		t.Errorf("the poison event's history under the relay grants: %d tries by %q, class %q (%v); want 1 by %s, permanent",
			tries, holder, class, err, relay.DefaultHolder())
	}
	var all int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_attempt`).Scan(&all); err != nil || all != 1 {
		t.Errorf("%d history rows in all (%v), want only the poison event's", all, err)
	}

	for what, sql := range map[string]string{
		"insert an event":          `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES (gen_random_uuid(), 'a', 'b', 'c', '{}')`,
		"delete events":            `DELETE FROM outbox_event`,
		"rewrite a payload":        `UPDATE outbox_event SET payload = '{}'`,
		"read the audit trail":     `SELECT count(*) FROM outbox_audit`,
		"read the archive":         `SELECT count(*) FROM outbox_event_archive`,
		"read an inbox":            `SELECT count(*) FROM consumed_event`,
		"create a table":           `CREATE TABLE public.relay_was_here (x int)`,
		"change the version table": `DELETE FROM outboxtop_schema_version`,
		"read the attempt history": `SELECT count(*) FROM outbox_attempt`,
		"correct an event":         `SELECT outboxtop_correct('r', 'x', gen_random_uuid(), '{}', '{}')`,
		"mark an order unknown by hand, beyond its column": `UPDATE outbox_event SET unserialized = true, payload = payload`,
	} {
		_, err := b.as.Exec(b.ctx, sql)
		assertDenied(t, "relay may not "+what, err)
	}
}

// A relay whose role may not add attempt history (its grants were applied
// before the history existed and the upgrade did not reach it) still fails a
// poison event and publishes the rest: the history is refused, said in the
// log, and nothing else changes.
func TestRelayWithoutTheHistoryGrantLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, "relay")
	if _, err := b.admin.Exec(b.ctx, `REVOKE INSERT ON outbox_attempt FROM `+pgx.Identifier{b.role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	b.insert(t, "order", "o-1", 10)
	b.insert(t, "bad topic!", "p-1", 1)
	client, err := relay.NewKafkaClient(relay.KafkaConfig{Brokers: k.Brokers, DeliveryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	r, err := relay.New(b.as, client, relay.Config{TopicTemplate: k.Prefix + "outbox.{aggregate_type}", Drain: true,
		PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, wire.PublishedSQL); n != 10 {
		t.Errorf("published %d events, want 10", n)
	}
	if n := b.count(t, wire.FailedSQL+" AND aggregate_type = 'bad topic!'"); n != 1 {
		t.Errorf("the poison event is not failed (%d)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "attempt history refused: run `outboxtop migrate` and apply `outboxtop grants --role relay`") {
		t.Errorf("the log does not say the history was refused:\n%s", logs.String())
	}
}

// lockedWriter serializes a log's writes.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestConsoleGrants: a read-only console sees everything (snapshot, lists, detail)
// and the database itself refuses every action, even from an Inspector that was
// not told it is read-only.
func TestConsoleGrants(t *testing.T) {
	t.Parallel()
	b := setup(t, "console")
	ids := b.insert(t, "order", "o-1", 3)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), last_error = 'boom', attempts = 10 WHERE event_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Exec(b.ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', $1)`, ids[0]); err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(b.as, "public") // deliberately not ReadOnly: the grants must hold on their own
	if err != nil {
		t.Fatal(err)
	}
	s, err := in.Snapshot(b.ctx)
	if err != nil {
		t.Fatalf("Snapshot under the console grants: %v", err)
	}
	if s.Counts.Failed != 1 || s.Counts.Ready != 2 {
		t.Errorf("snapshot counts %+v, want 1 failed and 2 ready", s.Counts)
	}
	if len(s.Health.Tables) == 0 {
		t.Errorf("snapshot has no table health")
	}
	for _, st := range []wire.State{wire.Ready, wire.Failed, wire.Published, inspect.Archived} {
		if _, err := in.List(b.ctx, inspect.ListOptions{State: st}); err != nil {
			t.Errorf("List %s under the console grants: %v", st, err)
		}
	}
	if d, err := in.Detail(b.ctx, ids[0]); err != nil || d.HistoryError != "" {
		t.Errorf("Detail under the console grants: %v (attempt history: %q)", err, d.HistoryError)
	}
	if _, err := in.PreviewCorrection(b.ctx, inspect.Correction{ID: ids[0], Payload: []byte(`{"fixed": 1}`), Reason: "x"}); err != nil {
		t.Errorf("a correction's preview only reads: %v", err)
	}
	_, err = in.Correct(b.ctx, inspect.Correction{ID: ids[0], Payload: []byte(`{"fixed": 1}`), Reason: "x", Actor: "console-test"})
	assertDenied(t, "console may not correct", err)
	if _, err := in.DryRun(b.ctx, inspect.Request{Action: inspect.Retry, IDs: ids[:1]}); err != nil {
		t.Errorf("a dry run only reads: %v", err)
	}
	for _, req := range []inspect.Request{
		{Action: inspect.Retry, IDs: ids[:1]},
		{Action: inspect.Park, IDs: ids[1:2], Reason: "test"},
		{Action: inspect.Skip, IDs: ids[:1], Reason: "test"},
		{Action: inspect.Archive, Filter: inspect.Filter{All: true}},
		{Action: inspect.Replay, IDs: ids[:1]},
	} {
		req.Actor = "console-test"
		_, err := in.Do(b.ctx, req)
		assertDenied(t, "console may not "+string(req.Action), err)
	}
	if n := b.count(t, wire.FailedSQL); n != 1 {
		t.Errorf("failed events changed under the console role: %d", n)
	}
	var audits int
	if err := b.admin.QueryRow(b.ctx, "SELECT count(*) FROM outbox_audit").Scan(&audits); err != nil || audits != 0 {
		t.Errorf("audit rows written under the console role: %d (%v)", audits, err)
	}
}

// TestOperatorGrants: every triage action works under the operator grants and
// writes its audit row; the audit trail cannot be rewritten.
func TestOperatorGrants(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	ids := b.insert(t, "order", "o-1", 6)
	other := b.insert(t, "order", "o-2", 1) // parked, then skipped: it heads its aggregate
	// ids[0] failed, ids[1] leased, ids[2..3] published, ids[4..5] ready.
	for _, s := range []struct{ sql, id string }{
		{`UPDATE outbox_event SET failed_at = now(), last_error = 'boom', attempts = 10 WHERE event_id = $1`, ids[0]},
		{`UPDATE outbox_event SET lease_token = gen_random_uuid(), lease_until = now() + interval '1 hour', attempts = 1 WHERE event_id = $1`, ids[1]},
		{`UPDATE outbox_event SET published_at = now() - interval '2 hours', attempts = 1 WHERE event_id = $1`, ids[2]},
		{`UPDATE outbox_event SET published_at = now() - interval '2 hours', attempts = 1 WHERE event_id = $1`, ids[3]},
	} {
		if _, err := b.admin.Exec(b.ctx, s.sql, s.id); err != nil {
			t.Fatal(err)
		}
	}
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Snapshot(b.ctx); err != nil {
		t.Fatalf("Snapshot under the operator grants: %v", err)
	}
	for _, c := range []struct {
		req  inspect.Request
		want int64
	}{
		{inspect.Request{Action: inspect.Retry, IDs: ids[:1]}, 1},
		{inspect.Request{Action: inspect.ResetLease, IDs: ids[1:2]}, 1},
		{inspect.Request{Action: inspect.Park, IDs: other, Reason: "bad data"}, 1},
		{inspect.Request{Action: inspect.Skip, IDs: other, Reason: "bad data"}, 1},
		{inspect.Request{Action: inspect.Archive, Filter: inspect.Filter{OlderThan: time.Hour}}, 2},
		{inspect.Request{Action: inspect.Replay, IDs: ids[2:3]}, 1},
		{inspect.Request{Action: inspect.Replay, IDs: ids[3:4], NewID: true}, 1},
	} {
		c.req.Actor = "operator-test"
		res, err := in.Do(b.ctx, c.req)
		if err != nil {
			t.Fatalf("%s under the operator grants: %v", c.req.Action, err)
		}
		if res.Rows != c.want || res.AuditID == 0 {
			t.Errorf("%s: %d rows, audit %d; want %d rows and an audit row", c.req.Action, res.Rows, res.AuditID, c.want)
		}
	}
	var audits int
	if err := b.admin.QueryRow(b.ctx, "SELECT count(*) FROM outbox_audit WHERE actor = 'operator-test'").Scan(&audits); err != nil || audits != 7 {
		t.Errorf("%d audit rows (%v), want 7", audits, err)
	}
	for what, sql := range map[string]string{
		"rewrite the audit trail": `UPDATE outbox_audit SET actor = 'someone else'`,
		"delete the audit trail":  `DELETE FROM outbox_audit`,
		"rewrite a payload":       `UPDATE outbox_event SET payload = '{}'`,
		"forge a publication":     `UPDATE outbox_event SET published_at = now()`,
		"delete an inbox":         `DELETE FROM consumed_event`,
	} {
		_, err := b.as.Exec(b.ctx, sql)
		assertDenied(t, "operator may not "+what, err)
	}
}
