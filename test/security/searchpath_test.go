package security

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// planted is what a role with no outboxtop grant creates in public when
// everyone may create there (PostgreSQL's default before 15): for built-ins
// outboxtop's statements use, an overload with exactly the call's types, which
// PostgreSQL prefers to pg_catalog's polymorphic one though pg_catalog is
// searched first. Each writes to the attacker's table when it runs, then
// answers as the built-in would.
const planted = `
CREATE TABLE public.planted_ran (what text, who text DEFAULT current_user);
GRANT INSERT ON public.planted_ran TO PUBLIC;
CREATE FUNCTION public.planted(what text) RETURNS void LANGUAGE sql AS
	$$INSERT INTO public.planted_ran (what) VALUES (what)$$;
CREATE FUNCTION public.planted_agg(s text[], x text) RETURNS text[] LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('array_agg(text)'); RETURN pg_catalog.array_append(s, x); END$$;
CREATE AGGREGATE public.array_agg(text) (SFUNC = public.planted_agg, STYPE = text[]);
CREATE FUNCTION public.planted_agg(s bigint[], x bigint) RETURNS bigint[] LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('array_agg(bigint)'); RETURN pg_catalog.array_append(s, x); END$$;
CREATE AGGREGATE public.array_agg(bigint) (SFUNC = public.planted_agg, STYPE = bigint[]);
CREATE FUNCTION public.planted_agg(s uuid[], x uuid) RETURNS uuid[] LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('array_agg(uuid)'); RETURN pg_catalog.array_append(s, x); END$$;
CREATE AGGREGATE public.array_agg(uuid) (SFUNC = public.planted_agg, STYPE = uuid[]);
CREATE FUNCTION public.unnest(a text[]) RETURNS SETOF text LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('unnest(text[])'); RETURN QUERY SELECT pg_catalog.unnest(a); END$$;
CREATE FUNCTION public.unnest(a uuid[]) RETURNS SETOF uuid LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('unnest(uuid[])'); RETURN QUERY SELECT pg_catalog.unnest(a); END$$;
CREATE FUNCTION public.unnest(a bigint[]) RETURNS SETOF bigint LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('unnest(bigint[])'); RETURN QUERY SELECT pg_catalog.unnest(a); END$$;
CREATE FUNCTION public.cardinality(a text[]) RETURNS integer LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('cardinality(text[])'); RETURN pg_catalog.cardinality(a); END$$;
CREATE FUNCTION public.cardinality(a uuid[]) RETURNS integer LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('cardinality(uuid[])'); RETURN pg_catalog.cardinality(a); END$$;
CREATE FUNCTION public.planted_get(j jsonb, k jsonb) RETURNS jsonb LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('jsonb -> jsonb'); RETURN j OPERATOR(pg_catalog.->) (k OPERATOR(pg_catalog.#>>) '{}'); END$$;
CREATE OPERATOR public.-> (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = public.planted_get);
CREATE FUNCTION public.planted_get_text(j jsonb, k jsonb) RETURNS text LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('jsonb ->> jsonb'); RETURN j OPERATOR(pg_catalog.->>) (k OPERATOR(pg_catalog.#>>) '{}'); END$$;
CREATE OPERATOR public.->> (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = public.planted_get_text);
CREATE FUNCTION public.planted_cat(a text[], b text[]) RETURNS text[] LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('text[] || text[]'); RETURN pg_catalog.array_cat(a, b); END$$;
CREATE OPERATOR public.|| (LEFTARG = text[], RIGHTARG = text[], FUNCTION = public.planted_cat);
CREATE FUNCTION public.planted_cat(a uuid[], b uuid[]) RETURNS uuid[] LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('uuid[] || uuid[]'); RETURN pg_catalog.array_cat(a, b); END$$;
CREATE OPERATOR public.|| (LEFTARG = uuid[], RIGHTARG = uuid[], FUNCTION = public.planted_cat);
CREATE FUNCTION public.planted_cat(a text, b bigint) RETURNS text LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('text || bigint'); RETURN pg_catalog.textcat(a, b::text); END$$;
CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = public.planted_cat);
CREATE FUNCTION public.planted_cat(a text, b integer) RETURNS text LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('text || integer'); RETURN pg_catalog.textcat(a, b::text); END$$;
CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = integer, FUNCTION = public.planted_cat);
CREATE FUNCTION public.planted_eq(a text[], b text[]) RETURNS boolean LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('text[] = text[]'); RETURN a OPERATOR(pg_catalog.=) b; END$$;
CREATE OPERATOR public.= (LEFTARG = text[], RIGHTARG = text[], FUNCTION = public.planted_eq);
CREATE FUNCTION public.planted_eq(a uuid[], b uuid[]) RETURNS boolean LANGUAGE plpgsql AS
	$$BEGIN PERFORM public.planted('uuid[] = uuid[]'); RETURN a OPERATOR(pg_catalog.=) b; END$$;
CREATE OPERATOR public.= (LEFTARG = uuid[], RIGHTARG = uuid[], FUNCTION = public.planted_eq);
`

