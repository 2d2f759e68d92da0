package migrations

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// wantColumns are the types outboxtop's statements rely on, for tables that may
// exist before the first migrate (made by hand from the seed's DDL, or by an
// earlier outboxtop). A column that is absent is added by the migrations; one
// that exists with another type would make migrate report success and a later
// command fail (payload text: archive failed with a type error), so migrate
// refuses it up front.
var wantColumns = map[string][][2]string{
	"outbox_event": {
		{"event_id", "uuid"}, {"aggregate_type", "text"}, {"aggregate_id", "text"}, {"event_type", "text"},
		{"payload", "jsonb"}, {"created_at", "timestamp with time zone"}, {"available_at", "timestamp with time zone"},
		{"attempts", "integer"}, {"lease_token", "uuid"}, {"lease_until", "timestamp with time zone"},
		{"published_at", "timestamp with time zone"}, {"seq", "bigint"}, {"topic", "text"}, {"headers", "jsonb"},
		{"last_error", "text"}, {"failed_at", "timestamp with time zone"}, {"kafka_topic", "text"},
		{"kafka_partition", "integer"}, {"kafka_offset", "bigint"}, {"replay_of", "uuid"}, {"blocked", "boolean"},
		{"lease_holder", "text"}, {"ready_xid", "xid8"},
	},
	"consumed_event": {
		{"consumer_name", "text"}, {"event_id", "uuid"}, {"consumed_at", "timestamp with time zone"},
	},
	"outbox_event_archive": {
		{"event_id", "uuid"}, {"payload", "jsonb"}, {"seq", "bigint"}, {"headers", "jsonb"},
		{"published_at", "timestamp with time zone"}, {"archived_at", "timestamp with time zone"},
		{"lease_holder", "text"},
	},
	"outbox_relay": {
		{"holder", "text"}, {"state", "text"}, {"seen_at", "timestamp with time zone"},
		{"started_at", "timestamp with time zone"}, {"interval_ms", "integer"}, {"in_flight", "integer"},
	},
	"outbox_audit": {
		{"audit_id", "bigint"}, {"actor", "text"}, {"action", "text"}, {"filter", "jsonb"},
		{"event_ids", "uuid[]"}, {"rows", "integer"},
	},
}

var checkedTables = []string{"outbox_event", "consumed_event", "outbox_event_archive", "outbox_audit", "outbox_relay"}

// checkColumns compares the existing tables' column types with wantColumns and
// names every mismatch.
func checkColumns(ctx context.Context, conn *pgx.Conn, schema string) error {
	rows, err := conn.Query(ctx, `SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = ANY($2) AND a.attnum > 0 AND NOT a.attisdropped`,
		schema, checkedTables)
	if err != nil {
		return fmt.Errorf("reading the existing tables' columns: %w", err)
	}
	have := map[string]string{}
	for rows.Next() {
		var table, column, typ string
		if err := rows.Scan(&table, &column, &typ); err != nil {
			rows.Close()
			return err
		}
		have[table+"."+column] = typ
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var bad []string
	for _, table := range checkedTables {
		for _, c := range wantColumns[table] {
			if got, ok := have[table+"."+c[0]]; ok && got != c[1] {
				bad = append(bad, fmt.Sprintf("%s.%s is %s, outboxtop needs %s", table, c[0], got, c[1]))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("schema %q has tables outboxtop cannot use: %s. Change the column types "+
			"(e.g. ALTER TABLE %s.outbox_event ALTER COLUMN payload TYPE jsonb USING payload::jsonb) "+
			"or use another --schema; nothing was changed", schema, strings.Join(bad, "; "), pgx.Identifier{schema}.Sanitize())
	}
	return nil
}
