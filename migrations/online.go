package migrations

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

// Index builds on a table the application already writes.
//
// A plain CREATE INDEX holds its table against writers (SHARE) for as long as
// it reads every row: on an adopted seed table of 50,000 events, or on an
// outbox upgraded with millions, the application's inserts would wait that
// long. So an index a numbered file creates on a table that was there before
// this migrate began is taken out of the file's transaction and built right
// after it commits, CREATE INDEX CONCURRENTLY, which lets writers go on. On a
// table the same migrate created (empty) the file builds it as written.
//
// Between the file's commit and the build the index is missing, and a build
// that is interrupted (or gives up, below) leaves it INVALID: nothing reads
// such an index, and the next migrate repairs it before going further
// (repairIndexes: an INVALID one is dropped and built again, a missing one
// built). No numbered file drops an index a file before it created (a test
// checks), so every index a file names exists once migrate returns.
//
// A concurrent build waits for the transactions that were writing the table
// when it began, and for those whose snapshot is older than its own, instead
// of making writers wait: an idle-in-transaction writer, or a session holding
// the xmin horizon, holds the build up, never the application. The wait is
// bounded by Options.LockWait (lock_timeout); past it, migrate fails naming
// who held it, and a later migrate builds the index again.

// indexStmt is a top-level CREATE INDEX in a numbered file (one inside a DO
// block is indented, and stays where it is).
var indexStmt = regexp.MustCompile(`(?ms)^CREATE INDEX IF NOT EXISTS (\w+)\s+ON (\S+?)\.(\w+) .*?;[ \t]*$`)

// deferredIndex is one index built concurrently after its file's step.
type deferredIndex struct {
	name, table, sql string // sql: the statement, IF NOT EXISTS, without CONCURRENTLY
}

// deferIndexes takes out of mig's SQL the index builds on tables in existed,
// and returns them.
func deferIndexes(mig *migrate.Migration, existed map[string]bool) []deferredIndex {
	var out []deferredIndex
	mig.UpSQL = indexStmt.ReplaceAllStringFunc(mig.UpSQL, func(stmt string) string {
		m := indexStmt.FindStringSubmatch(stmt)
		if !existed[m[3]] {
			return stmt
		}
		out = append(out, deferredIndex{name: m[1], table: m[3], sql: stmt})
		return "-- " + m[1] + ": built concurrently once this step has committed"
	})
	return out
}

// fileIndexes lists every top-level index build in sql, on any table.
func fileIndexes(sql string) []deferredIndex {
	var out []deferredIndex
	for _, m := range indexStmt.FindAllStringSubmatch(sql, -1) {
		out = append(out, deferredIndex{name: m[1], table: m[3], sql: m[0]})
	}
	return out
}

// tablesIn is the set of tables in schema.
func tablesIn(ctx context.Context, conn *pgx.Conn, schema string) (map[string]bool, error) {
	rows, err := conn.Query(ctx, `SELECT c.relname::text FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`, schema)
	if err != nil {
		return nil, fmt.Errorf("listing the tables of %s: %w", schema, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing the tables of %s: %w", schema, err)
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set, nil
}

// indexState is "valid", "invalid" or "missing".
func indexState(ctx context.Context, conn *pgx.Conn, schema, name string) (string, error) {
	var valid *bool
	err := conn.QueryRow(ctx, `SELECT i.indisvalid FROM pg_catalog.pg_index i
		JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, schema, name).Scan(&valid)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "missing", nil
	case err != nil:
		return "", fmt.Errorf("reading index %s: %w", name, err)
	case *valid:
		return "valid", nil
	}
	return "invalid", nil
}

// buildConcurrently builds ix with CREATE INDEX CONCURRENTLY, first dropping
// an INVALID index of its name that an interrupted build left. It waits at
// most lockWait (0: no bound) for each lock and for the transactions it must
// outlast; onBuild, when not nil, is told before the build starts.
func buildConcurrently(ctx context.Context, conn *pgx.Conn, schema string, ix deferredIndex, lockWait time.Duration, onBuild func(string)) error {
	state, err := indexState(ctx, conn, schema, ix.name)
	if err != nil || state == "valid" {
		return err
	}
	if onBuild != nil {
		onBuild(ix.name)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET search_path = pg_catalog, pg_temp; SET lock_timeout = %d", lockWait.Milliseconds())); err != nil {
		return fmt.Errorf("building index %s: %w", ix.name, err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout; RESET search_path") }()
	if state == "invalid" {
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{schema, ix.name}.Sanitize()); err != nil {
			return indexWaitError(ctx, conn, schema, ix, "dropping the invalid index", err)
		}
	}
	if _, err := conn.Exec(ctx, concurrently(ix.sql)); err != nil {
		return indexWaitError(ctx, conn, schema, ix, "building it concurrently", err)
	}
	return nil
}

// concurrently turns "CREATE INDEX IF NOT EXISTS" into its concurrent form.
func concurrently(sql string) string {
	const plain = "CREATE INDEX IF NOT EXISTS "
	return "CREATE INDEX CONCURRENTLY IF NOT EXISTS " + sql[len(plain):]
}

// indexWaitError says what an index build that failed was doing, and, when it
// gave up waiting, for whom.
func indexWaitError(ctx context.Context, conn *pgx.Conn, schema string, ix deferredIndex, doing string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		return fmt.Errorf("%w: index %s on %s, %s, waited the lock wait for transactions that were using the table (%s); "+
			"the application's writers were not held; migrate again once they are done, which builds it again: %w",
			ErrStepLocked, ix.name, ix.table, doing, LockHolders(ctx, conn, schema), err)
	}
	return fmt.Errorf("index %s on %s, %s: %w", ix.name, ix.table, doing, err)
}

// repairIndexes builds again every index of the applied files (versions up to
// applied) that an interrupted build left INVALID or missing.
func repairIndexes(ctx context.Context, m *migrate.Migrator, conn *pgx.Conn, schema string, applied int32, opts Options) error {
	for _, mig := range m.Migrations {
		if mig.Sequence > applied {
			break
		}
		for _, ix := range fileIndexes(mig.UpSQL) {
			if err := buildConcurrently(ctx, conn, schema, ix, opts.LockWait, opts.onIndex(mig)); err != nil {
				return err
			}
		}
	}
	return nil
}

// onIndex tells OnStart about a concurrent build of one of mig's indexes, as a
// step of its own: "007_claim.sql: outbox_claim_idx, concurrently".
func (o Options) onIndex(mig *migrate.Migration) func(string) {
	if o.OnStart == nil {
		return nil
	}
	return func(name string) { o.OnStart(mig.Sequence, mig.Name+": "+name+", concurrently") }
}