// plantedProbes are unqualified uses on the default search_path that pick each
// planted object: they prove it would be chosen (else it proves nothing).
var plantedProbes = []string{
	`SELECT array_agg(x) FROM (VALUES ('a'::text)) v(x)`,
	`SELECT array_agg(x) FROM (VALUES (1::bigint)) v(x)`,
	`SELECT array_agg(x) FROM (VALUES (gen_random_uuid())) v(x)`,
	`SELECT * FROM unnest('{a}'::text[])`,
	`SELECT * FROM unnest('{00000000-0000-4000-8000-000000000001}'::uuid[])`,
	`SELECT * FROM unnest('{1}'::bigint[])`,
	`SELECT cardinality('{a}'::text[])`,
	`SELECT cardinality('{}'::uuid[])`,
	`SELECT '{"pid": 1}'::jsonb -> '"pid"'`,
	`SELECT '{"pid": 1}'::jsonb ->> '"pid"'`,
	`SELECT '{a}'::text[] || '{b}'::text[]`,
	`SELECT '{}'::uuid[] || '{}'::uuid[]`,
	`SELECT 'n' || 1::bigint`,
	`SELECT 'n' || 1`,
	`SELECT '{a}'::text[] = '{a}'::text[]`,
	`SELECT '{}'::uuid[] = '{}'::uuid[]`,
}

