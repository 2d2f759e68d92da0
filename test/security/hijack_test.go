package security

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// hijackBody is what a role with CREATE on the outbox schema would run as the
// owner of the SECURITY DEFINER functions through a function of its own whose
// signature matches a call of theirs more exactly than the built-in, were the
// call not qualified with pg_catalog: it grants the attacker every privilege on
// the audit trail and the outbox and rewrites every payload.
const hijackBody = `BEGIN
	EXECUTE 'GRANT ALL ON public.outbox_audit, public.outbox_event TO {attacker}';
	UPDATE public.outbox_event SET payload = '{"amount": 1000000}';
	RETURN {result};
END`

// hijacked sets up the schema as PostgreSQL before 15 left public (and
// pg_upgrade keeps it): everyone may create in it. The producer then plants
// its functions (plant, with {attacker} and {result} filled in).
func hijacked(t *testing.T, plant string) (b *bundle, producer *bundle) {
	t.Helper()
	b = setup(t, "operator")
	as, name := b.login(t, "producer")
	producer = &bundle{ctx: b.ctx, admin: b.admin, as: as, role: name, dsn: b.dsn, schema: b.schema}
	if _, err := b.admin.Exec(b.ctx, `GRANT CREATE ON SCHEMA public TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	if _, err := producer.as.Exec(b.ctx, strings.NewReplacer("{attacker}", pgx.Identifier{name}.Sanitize()).Replace(plant)); err != nil {
		t.Fatalf("the producer plants its function: %v", err)
	}
	return b, producer
}

// afterHijack: the attacker gained nothing, and no payload changed.
func afterHijack(t *testing.T, b, producer *bundle, payloads string) {
	t.Helper()
	_, err := producer.as.Exec(b.ctx, `DELETE FROM outbox_audit`)
	assertDenied(t, "after the operator's action, the producer may not delete the audit trail", err)
	_, err = producer.as.Exec(b.ctx, `UPDATE outbox_event SET payload = '{}'`)
	assertDenied(t, "after the operator's action, the producer may not rewrite a payload", err)
	if got := b.payloads(t); got != payloads {
		t.Errorf("payloads changed by the operator's action:\nbefore %s\nafter  %s", payloads, got)
	}
}

func (b *bundle) payloads(t *testing.T) string {
	t.Helper()
	var s string
	if err := b.admin.QueryRow(b.ctx, `SELECT coalesce(string_agg(event_id || '=' || payload::text, ' ' ORDER BY event_id), '')
		FROM (SELECT event_id, payload FROM outbox_event UNION ALL SELECT event_id, payload FROM outbox_event_archive) e`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplayCannotBeHijackedThroughCardinality: replay counts its events with
// cardinality(ids uuid[]); a public.cardinality(uuid[]) is an exact match,
// which PostgreSQL prefers to pg_catalog's cardinality(anyarray) unless the call
// names pg_catalog, and it would run as the functions' owner on a replay.
func TestReplayCannotBeHijackedThroughCardinality(t *testing.T) {
	t.Parallel()
	b, producer := hijacked(t, `CREATE FUNCTION public.cardinality(a uuid[]) RETURNS integer LANGUAGE plpgsql AS $f$`+
		strings.NewReplacer("{result}", "pg_catalog.cardinality(a)").Replace(hijackBody)+`$f$`)
	ids := b.insert(t, "order", "o-1", 2)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET published_at = now() - interval '1 hour', attempts = 1
		WHERE event_id = ANY($1::uuid[])`, ids); err != nil {
		t.Fatal(err)
	}
	before := b.payloads(t)
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	res, err := in.Do(b.ctx, inspect.Request{Action: inspect.Replay, IDs: ids, Actor: "carol"})
	if err != nil || res.Rows != 2 {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	afterHijack(t, b, producer, before)
}

// TestRetryCannotBeHijackedThroughArrayAgg: retry (and every action) lists its
// events with array_agg(event_id uuid); a public.array_agg(uuid) aggregate is an
// exact match, preferred to pg_catalog's array_agg(anynonarray) unless the call
// names pg_catalog, and its state function would run as the functions' owner on
// a plain retry.
func TestRetryCannotBeHijackedThroughArrayAgg(t *testing.T) {
	t.Parallel()
	b, producer := hijacked(t, `CREATE FUNCTION public.collect(s uuid[], x uuid) RETURNS uuid[] LANGUAGE plpgsql AS $f$`+
		strings.NewReplacer("{result}", "pg_catalog.array_append(s, x)").Replace(hijackBody)+`$f$;
		CREATE AGGREGATE public.array_agg(uuid) (SFUNC = public.collect, STYPE = uuid[], INITCOND = '{}')`)
	ids := b.insert(t, "order", "o-1", 1)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), last_error = 'boom', attempts = 10
		WHERE event_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	before := b.payloads(t)
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	res, err := in.Do(b.ctx, inspect.Request{Action: inspect.Retry, IDs: ids, Actor: "carol"})
	if err != nil || res.Rows != 1 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	afterHijack(t, b, producer, before)
}

