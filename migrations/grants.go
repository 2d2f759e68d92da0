package migrations

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/wire"
)

// grantRoles are the least-privilege roles outboxtop documents (SECURITY.md), each
// the privileges its statements need and no more. Table-level SELECT on
// outbox_event is given where the payload is read anyway; writes are column-level,
// so no role can set a column its code does not write (seq, a lease, a failure or
// a publication). Operators change rows only through the action functions
// (functions/), which audit every call; no role may write outbox_audit or the
// archive directly, and none may write outbox_relay: relays beat through
// outboxtop_relay_beat, which sets the time and the role itself.
var grantRoles = []struct {
	name, summary string
	grants        []string // %[1]s is the schema, %[2]s the grantee, both quoted
}{
	{"relay", "outboxtop --headless (and the console's embedded relay): claim, publish, mark, back off", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT ON %[1]s.outbox_event, %[1]s.outboxtop_schema_version TO %[2]s;",
		"-- only the columns claim, mark and settle write (unserialized: an order the relay found unknown)",
		"GRANT UPDATE (lease_token, lease_until, lease_holder, attempts, available_at, last_error, failed_at,\n" +
			"              published_at, kafka_topic, kafka_partition, kafka_offset, blocked, unserialized)\n" +
			"    ON %[1]s.outbox_event TO %[2]s;",
		"-- wake-ups: how many events were inserted (reads the identity of seq, never the table)",
		"GRANT EXECUTE ON FUNCTION %[1]s.outboxtop_inserted() TO %[2]s;",
		"-- the history of tries that did not end published: added, never changed or removed",
		"GRANT INSERT (event_id, attempt, lease_holder, class, outcome, error, kafka_code, backoff_ms)\n" +
			"    ON %[1]s.outbox_attempt TO %[2]s;",
		"-- the heartbeat (outbox_relay), through a function that sets the time and role itself",
		"GRANT EXECUTE ON FUNCTION %[1]s.outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)\n" +
			"    TO %[2]s;",
		"-- Only with --archive-after / --archive-retention (batches through two functions;",
		"-- the role gets no write on the archive):",
		"-- GRANT EXECUTE ON FUNCTION %[1]s.outboxtop_archive_published(interval, integer),",
		"--     %[1]s.outboxtop_delete_archived(interval, integer) TO %[2]s;",
	}},
	{"console", "a read-only console or status check (outboxtop --no-relay --read-only, status, events)", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT ON %[1]s.outbox_event, %[1]s.outbox_event_archive, %[1]s.consumed_event,\n" +
			"    %[1]s.outbox_audit, %[1]s.outbox_attempt, %[1]s.outbox_relay, %[1]s.outboxtop_schema_version TO %[2]s;",
	}},
	{"operator", "the console and the triage actions (retry, reset-lease, park, skip, archive, replay, correct)", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT ON %[1]s.outbox_event, %[1]s.outbox_event_archive, %[1]s.consumed_event,\n" +
			"    %[1]s.outbox_audit, %[1]s.outbox_attempt, %[1]s.outbox_relay, %[1]s.outboxtop_schema_version TO %[2]s;",
		"-- Actions only through these functions: each re-checks the events' state and",
		"-- writes one audit row in the same transaction. No write privilege on any table.",
		"GRANT EXECUTE ON FUNCTION\n" +
			"    %[1]s.outboxtop_retry(text, text, uuid[], text[], jsonb),\n" +
			"    %[1]s.outboxtop_reset_lease(text, text, uuid[], text[], jsonb),\n" +
			"    %[1]s.outboxtop_park(text, text, uuid[], text[], jsonb),\n" +
			"    %[1]s.outboxtop_skip(text, text, uuid[], text[], jsonb),\n" +
			"    %[1]s.outboxtop_archive(text, text, uuid[], jsonb, bigint),\n" +
			"    %[1]s.outboxtop_replay(text, text, uuid[], text[], jsonb, boolean),\n" +
			"    %[1]s.outboxtop_correct(text, text, uuid, jsonb, jsonb),\n" +
			"    %[1]s.outboxtop_audit_relay(text, text),\n" +
			"    %[1]s.outboxtop_audit_terminate(text, text, jsonb)\n" +
			"    TO %[2]s;",
		"-- Ending the backend that holds the xmin horizon (console T, terminate-backend)",
		"-- goes through outboxtop_audit_terminate, which signals it and audits only a",
		"-- backend that exited, under PostgreSQL's rule for this role: its own backends,",
		"-- and other roles' with pg_signal_backend, which also lets the role end any",
		"-- non-superuser backend of the whole cluster, every database, with or without",
		"-- outboxtop (only outboxtop writes an audit row); never a superuser's. Re-checking",
		"-- another role's backend before the signal needs pg_read_all_stats (pg_monitor).",
		"-- Without them the action is refused with what is missing. The function's owner",
		"-- (the role that ran migrate) sends the signal: it must be a superuser or hold",
		"-- pg_signal_backend and pg_read_all_stats too.",
		"-- GRANT pg_signal_backend TO %[2]s;",
	}},
	{"producer", "the application that writes events with package outbox", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"-- only the columns a writer sets: never seq, a lease, a failure or a publication",
		"GRANT INSERT (event_id, aggregate_type, aggregate_id, event_type, payload, topic, headers, available_at)\n" +
			"    ON %[1]s.outbox_event TO %[2]s;",
	}},
	{"consumer", "a consumer's inbox (package inbox), when consumed_event lives in this schema", []string{
		"-- On an inbox outboxtop's migrate created, row-level security: the role sees",
		"-- and changes only the rows whose consumer_name is the role's own name, so",
		"-- grant to a role named after the consumer (--to billing for an inbox whose",
		"-- consumer name is \"billing\"). An inbox the application had before, which",
		"-- migrate adopted, keeps the row security the application gave it.",
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT, INSERT ON %[1]s.consumed_event TO %[2]s;",
		"-- Pruning through a function, of the inbox named after the role only (no",
		"-- DELETE: a table-level DELETE would let the role LOCK the table in ACCESS",
		"-- EXCLUSIVE mode and stop every other inbox).",
		"GRANT EXECUTE ON FUNCTION %[1]s.outboxtop_inbox_prune(text, timestamptz, integer) TO %[2]s;",
	}},
}