// TestPlantedOverloadsNeverRunInOutboxtopsSessions: with outboxtop's tables in
// schema outbox and public open to every role, a role with no outboxtop grant
// plants exact-type overloads of array_agg, unnest, cardinality, ->, ->>, ||
// and = in public. The relay (claiming and publishing under the relay grants),
// the operator's dry run, park and retry, the events listing, status and
// terminate-backend (under the operator grants) and migrate (as the owner)
// never run them, and do what they should, though their connection strings
// and roles put public first on the search_path.
func TestPlantedOverloadsNeverRunInOutboxtopsSessions(t *testing.T) {
	t.Parallel()
	b := setupIn(t, "operator", "outbox")
	relayRole, relayName := b.login(t, "relay")
	relayRole.Close()
	victims, _ := b.login(t, "producer")
	attacker := "outboxtop_attacker_" + randomHex(4)
	if _, err := b.admin.Exec(b.ctx, `GRANT CREATE ON SCHEMA public TO PUBLIC;
		CREATE ROLE `+pgx.Identifier{attacker}.Sanitize()+` LOGIN PASSWORD '`+rolePassword+`'`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = b.admin.Exec(context.Background(), "DROP OWNED BY "+pgx.Identifier{attacker}.Sanitize()+"; DROP ROLE "+pgx.Identifier{attacker}.Sanitize())
	})
	as, err := pgx.Connect(b.ctx, roleDSN(t, b.dsn, attacker))
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close(b.ctx)
	if _, err := as.Exec(b.ctx, planted); err != nil {
		t.Fatalf("the attacker plants its overloads: %v", err)
	}
	ran := func() string {
		t.Helper()
		var s string
		if err := b.admin.QueryRow(b.ctx, `SELECT coalesce(pg_catalog.string_agg(what || ' as ' || who, ', '), '') FROM public.planted_ran`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, probe := range plantedProbes {
		if _, err := as.Exec(b.ctx, probe); err != nil {
			t.Fatalf("%s: %v", probe, err)
		}
		if ran() == "" {
			t.Fatalf("%s: the planted overload was not chosen, so it proves nothing", probe)
		}
		if _, err := as.Exec(b.ctx, `DELETE FROM public.planted_ran`); err != nil {
			t.Fatal(err)
		}
	}
	step := func(what string) {
		t.Helper()
		if s := ran(); s != "" {
			t.Errorf("%s ran the planted code: %s", what, s)
			if _, err := b.admin.Exec(b.ctx, `DELETE FROM public.planted_ran`); err != nil {
				t.Fatal(err)
			}
		}
	}
	outboxtop := func(dsn string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		defer cancel()
		code, out := run(t, ctx, nil, append(args, "--dsn", dsn, "--schema", "outbox")...)
		return code, out
	}
	// Whatever the connection strings and the roles say about the search_path.
	operator := withParam(t, roleDSN(t, b.dsn, b.role), "search_path", "public")
	relayDSN := withParam(t, roleDSN(t, b.dsn, relayName), "options", "-csearch_path=public")
	if _, err := b.admin.Exec(b.ctx, `ALTER ROLE `+pgx.Identifier{relayName}.Sanitize()+` SET search_path = public, pg_catalog;
		ALTER ROLE `+pgx.Identifier{b.role}.Sanitize()+` SET search_path = public, pg_catalog`); err != nil {
		t.Fatal(err)
	}
	count := func(where string) int {
		t.Helper()
		var n int
		if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox.outbox_event WHERE `+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(id string, n int) {
		t.Helper()
		if _, err := b.admin.Exec(b.ctx, `INSERT INTO outbox.outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', $1, 'Tested', jsonb_build_object('n', g) FROM generate_series(1, $2) g`, id, n); err != nil {
			t.Fatal(err)
		}
	}

	// The relay claims and publishes under its grants.
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.order")
	insert("o-1", 3)
	insert("o-2", 3)
	code, out := outboxtop(relayDSN, "--headless", "--drain", "--brokers", strings.Join(k.Brokers, ","),
		"--topic-template", k.Prefix+"outbox.{aggregate_type}", "--log-level", "warn", "--shutdown-timeout", "5s")
	if code != cmd.ExitOK {
		t.Fatalf("the relay: exit %d:\n%s", code, out)
	}
	step("the relay")
	if n := count(`published_at IS NOT NULL AND kafka_offset IS NOT NULL`); n != 6 {
		t.Errorf("the relay published %d events with their offsets, want 6", n)
	}
	k.Consume(t, 6, time.Minute, k.Prefix+"outbox.order")

	// The operator's dry run, park and retry; the listing and status.
	insert("f-1", 3)
	insert("p-1", 2)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox.outbox_event SET failed_at = now(), last_error = 'boom', attempts = 10
		WHERE aggregate_id = 'f-1'`); err != nil {
		t.Fatal(err)
	}
	if code, out := outboxtop(operator, "retry", "--all", "--from", "failed", "--dry-run"); code != cmd.ExitOK || !strings.Contains(out, "3") {
		t.Errorf("retry --all --from failed --dry-run: exit %d:\n%s", code, out)
	}
	step("retry --dry-run")
	if n := count(`failed_at IS NOT NULL`); n != 3 {
		t.Errorf("%d failed events after the dry run, want 3", n)
	}
	if code, out := outboxtop(operator, "park", "--aggregate-id", "p-1", "--reason", "held", "--yes", "--actor", "carol"); code != cmd.ExitOK {
		t.Errorf("park: exit %d:\n%s", code, out)
	}
	step("park")
	if code, out := outboxtop(operator, "retry", "--aggregate-id", "f-1", "--from", "failed", "--yes", "--actor", "carol"); code != cmd.ExitOK {
		t.Errorf("retry: exit %d:\n%s", code, out)
	}
	step("retry")
	if n := count(`aggregate_id = 'p-1' AND failed_at IS NOT NULL`) + count(`aggregate_id = 'f-1' AND failed_at IS NULL`); n != 5 {
		t.Errorf("%d of 5 events parked or retried", n)
	}
	if code, out := outboxtop(operator, "events", "--state", "failed", "--payload", "n=1"); code != cmd.ExitOK || !strings.Contains(out, "p-1") {
		t.Errorf("events --payload: exit %d:\n%s", code, out)
	}
	step("events")
	if code, out := outboxtop(operator, "status", "--json"); code == cmd.ExitUnknown {
		t.Errorf("status: exit %d:\n%s", code, out)
	}
	step("status")

	// terminate-backend, with the grants it needs.
	if _, err := b.admin.Exec(b.ctx, "GRANT pg_signal_backend, pg_read_all_stats TO "+pgx.Identifier{b.role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_, victim := holdHorizon(t, victims)
	if code, out := outboxtop(operator, "terminate-backend", "--pid", fmt.Sprint(victim), "--yes", "--actor", "carol"); code != cmd.ExitOK {
		t.Errorf("terminate-backend: exit %d:\n%s", code, out)
	}
	step("terminate-backend")
	if alive(t, b, victim) {
		t.Errorf("pid %d still running", victim)
	}
	var actions string
	if err := b.admin.QueryRow(b.ctx, `SELECT pg_catalog.string_agg(action || ':' || rows::text || ':' || actor, ' ' ORDER BY audit_id)
		FROM outbox.outbox_audit`).Scan(&actions); err != nil || actions != "park:2:carol retry:3:carol terminate-backend:0:carol" {
		t.Errorf("audit rows %q (%v), want park, retry and terminate-backend by carol", actions, err)
	}

	// migrate, as the owner.
	if code, out := outboxtop(b.dsn, "migrate"); code != cmd.ExitOK {
		t.Errorf("migrate: exit %d:\n%s", code, out)
	}
	step("migrate")
}

// TestMigrateAndGrantsWarnOfASearchPathSchemaOthersMayCreateIn: with
// outboxtop's tables in schema outbox, migrate and the printed grants (applied
// by the owner) warn that public, on the database's default search_path, lets
// PUBLIC create in it, with the REVOKE that fixes it, and go on; a schema set
// on the path with ALTER DATABASE is checked too. Once revoked they say
// nothing.
func TestMigrateAndGrantsWarnOfASearchPathSchemaOthersMayCreateIn(t *testing.T) {
	t.Parallel()
	b := setupIn(t, "console", "outbox")
	var db string
	if err := b.admin.QueryRow(b.ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Exec(b.ctx, `GRANT CREATE ON SCHEMA public TO PUBLIC; CREATE SCHEMA app; GRANT CREATE ON SCHEMA app TO `+
		pgx.Identifier{b.role}.Sanitize()+`; ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET search_path = app, "$user", public`); err != nil {
		t.Fatal(err)
	}
	var grants strings.Builder
	if code := cmd.Run(b.ctx, []string{"grants", "--role", "operator", "--schema", "outbox", "--to", b.role},
		cmd.IO{Out: &grants, Err: &grants, Getenv: func(string) string { return "" }}); code != cmd.ExitOK {
		t.Fatalf("grants: %s", grants.String())
	}
	apply := func() []string {
		t.Helper()
		cfg, err := pgx.ParseConfig(b.dsn)
		if err != nil {
			t.Fatal(err)
		}
		var warnings []string
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			if n.Severity == "WARNING" {
				warnings = append(warnings, n.Message+" HINT: "+n.Hint)
			}
		}
		conn, err := pgx.ConnectConfig(b.ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(b.ctx)
		if _, err := conn.Exec(b.ctx, grants.String()); err != nil {
			t.Fatalf("the printed grants: %v", err)
		}
		return warnings
	}
	migrate := func() string {
		t.Helper()
		code, out := run(t, b.ctx, nil, "migrate", "--dsn", b.dsn, "--schema", "outbox")
		if code != cmd.ExitOK {
			t.Fatalf("migrate: exit %d:\n%s", code, out)
		}
		return out
	}
	warned := strings.Join(apply(), "\n")
	for _, want := range []string{"schema app lets " + b.role, "REVOKE CREATE ON SCHEMA app FROM " + b.role + ";",
		"schema public lets PUBLIC", "REVOKE CREATE ON SCHEMA public FROM PUBLIC;"} {
		if !strings.Contains(warned, want) {
			t.Errorf("the printed grants' warnings do not say %q:\n%s", want, warned)
		}
	}
	out := migrate()
	for _, want := range []string{`schema "app" lets ` + b.role, `REVOKE CREATE ON SCHEMA "app" FROM ` + b.role + ";",
		`schema "public" lets PUBLIC`, `REVOKE CREATE ON SCHEMA "public" FROM PUBLIC;`, "search_path"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate's warnings do not say %q:\n%s", want, out)
		}
	}
	if _, err := b.admin.Exec(b.ctx, `REVOKE CREATE ON SCHEMA public FROM PUBLIC; REVOKE CREATE ON SCHEMA app FROM `+pgx.Identifier{b.role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if w := apply(); len(w) != 0 {
		t.Errorf("the printed grants warn after the revocations: %q", w)
	}
	if out := migrate(); strings.Contains(out, "warning") {
		t.Errorf("migrate warns after the revocations:\n%s", out)
	}
}

// withParam is dsn with the query parameter name set to value.
func withParam(t *testing.T, dsn, name, value string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}
