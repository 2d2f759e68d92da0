package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/migrations"
)

// grantRoles are the least-privilege roles outboxtop documents (SECURITY.md), each
// the privileges its statements need and no more. Table-level SELECT on
// outbox_event is given where the payload is read anyway; writes are column-level
// where the role only updates some columns.
var grantRoles = []struct {
	name, summary string
	grants        []string // %[1]s is the schema, %[2]s the grantee, both quoted
}{
	{"relay", "outboxtop --headless (and the console's embedded relay): claim, publish, mark, back off", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT ON %[1]s.outbox_event, %[1]s.outboxtop_schema_version TO %[2]s;",
		"GRANT UPDATE (lease_token, lease_until, attempts, available_at, last_error, failed_at,\n" +
			"              published_at, kafka_topic, kafka_partition, kafka_offset)\n" +
			"    ON %[1]s.outbox_event TO %[2]s;",
		"-- Only with --archive-after / --archive-retention (the relay then moves and deletes rows):",
		"-- GRANT DELETE ON %[1]s.outbox_event TO %[2]s;",
		"-- GRANT SELECT, INSERT, UPDATE, DELETE ON %[1]s.outbox_event_archive TO %[2]s;",
	}},
	{"console", "a read-only console or status check (outboxtop --no-relay --read-only, status, events)", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT ON %[1]s.outbox_event, %[1]s.outbox_event_archive, %[1]s.consumed_event,\n" +
			"    %[1]s.outbox_audit, %[1]s.outboxtop_schema_version TO %[2]s;",
	}},
	{"operator", "the console and the triage actions (retry, reset-lease, park, skip, archive, replay)", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT ON %[1]s.outbox_event, %[1]s.outbox_event_archive, %[1]s.consumed_event,\n" +
			"    %[1]s.outbox_audit, %[1]s.outboxtop_schema_version TO %[2]s;",
		"-- retry, reset-lease, park: these columns; replay, archive, skip: move rows between the tables",
		"GRANT UPDATE (available_at, lease_token, lease_until, attempts, failed_at, last_error)\n" +
			"    ON %[1]s.outbox_event TO %[2]s;",
		"GRANT INSERT, DELETE ON %[1]s.outbox_event TO %[2]s;",
		"GRANT INSERT, UPDATE, DELETE ON %[1]s.outbox_event_archive TO %[2]s;",
		"-- every action writes its audit row; nothing else may change the audit trail",
		"GRANT INSERT ON %[1]s.outbox_audit TO %[2]s;",
	}},
	{"producer", "the application that writes events with package outbox", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT INSERT ON %[1]s.outbox_event TO %[2]s;",
	}},
	{"consumer", "a consumer's inbox (package inbox), when consumed_event lives in this schema", []string{
		"GRANT USAGE ON SCHEMA %[1]s TO %[2]s;",
		"GRANT SELECT, INSERT, DELETE ON %[1]s.consumed_event TO %[2]s;",
	}},
}

func grantRoleNames() string {
	var names []string
	for _, r := range grantRoles {
		names = append(names, r.name)
	}
	return strings.Join(names, ", ")
}

// GrantSQL returns the GRANT statements for role (relay, console, operator, producer
// or consumer) on schema's tables, granted to grantee.
func GrantSQL(role, schema, grantee string) (string, error) {
	if err := migrations.ValidateSchema(schema); err != nil {
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
		fmt.Fprintf(&b, "-- Create the role first, e.g. CREATE ROLE %s LOGIN PASSWORD '…'; LISTEN/NOTIFY and\n",
			pgx.Identifier{grantee}.Sanitize())
		fmt.Fprintf(&b, "-- advisory locks need no grant. See SECURITY.md.\n")
		s, g := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{grantee}.Sanitize()
		for _, stmt := range r.grants {
			if !strings.Contains(stmt, "%[") {
				b.WriteString(stmt + "\n")
				continue
			}
			fmt.Fprintf(&b, stmt, s, g)
			b.WriteByte('\n')
		}
		if role == "console" || role == "operator" {
			fmt.Fprintf(&b, "-- Optional: the Health panel's oldest-xmin holder among other roles' sessions\n")
			fmt.Fprintf(&b, "-- needs pg_read_all_stats (part of pg_monitor); without it that line is left out.\n")
			fmt.Fprintf(&b, "-- GRANT pg_monitor TO %s;\n", g)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown role %q (one of %s)", role, grantRoleNames())
}

func runGrants(_ context.Context, args []string, io IO) error {
	fs := newFlagSet("grants", io)
	role := fs.String("role", "", "which role's grants to print: "+grantRoleNames()+" (required)")
	schema := fs.String("schema", migrations.DefaultSchema, "schema holding outboxtop's tables")
	to := fs.String("to", "", "the PostgreSQL role to grant to (default outboxtop_<role>)")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if *role == "" {
		return usagef("--role is required: one of %s", grantRoleNames())
	}
	grantee := *to
	if grantee == "" {
		grantee = "outboxtop_" + *role
	}
	sql, err := GrantSQL(*role, *schema, grantee)
	if err != nil {
		return usagef("%v", err)
	}
	_, err = io.Out.Write([]byte(sql))
	return err
}