// shadows are a function, aggregate or operator in the outbox schema for
// every built-in the functions use that takes polymorphic or other argument
// types than the call's, each with exactly the call's types, so each would be
// preferred to the built-in if called unqualified; each raises. probe is an
// unqualified use that picks the shadow, proving that it would.
var shadows = []struct{ create, probe string }{
	{`CREATE FUNCTION {s}.cardinality(uuid[]) RETURNS integer LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow cardinality(uuid[]) called'; END$$`,
		`SELECT cardinality('{}'::uuid[])`},
	{`CREATE FUNCTION {s}.cardinality(text[]) RETURNS integer LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow cardinality(text[]) called'; END$$`,
		`SELECT cardinality('{}'::text[])`},
	{`CREATE FUNCTION {s}.array_remove(text[], text) RETURNS text[] LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow array_remove(text[], text) called'; END$$`,
		`SELECT array_remove('{}'::text[], 'pending')`},
	{`CREATE FUNCTION {s}.array_cat(uuid[], uuid[]) RETURNS uuid[] LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow array_cat(uuid[], uuid[]) called'; END$$`,
		`SELECT array_cat('{}'::uuid[], '{}'::uuid[])`},
	{`CREATE FUNCTION {s}.array_cat(text[], text[]) RETURNS text[] LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow array_cat(text[], text[]) called'; END$$`,
		`SELECT array_cat('{}'::text[], '{}'::text[])`},
	{`CREATE FUNCTION {s}.shadow_agg(uuid[], uuid) RETURNS uuid[] LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow array_agg(uuid) called'; END$$;
		CREATE AGGREGATE {s}.array_agg(uuid) (SFUNC = {s}.shadow_agg, STYPE = uuid[])`,
		`SELECT array_agg(x) FROM (VALUES (gen_random_uuid())) v(x)`},
	{`CREATE FUNCTION {s}.shadow_cat_uuid(uuid[], uuid[]) RETURNS uuid[] LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow uuid[] || uuid[] called'; END$$;
		CREATE OPERATOR {s}.|| (LEFTARG = uuid[], RIGHTARG = uuid[], FUNCTION = {s}.shadow_cat_uuid)`,
		`SELECT '{}'::uuid[] || '{}'::uuid[]`},
	{`CREATE FUNCTION {s}.shadow_cat_text(text[], text[]) RETURNS text[] LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow text[] || text[] called'; END$$;
		CREATE OPERATOR {s}.|| (LEFTARG = text[], RIGHTARG = text[], FUNCTION = {s}.shadow_cat_text)`,
		`SELECT '{}'::text[] || '{}'::text[]`},
	{`CREATE FUNCTION {s}.array_append(text[], text) RETURNS text[] LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow array_append(text[], text) called'; END$$`,
		`SELECT array_append('{}'::text[], 'x')`},
	{`CREATE FUNCTION {s}.to_jsonb(text[]) RETURNS jsonb LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow to_jsonb(text[]) called'; END$$`,
		`SELECT to_jsonb('{}'::text[])`},
	{`CREATE FUNCTION {s}.shadow_contained(text[], text[]) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'shadow text[] <@ text[] called'; END$$;
		CREATE OPERATOR {s}.<@ (LEFTARG = text[], RIGHTARG = text[], FUNCTION = {s}.shadow_contained)`,
		`SELECT '{}'::text[] <@ '{}'::text[]`},
}