// GrantRoleNames lists the roles GrantSQL knows, for messages.
func GrantRoleNames() string {
	var names []string
	for _, r := range grantRoles {
		names = append(names, r.name)
	}
	return strings.Join(names, ", ")
}

// GrantSQL returns the GRANT statements for role (relay, console, operator, producer
// or consumer) on schema's tables, granted to grantee.
func GrantSQL(role, schema, grantee string) (string, error) {
	if err := wire.ValidateSchema(schema); err != nil {
		return "", err
	}
	if grantee == "" {
		return "", fmt.Errorf("empty grantee")
	}
	for _, r := range grantRoles {
		if r.name != role {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "-- outboxtop %s: %s\n", r.name, r.summary)
		fmt.Fprintf(&b, "-- Create the role first, e.g. CREATE ROLE %s LOGIN PASSWORD '…'; advisory locks\n",
			pgx.Identifier{grantee}.Sanitize())
		fmt.Fprintf(&b, "-- need no grant. See SECURITY.md.\n")
		s, g := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{grantee}.Sanitize()
		// Start from nothing, so the output is the role's whole privilege set: an
		// earlier outboxtop printed table-level writes for operators and producers,
		// and grants only add up.
		fmt.Fprintf(&b, "-- Start from nothing: removes what earlier grants gave on these tables.\n")
		fmt.Fprintf(&b, "REVOKE ALL ON %[1]s.outbox_event, %[1]s.outbox_event_archive, %[1]s.outbox_audit,\n"+
			"    %[1]s.outbox_attempt, %[1]s.consumed_event, %[1]s.outbox_relay, %[1]s.outboxtop_schema_version FROM %[2]s;\n", s, g)
		fmt.Fprintf(&b, "REVOKE CREATE ON SCHEMA %s FROM %s;\n", s, g)
		b.WriteString(schemaCreateCheck(schema))
		for _, stmt := range r.grants {
			if !strings.Contains(stmt, "%[") {
				b.WriteString(stmt + "\n")
				continue
			}
			fmt.Fprintf(&b, stmt, s, g)
			b.WriteByte('\n')
		}
		if role == "console" || role == "operator" {
			fmt.Fprintf(&b, "-- Optional: the xmin horizon's holders among other roles' sessions show their\n")
			fmt.Fprintf(&b, "-- state, client and transaction age with pg_read_all_stats (part of pg_monitor);\n")
			fmt.Fprintf(&b, "-- without it those are shown as hidden.\n")
			fmt.Fprintf(&b, "-- GRANT pg_monitor TO %s;\n", g)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown role %q (one of %s)", role, GrantRoleNames())
}

// schemaCreateCheck is a DO block that fails, naming who and the statements that
// fix it, when roles other than the owner may create objects in schema (see
// SchemaCreators), and warns the same way of every other schema on a
// search_path of the database (PathCreators): the printed grants are applied by
// the owner, in the database, so the check runs where the privileges are.
// Everything in it is qualified: it runs with the applying session's
// search_path.
func schemaCreateCheck(schema string) string {
	lit := quoteLiteral(schema)
	return "-- The schema must let no role but its owner create objects in it: one that can\n" +
		"-- could make outboxtop's SECURITY DEFINER functions run its code as their owner.\n" +
		"-- Nor should a schema on a search_path of the database (a warning): one that can\n" +
		"-- could make the sessions that keep that path run its code in place of a built-in.\n" +
		"DO $check$\n" +
		"DECLARE\n" +
		"    s text;\n" +
		"    who text[];\n" +
		"BEGIN\n" +
		"    FOR s, who IN SELECT c.schema, pg_catalog.array_agg(c.who ORDER BY c.who <> 'PUBLIC', c.who) FROM (\n" +
		"            " + creatorsSQL("ARRAY(SELECT p FROM pg_catalog.unnest("+pathSchemasSQL+") p WHERE p <> "+lit+")") + "\n" +
		"            ) c(schema, who) GROUP BY c.schema ORDER BY c.schema LOOP\n" +
		"        RAISE WARNING 'schema % lets % create objects in it, and it is on a search_path of this database: such a role could run its code in the sessions that keep that path (outboxtop''s own set search_path to pg_catalog, pg_temp)',\n" +
		"            pg_catalog.quote_ident(s), pg_catalog.array_to_string(who, ', ')\n" +
		"            USING HINT = 'As the schema''s owner: ' || (SELECT pg_catalog.string_agg(\n" +
		"                'REVOKE CREATE ON SCHEMA ' || pg_catalog.quote_ident(s) || ' FROM ' || w || ';', ' ')\n" +
		"                FROM pg_catalog.unnest(who) w);\n" +
		"    END LOOP;\n" +
		"    SELECT pg_catalog.array_agg(c.who ORDER BY c.who <> 'PUBLIC', c.who) INTO who FROM (\n" +
		"            " + creatorsSQL("ARRAY["+lit+"]") + "\n" +
		"            ) c(schema, who);\n" +
		"    IF who IS NOT NULL THEN\n" +
		"        RAISE EXCEPTION 'schema % lets % create objects in it: such a role could run its code as the owner of outboxtop''s functions',\n" +
		"            pg_catalog.quote_ident(" + lit + "), pg_catalog.array_to_string(who, ', ')\n" +
		"            USING HINT = 'As the schema''s owner: ' || (SELECT pg_catalog.string_agg(\n" +
		"                'REVOKE CREATE ON SCHEMA ' || pg_catalog.quote_ident(" + lit + ") || ' FROM ' || w || ';', ' ')\n" +
		"                FROM pg_catalog.unnest(who) w);\n" +
		"    END IF;\n" +
		"END\n" +
		"$check$;\n"
}
