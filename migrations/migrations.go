// Package migrations holds outboxtop's schema as numbered, embedded SQL files and
// applies them. It is the only place the schema is defined.
//
// Apply is idempotent and safe to run from several processes at once: it takes a
// session advisory lock (per schema) before touching anything, and each file is
// written so that it also upgrades a seed-style outbox_event that an application
// created by hand, keeping its rows. Files are tern migrations; the version table is
// <schema>.outboxtop_schema_version.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// DefaultSchema is the schema used when none is configured.
const DefaultSchema = "public"

// VersionTable is the table, inside the schema, that records applied migrations.
const VersionTable = "outboxtop_schema_version"

var schemaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)

// ValidateSchema reports whether name can be used as outboxtop's schema. Names are
// restricted to plain identifiers so that the NOTIFY channel and log lines stay
// unambiguous.
func ValidateSchema(name string) error {
	if !schemaName.MatchString(name) {
		return fmt.Errorf("invalid schema name %q: use letters, digits and _ (at most 63, not starting with a digit)", name)
	}
	return nil
}

// Channel is the LISTEN/NOTIFY channel on which inserts into schema's outbox_event
// are announced.
func Channel(schema string) string { return "outboxtop_" + schema }

// Count is the number of migrations embedded in this binary.
func Count() int {
	names, _ := migrate.FindMigrations(files)
	return len(names)
}

// Apply creates or upgrades outboxtop's tables in schema (created if missing) and
// returns the schema version reached. onStart, when not nil, is told about each
// migration as it starts.
func Apply(ctx context.Context, conn *pgx.Conn, schema string, onStart func(version int32, name string)) (int32, error) {
	if err := ValidateSchema(schema); err != nil {
		return 0, err
	}
	lock := lockKey(schema)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lock); err != nil {
		return 0, fmt.Errorf("taking migration lock: %w", err)
	}
	defer func() {
		// A fresh context: the caller's may be cancelled, and a session lock left
		// behind would block the next migrate until the connection closes.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lock)
	}()

	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return 0, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	m, err := migrate.NewMigrator(ctx, conn, pgx.Identifier{schema, VersionTable}.Sanitize())
	if err != nil {
		return 0, fmt.Errorf("preparing migrations: %w", err)
	}
	m.Data = map[string]any{
		"schema":  ident,
		"channel": quoteLiteral(Channel(schema)),
	}
	if err := m.LoadMigrations(files); err != nil {
		return 0, fmt.Errorf("loading migrations: %w", err)
	}
	if onStart != nil {
		m.OnStart = func(seq int32, name, _, _ string) { onStart(seq, name) }
	}
	if err := m.Migrate(ctx); err != nil {
		var pgErr migrate.MigrationPgError
		if errors.As(err, &pgErr) {
			return 0, fmt.Errorf("migration %s: %w", pgErr.MigrationName, pgErr.PgError)
		}
		return 0, fmt.Errorf("migrating: %w", err)
	}
	v, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading schema version: %w", err)
	}
	return v, nil
}

// Version returns the schema version recorded in schema, or 0 when outboxtop's
// migrations were never applied there.
func Version(ctx context.Context, conn *pgx.Conn, schema string) (int32, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL",
		pgx.Identifier{schema, VersionTable}.Sanitize()).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int32
	err := conn.QueryRow(ctx, "SELECT version FROM "+pgx.Identifier{schema, VersionTable}.Sanitize()).Scan(&v)
	return v, err
}

func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("outboxtop.migrate." + schema))
	return int64(h.Sum64())
}

func quoteLiteral(s string) string {
	// Schema names are validated to plain identifiers, so no quote can occur; keep
	// the escaping anyway so this never becomes an injection point.
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