// TestShadowedBuiltinsAreNeverCalled puts a raising shadow in the outbox schema
// for every built-in the functions call with types another overload could match
// more exactly (shadows), proves each would be chosen by an unqualified call on
// the functions' search_path, then runs every function on every path that
// reaches those calls: none of the shadows may run.
func TestShadowedBuiltinsAreNeverCalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const schema = "shadowed"
	pool, _ := testenv.Pool(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	db := conn.Conn()
	if _, err := migrations.Apply(ctx, db, schema, nil); err != nil {
		t.Fatal(err)
	}
	victim, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Conn().Close(ctx); victim.Release() }()
	for _, s := range shadows {
		if _, err := db.Exec(ctx, strings.ReplaceAll(s.create, "{s}", schema)); err != nil {
			t.Fatalf("%s: %v", s.create, err)
		}
	}
	// The functions' own search_path: each shadow wins over its built-in there.
	if _, err := db.Exec(ctx, `SET search_path = pg_catalog, `+schema+`, pg_temp`); err != nil {
		t.Fatal(err)
	}
	for _, s := range shadows {
		if _, err := db.Exec(ctx, s.probe); err == nil || !strings.Contains(err.Error(), "shadow ") {
			t.Errorf("%s: %v; want the shadow's error (the shadow would not be chosen, so it proves nothing)", s.probe, err)
		}
	}
	steps := []string{
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES
			('00000000-0000-4000-8000-000000000001', 'order', 'o-1', 'E', '{}'),
			('00000000-0000-4000-8000-000000000002', 'order', 'o-2', 'E', '{}'),
			('00000000-0000-4000-8000-000000000003', 'order', 'o-3', 'E', '{}'),
			('00000000-0000-4000-8000-000000000004', 'order', 'o-4', 'E', '{}'),
			('00000000-0000-4000-8000-000000000005', 'order', 'o-5', 'E', '{}'),
			('00000000-0000-4000-8000-000000000006', 'order', 'o-6', 'E', '{}')`,
		`UPDATE outbox_event SET failed_at = now() WHERE event_id IN ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002')`,
		`UPDATE outbox_event SET lease_token = gen_random_uuid(), lease_until = now() + interval '1 hour'
			WHERE event_id = '00000000-0000-4000-8000-000000000003'`,
		`UPDATE outbox_event SET published_at = now() - interval '2 days'
			WHERE event_id IN ('00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-000000000006')`,
		`SELECT outboxtop_action_states('park', ARRAY['pending'])`,
		`SELECT outboxtop_action_states('retry', NULL)`,
		`SELECT outboxtop_lock_events(ARRAY['00000000-0000-4000-8000-000000000001']::uuid[])`,
		`SELECT * FROM outboxtop_retry('a', NULL, ARRAY['00000000-0000-4000-8000-000000000001']::uuid[], ARRAY['failed'], '{}')`,
		`SELECT * FROM outboxtop_reset_lease('a', NULL, ARRAY['00000000-0000-4000-8000-000000000003']::uuid[], NULL, '{}')`,
		`SELECT * FROM outboxtop_park('a', 'r', ARRAY['00000000-0000-4000-8000-000000000001']::uuid[], ARRAY['pending'], '{}')`,
		`SELECT * FROM outboxtop_skip('a', 'r', ARRAY['00000000-0000-4000-8000-000000000002']::uuid[], NULL, '{}')`,
		`SELECT * FROM outboxtop_archive('a', NULL, ARRAY['00000000-0000-4000-8000-000000000004']::uuid[], '{}', NULL)`,
		`SELECT * FROM outboxtop_archive('a', NULL, ARRAY['00000000-0000-4000-8000-000000000005']::uuid[], '{}',
			(SELECT max(audit_id) FROM outbox_audit WHERE action = 'archive'))`,
		`SELECT * FROM outboxtop_replay('a', NULL, ARRAY['00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000006']::uuid[], NULL, '{}', true)`,
		`SELECT * FROM outboxtop_replay('a', NULL, ARRAY['00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000006']::uuid[], NULL, '{}', false)`,
		`SELECT outboxtop_audit_relay('a', 'pause')`,
		// A backend of the test's own, which the function ends.
		fmt.Sprintf(`SELECT outboxtop_audit_terminate('a', NULL, (SELECT jsonb_build_object('pid', pid, 'backend_start', backend_start,
			'xact_start', xact_start) FROM pg_stat_activity WHERE pid = %d))`, victim.Conn().PgConn().PID()),
		`SELECT outboxtop_relay_beat('h:1', 'running', true, 5000, 0, 'v', 'aggregate', 10)`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at)
			VALUES ('00000000-0000-4000-8000-000000000007', 'order', 'o-7', 'E', '{"a": {"b": 1}, "d": 1}', now())`,
		`SELECT * FROM outboxtop_correct('a', 'r', '00000000-0000-4000-8000-000000000007', '{"a": {"b": 2}, "c": [1]}', '{}')`,
		`INSERT INTO outbox_attempt (event_id, attempt, class, outcome)
			SELECT '00000000-0000-4000-8000-000000000007', g, 'retriable', 'schedule' FROM generate_series(1, 25) g`,
		`UPDATE outbox_event SET published_at = now() - interval '2 days' WHERE published_at IS NULL`,
		`SELECT outboxtop_archive_published(interval '1 day', 100)`,
		`UPDATE outbox_event_archive SET archived_at = now() - interval '2 days', published_at = coalesce(published_at, now())`,
		`SELECT outboxtop_delete_archived(interval '1 day', 100)`,
		`INSERT INTO consumed_event (consumer_name, event_id, consumed_at) VALUES ('billing', gen_random_uuid(), now() - interval '2 days')`,
		`SELECT outboxtop_inbox_prune('billing', now() - interval '1 day', 100)`,
	}
	for _, step := range steps {
		if _, err := db.Exec(ctx, step); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	// The steps reached what they were meant to: every action wrote its audit row.
	var actions string
	if err := db.QueryRow(ctx, `SELECT string_agg(action, ' ' ORDER BY audit_id) FROM outbox_audit`).Scan(&actions); err != nil {
		t.Fatal(err)
	}
	if want := "retry reset-lease park skip archive replay replay pause terminate-backend correct"; actions != want {
		t.Errorf("audit rows %q, want %q", actions, want)
	}
	var left int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox_event) + (SELECT count(*) FROM outbox_event_archive)`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d events left after the housekeeping (%v), want 0", left, err)
	}
	if _, err := db.Exec(ctx, `RESET search_path`); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateRefusesASchemaOthersMayCreateIn: migrate refuses a schema in which
// roles other than its owner may create objects, naming them and the REVOKE
// statements, changing nothing; --allow-schema-create migrates with the same
// warning; once revoked it migrates without one.
func TestMigrateRefusesASchemaOthersMayCreateIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.EmptyDB(t)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := "outboxtop_creator_" + randomHex(4)
	role := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, `CREATE ROLE `+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	if _, err := admin.Exec(ctx, `GRANT CREATE ON SCHEMA public TO PUBLIC; GRANT CREATE ON SCHEMA public TO `+role); err != nil {
		t.Fatal(err)
	}
	migrate := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cmd.Run(ctx, append([]string{"migrate", "--dsn", dsn}, args...), cmd.IO{Out: &out, Err: &errb,
			Getenv: func(string) string { return "" }})
		return code, out.String(), errb.String()
	}
	version := func() int32 {
		v, err := migrations.Version(ctx, admin, "public")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// quote_ident's quoting: the name needs none.
	fixes := []string{`REVOKE CREATE ON SCHEMA "public" FROM PUBLIC;`, `REVOKE CREATE ON SCHEMA "public" FROM ` + name + `;`}
	code, _, stderr := migrate()
	if code != cmd.ExitFailure {
		t.Fatalf("migrate of a schema everyone may create in: exit %d, want %d (%s)", code, cmd.ExitFailure, stderr)
	}
	for _, want := range append(fixes, "PUBLIC, "+name, "--allow-schema-create", "nothing was changed") {
		if !strings.Contains(stderr, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, stderr)
		}
	}
	if v := version(); v != 0 {
		t.Fatalf("version %d after the refusal, want 0", v)
	}

	code, _, stderr = migrate("--allow-schema-create")
	if n, err := migrations.Count(); code != cmd.ExitOK || err != nil || int(version()) != n {
		t.Fatalf("migrate --allow-schema-create: exit %d (%s), version %d of %d", code, stderr, version(), n)
	}
	for _, want := range append(fixes, "warning") {
		if !strings.Contains(stderr, want) {
			t.Errorf("the warning does not say %q:\n%s", want, stderr)
		}
	}

	if _, err := admin.Exec(ctx, fixes[0]+fixes[1]); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := migrate()
	if code != cmd.ExitOK || stderr != "" || !strings.Contains(stdout, "up to date") {
		t.Fatalf("migrate after the revocation: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestPrintedGrantsRefuseASchemaOthersMayCreateIn: the printed grants fail, in
// the database they are applied to, while roles other than the owner may create
// in the schema, and grant nothing (the statements run as one).
func TestPrintedGrantsRefuseASchemaOthersMayCreateIn(t *testing.T) {
	t.Parallel()
	b := setup(t, "console")
	if _, err := b.admin.Exec(b.ctx, `GRANT CREATE ON SCHEMA public TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := cmd.Run(b.ctx, []string{"grants", "--role", "operator", "--to", b.role}, cmd.IO{Out: &out, Err: &errb,
		Getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("grants: %s", errb.String())
	}
	_, err := b.admin.Exec(b.ctx, out.String())
	if err == nil || !strings.Contains(err.Error(), `lets PUBLIC create objects in it`) {
		t.Fatalf("the printed grants on a schema everyone may create in: %v", err)
	}
	var may bool
	if err := b.admin.QueryRow(b.ctx, `SELECT has_function_privilege($1, 'outboxtop_retry(text, text, uuid[], text[], jsonb)', 'EXECUTE')`,
		b.role).Scan(&may); err != nil || may {
		t.Errorf("the refused grants gave the operator's EXECUTE anyway (%v)", err)
	}
}
