// Package migrations holds outboxtop's schema as embedded SQL files and applies
// them. It is the only place the schema is defined.
//
// Two kinds of file. The numbered ones (001_….sql, tern migrations; the version
// table is <schema>.outboxtop_schema_version) hold tables, indexes, policies, grants
// on tables and data steps, each applied once. functions/<name>.sql holds one
// stored function each, in its current text, with what depends on the function
// alone (its REVOKE from PUBLIC, a trigger that calls it, a grant made when it is
// first created, with the table privilege it replaces, as for the inbox prune,
// or when a new signature replaces an old one); every migrate applies them all
// again after the numbered migrations, so a function is read, reviewed and
// changed in one place, and a database at any version ends with the same
// functions. Both kinds are Go templates over the same data ({{.schema}} and
// the commit order's keys).
//
// The SECURITY DEFINER functions run as their owner with search_path pinned to
// pg_catalog, the schema and pg_temp. That order is not enough on its own:
// PostgreSQL weighs functions and operators of different argument types on an
// equal footing wherever they are on the path, and prefers an exact match over a
// polymorphic built-in, so a cardinality(uuid[]) in the schema would win over
// pg_catalog's cardinality(anyarray). Every built-in function and aggregate is
// therefore called as pg_catalog.name(…), and array operators as functions
// (pg_catalog.array_cat) or OPERATOR(pg_catalog.<@). Operators whose built-in
// takes exactly the operands' types (text || text, uuid = uuid, timestamptz >
// timestamptz) are left plain: an operator with the same argument types elsewhere
// loses to pg_catalog's, which comes first. A test shadows every built-in the
// functions use and fails when one of the shadows runs.
//
// A function file must stay safe to apply again: CREATE OR REPLACE keeps the
// function's owner and grants (its ACL), REVOKE is idempotent, and anything else
// checks first. CREATE OR REPLACE cannot change a function's arguments or result
// type: a new signature is a new function, so its file drops the old one first
// (DROP FUNCTION IF EXISTS with the old argument types), and the grants printed by
// `outboxtop grants` must name the new one.
//
// Every migrate replaces the functions, so it must run as their owner (or a
// member of that role) even when the version is current, and an older binary
// would put back its older text. A change to a function file that an older
// binary must not undo (a fix) therefore comes with a numbered migration, even
// one with nothing else in it: the version moves past the older binary, which
// then refuses the schema (ErrNewerSchema) instead of migrating it.
//
// Migrate is idempotent and safe to run from several processes at once: it takes a
// session advisory lock (per schema) before touching anything, and each numbered
// file is written so that it also upgrades a seed-style outbox_event that an
// application created by hand, keeping its rows, and adopts its consumed_event
// as it is: 002 adds what the inbox lacks and marks it adopted, and 008 gives
// row-level security only to an inbox outboxtop created.
//
// Migrate runs on a live database. Each step (a numbered file, tern's
// transaction each, or the function files, one transaction together) waits at
// most stepLockTimeout for each lock it takes; one that gives up is rolled back
// whole and tried again after a pause, for up to Options.LockWait. A step thus
// either completes or changes nothing, and the application's writers never
// queue behind a waiting step for longer than that timeout.
//
// No step holds a table of the application's against its writers while it
// reads or rewrites every row. On a seed outbox_event adopted with rows, seq
// is added and the rows present numbered in short steps before the numbered
// files (numberAdopted, adoptseq.go); the indexes the files create on a table
// that was there before migrate began are built after their file's step,
// CREATE INDEX CONCURRENTLY (deferIndexes, online.go). Both are resumed or
// repaired by the next migrate when one is interrupted.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/wire"
)

//go:embed *.sql
var files embed.FS

// functionFiles are the stored functions, one file each, applied after the
// numbered migrations by every migrate.
//
//go:embed functions/*.sql
var functionFiles embed.FS

// VersionTable is the table, inside the schema, that records applied migrations.
const VersionTable = "outboxtop_schema_version"

// Count is the number of migrations embedded in this binary: the schema version
// this binary works with. An error means the embedded files are misnamed (a
// build that should never have been released); no schema is then current.
func Count() (int, error) {
	names, err := migrate.FindMigrations(files)
	if err != nil {
		return 0, fmt.Errorf("reading the embedded migrations: %w", err)
	}
	return len(names), nil
}

// Apply creates or upgrades outboxtop's tables in schema (created if missing) and
// returns the schema version reached. onStart, when not nil, is told about each
// migration as it starts.
func Apply(ctx context.Context, conn *pgx.Conn, schema string, onStart func(version int32, name string)) (int32, error) {
	_, to, err := Migrate(ctx, conn, schema, onStart)
	return to, err
}

// ErrNewerSchema: the schema was migrated by a newer outboxtop than this one.
var ErrNewerSchema = errors.New("schema is newer than this outboxtop")

// NewerError says that schema is at version v, which this binary, whose
// migrations go up to known, does not know.
func NewerError(schema string, v int32, known int) error {
	return fmt.Errorf("%w: schema %q is at version %d, this outboxtop knows versions up to %d: upgrade outboxtop",
		ErrNewerSchema, schema, v, known)
}

// ErrOlderSchema: the schema was not migrated up to this outboxtop's version.
var ErrOlderSchema = errors.New("schema is older than this outboxtop")

// CheckVersion is the one check of a schema's version against this binary's
// migrations: a schema a newer outboxtop migrated is refused (ErrNewerSchema:
// this binary's statements may no longer match its tables, and its relay could
// undo what the newer one relies on), and so, when current is set, is one that
// migrate has not brought up to this version (ErrOlderSchema: the relay's and
// the console's statements depend on it). An error reading the version is
// returned as it is.
func CheckVersion(ctx context.Context, conn *pgx.Conn, schema string, current bool) error {
	v, err := Version(ctx, conn, schema)
	if err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	known, err := Count()
	if err != nil {
		return err
	}
	switch {
	case int(v) > known:
		return NewerError(schema, v, known)
	case current && int(v) < known:
		return fmt.Errorf("%w: schema %q is at version %d, this outboxtop needs %d: run 'outboxtop migrate' first",
			ErrOlderSchema, schema, v, known)
	}
	return nil
}

// Migrate is Apply, also returning the version found once the migration lock was
// held: from == to when this call applied nothing (another process may have done
// it meanwhile). It refuses a schema newer than this binary, and existing tables
// whose columns have types outboxtop cannot work with.
func Migrate(ctx context.Context, conn *pgx.Conn, schema string, onStart func(version int32, name string)) (from, to int32, err error) {
	return MigrateWith(ctx, conn, schema, Options{OnStart: onStart})
}

// Options are MigrateWith's.
type Options struct {
	// OnStart, when not nil, is told about each migration as it starts.
	OnStart func(version int32, name string)
	// LockWait bounds the wait for the migration lock (0: until ctx ends). Any
	// role may take an advisory lock, so a session that holds this one, a
	// migrate of its own or not, would otherwise keep migrate waiting for as
	// long as it liked, silently. It bounds, too, how long each step is tried
	// again while it gives up on its table locks (ErrStepLocked).
	LockWait time.Duration
	// OnLockRetry, when not nil, is told each time a step gave up on a lock,
	// was rolled back and will be tried again.
	OnLockRetry func(LockRetry)
	// adoptBatch: rows numbered per step (numberAdopted); 0: adoptBatch.
	adoptBatch int64
	// OnWait, when not nil, is told once, after a second of waiting, who holds
	// the lock (see LockHolder).
	OnWait func(holder string)
	// CommitOrder is the mode to put outbox_event in (OrderKeep: leave it).
	CommitOrder CommitOrder
	// OnOrder, when not nil, is told the mode outbox_event is in afterwards.
	OnOrder func(CommitOrder)
}

// ErrLockWait: the migration lock stayed held for Options.LockWait.
var ErrLockWait = errors.New("the migration lock is held by another session")

// ErrStepLocked: a step kept giving up on its locks for Options.LockWait. It
// was rolled back; the steps before it stay applied.
var ErrStepLocked = errors.New("a migration step could not take its locks")

// LockRetry is a step that gave up waiting for a lock (lock_timeout,
// stepLockTimeout), was rolled back whole, and will be tried again.
type LockRetry struct {
	// Step is the step: a numbered file (002_consumed_event.sql) or
	// functions/<name>.sql, the function file that was running.
	Step string
	// Holders says who held locks on the schema's tables just after, oldest
	// transaction first (LockHolders).
	Holders string
	// Waited is the time since the step first gave up; Pause is the time
	// before it is tried again.
	Waited, Pause time.Duration
}

// String is the retry in one line: "001_outbox_event.sql gave up after 500ms
// waiting for a lock (held by pid 123 (role app, idle in transaction since …)
// holding RowExclusiveLock on outbox_event) and was rolled back; trying it
// again in 250ms".
func (r LockRetry) String() string {
	return fmt.Sprintf("%s gave up after %s waiting for a lock (held by %s) and was rolled back; trying it again in %v",
		r.Step, stepLockTimeout, r.Holders, r.Pause)
}

// MigrateWith is Migrate with options.
func MigrateWith(ctx context.Context, conn *pgx.Conn, schema string, opts Options) (from, to int32, err error) {
	onStart := opts.OnStart
	if err := wire.ValidateSchema(schema); err != nil {
		return 0, 0, err
	}
	known, err := Count()
	if err != nil {
		return 0, 0, err
	}
	lock := LockKey(schema)
	if err := takeLock(ctx, conn, lock, opts); err != nil {
		return 0, 0, err
	}
	defer func() {
		// A fresh context: the caller's may be cancelled, and a session lock left
		// behind would block the next migrate until the connection closes.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lock)
	}()

	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return 0, 0, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	from, err = Version(ctx, conn, schema)
	if err != nil {
		return 0, 0, fmt.Errorf("reading schema version: %w", err)
	}
	if int(from) > known {
		return from, from, NewerError(schema, from, known)
	}
	if err := checkColumns(ctx, conn, schema); err != nil {
		return from, from, err
	}
	if err := numberAdopted(ctx, conn, schema, opts); err != nil {
		return from, from, err
	}
	m, err := migrate.NewMigrator(ctx, conn, pgx.Identifier{schema, VersionTable}.Sanitize())
	if err != nil {
		return 0, 0, fmt.Errorf("preparing migrations: %w", err)
	}
	m.Data = templateData(schema)
	if err := m.LoadMigrations(files); err != nil {
		return 0, 0, fmt.Errorf("loading migrations: %w", err)
	}
	for _, mig := range m.Migrations {
		mig.UpSQL = pinPath + setLockTimeout + mig.UpSQL
	}
	if onStart != nil {
		m.OnStart = func(seq int32, name, _, _ string) { onStart(seq, name) }
	}
	if err := applyNumbered(ctx, m, conn, schema, from, opts); err != nil {
		return 0, 0, err
	}
	to, err = m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("reading schema version: %w", err)
	}
	if err := retryLocked(ctx, conn, schema, opts, func() (string, error) {
		if onStart != nil {
			onStart(to, "functions")
		}
		return applyFunctions(ctx, conn, m.Data)
	}); err != nil {
		return 0, 0, err
	}
	if onStart != nil {
		onStart(to, "commit order")
	}
	mode, err := setCommitOrder(ctx, conn, schema, opts.CommitOrder)
	if err != nil {
		return 0, 0, err
	}
	if opts.OnOrder != nil {
		opts.OnOrder(mode)
	}
	return from, to, nil
}

// applyNumbered brings the schema from version from to the last numbered
// file: first it builds again what an interrupted migrate left unbuilt
// (repairIndexes), then it runs each file in a transaction of its own (tern's,
// with the version's update), and after each builds the indexes it took out
// of it (deferIndexes: those on tables that were there before this migrate).
// A step that gives up on a lock is tried again (retryLocked); tern resumes
// from the version.
func applyNumbered(ctx context.Context, m *migrate.Migrator, conn *pgx.Conn, schema string, from int32, opts Options) error {
	if err := repairIndexes(ctx, m, conn, schema, from, opts); err != nil {
		return err
	}
	existed, err := tablesIn(ctx, conn, schema)
	if err != nil {
		return err
	}
	for _, mig := range m.Migrations[from:] {
		later := deferIndexes(mig, existed)
		if err := retryLocked(ctx, conn, schema, opts, func() (string, error) {
			err := m.MigrateTo(ctx, mig.Sequence)
			var pgErr migrate.MigrationPgError
			if errors.As(err, &pgErr) {
				return pgErr.MigrationName, fmt.Errorf("migration %s: %w", pgErr.MigrationName, pgErr.PgError)
			}
			if err != nil {
				return mig.Name, fmt.Errorf("migrating: %w", err)
			}
			return "", nil
		}); err != nil {
			return err
		}
		for _, ix := range later {
			if err := buildConcurrently(ctx, conn, schema, ix, opts.LockWait, opts.onIndex(mig)); err != nil {
				return err
			}
		}
	}
	return nil
}

// pinPath starts each numbered migration (the functions' transaction sets the
// same, LOCAL): only pg_catalog on the path. The files name every object of theirs with its
// schema, and a role that may create in a schema on the caller's path could
// otherwise shadow a built-in they call (an overload with more exact argument
// types) and run as the migrating role. tern resets the session's settings
// after each migration, and a failed one's transaction undoes its SET.
const pinPath = "SET search_path = pg_catalog, pg_temp;\n"

// stepLockTimeout is how long a step waits for any one lock before it gives
// up, is rolled back and is tried again (retryLocked). Short, because of the
// queue behind it: while a DDL statement waits for its table lock (an
// application's transaction holds the table, idle in transaction, say), every
// new insert into that table queues behind the waiting DDL, and would wait as
// long as it does. Given up after this, the step holds up the application's
// writers for at most this long at a time, and they go on while it pauses.
const stepLockTimeout = "500ms"

// setLockTimeout starts each numbered migration (after pinPath) and the
// functions' transaction: LOCAL, so it ends with the step's transaction.
const setLockTimeout = "SET LOCAL lock_timeout = '" + stepLockTimeout + "';\n"

// The pauses between two tries of a step that gave up on a lock: doubled
// from the first to the last. The application's writers go on meanwhile.
const (
	firstLockPause = 250 * time.Millisecond
	lastLockPause  = 5 * time.Second
)

// retryLocked runs run until it succeeds or fails other than by giving up on
// a lock (55P03, lock_not_available: stepLockTimeout passed). run returns the
// step it ran last and stopped at, which such a failure rolled back whole
// (tern's transaction of a numbered file, the functions' transaction): it is
// run again after a pause, firstLockPause doubling to lastLockPause, for up to
// opts.LockWait from its first failure (0: until ctx ends), and
// opts.OnLockRetry is told each time. A step that completed is never run
// again: tern resumes from the version. Then it fails with ErrStepLocked.
func retryLocked(ctx context.Context, conn *pgx.Conn, schema string, opts Options, run func() (step string, err error)) error {
	var (
		step  string
		first time.Time
		pause time.Duration
	)
	for {
		name, err := run()
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
			return err
		}
		if name != step || first.IsZero() { // a step further on: its waits start over
			step, first, pause = name, time.Now(), firstLockPause
		}
		// The transaction was rolled back (tern's, or ours), so the session
		// can read again; with a cancelled ctx, it says so below.
		holders := LockHolders(ctx, conn, schema)
		waited := time.Since(first)
		if opts.LockWait > 0 && waited+pause > opts.LockWait {
			return fmt.Errorf("%w: %s kept giving up on a lock (after %s each time) for %v, held by %s; it was rolled back, "+
				"the steps before it stay applied: end that session, or migrate again once it is done: %w",
				ErrStepLocked, step, stepLockTimeout, waited.Round(time.Millisecond), holders, err)
		}
		if opts.OnLockRetry != nil {
			opts.OnLockRetry(LockRetry{Step: step, Holders: holders, Waited: waited, Pause: pause})
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s, waiting to try again after a lock timeout: %w", step, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, lastLockPause)
	}
}

// LockHolders describes the sessions other than conn's that hold locks on the
// tables (and other relations) of schema, oldest transaction first, at most
// three: "pid 123 (role billing, application psql, idle in transaction since
// 2026-01-02 12:00:01 UTC) holding RowExclusiveLock on outbox_event". A step
// that gave up on a lock waited for one of them, most likely the oldest: its
// own transaction has ended by the time this is read, and PostgreSQL does not
// say whom a lock timeout waited for.
func LockHolders(ctx context.Context, conn *pgx.Conn, schema string) string {
	rows, err := conn.Query(ctx, `SELECT pg_catalog.format('pid %s (role %s%s%s) holding %s', h.pid, coalesce(a.usename::text, '?'),
			CASE WHEN coalesce(a.application_name, '') <> '' THEN ', application ' || a.application_name ELSE '' END,
			CASE WHEN a.state IS NOT NULL THEN ', ' || a.state || ' since ' ||
				pg_catalog.to_char(a.state_change, 'YYYY-MM-DD HH24:MI:SS TZ') ELSE '' END,
			h.locks), pg_catalog.count(*) OVER ()
		FROM (SELECT l.pid, pg_catalog.string_agg(l.mode || ' on ' || c.relname, ', ' ORDER BY c.relname, l.mode) AS locks
		      FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_class c ON c.oid = l.relation
		      WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_catalog.pg_backend_pid()
		        AND c.relnamespace = (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = $1)
		        AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
		      GROUP BY l.pid) h
		LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = h.pid
		ORDER BY a.xact_start NULLS LAST, h.pid
		LIMIT 3`, schema)
	if err != nil {
		return "its holder could not be read: " + err.Error()
	}
	var holders []string
	var n int
	for rows.Next() {
		var h string
		if err := rows.Scan(&h, &n); err != nil {
			rows.Close()
			return "its holder could not be read: " + err.Error()
		}
		holders = append(holders, h)
	}
	if err := rows.Err(); err != nil {
		return "its holder could not be read: " + err.Error()
	}
	if len(holders) == 0 {
		return "no session now: it was just released"
	}
	if n > len(holders) {
		holders = append(holders, fmt.Sprintf("%d more", n-len(holders)))
	}
	return strings.Join(holders, ", ")
}

// templateData is what the SQL files' templates see.
func templateData(schema string) map[string]any {
	return pgsql.Data(schema, orderTemplateData(schema))
}

// FunctionNames lists the function files' names (without .sql), in the order
// they are applied.
func FunctionNames() ([]string, error) {
	entries, err := fs.ReadDir(functionFiles, "functions")
	if err != nil {
		return nil, fmt.Errorf("reading the embedded functions: %w", err)
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".sql"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// applyFunctions applies every function file, in name order, in one
// transaction: a migrate that fails half-way leaves the functions it found. The
// order matters only for LANGUAGE sql bodies, which PostgreSQL checks at
// creation; plpgsql resolves names when called. On an error it returns the
// file that was running ("functions/<name>.sql"), for retryLocked.
func applyFunctions(ctx context.Context, conn *pgx.Conn, data map[string]any) (string, error) {
	names, err := FunctionNames()
	if err != nil {
		return "", err
	}
	bodies := make([]string, len(names))
	for i, name := range names {
		if bodies[i], err = functionSQL(name, data); err != nil {
			return "", err
		}
	}
	// The files that create a trigger go last: CREATE TRIGGER (and DROP
	// TRIGGER) holds its table against the application's writes until the
	// transaction commits, which should then be at once.
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return !strings.Contains(bodies[order[a]], "CREATE TRIGGER") && strings.Contains(bodies[order[b]], "CREATE TRIGGER")
	})
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("applying functions: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp;\n"+setLockTimeout); err != nil {
		return "", fmt.Errorf("applying functions: %w", err)
	}
	for _, i := range order {
		if _, err := tx.Exec(ctx, bodies[i]); err != nil {
			file := "functions/" + names[i] + ".sql"
			return file, fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("applying functions: %w", err)
	}
	return "", nil
}

// functionSQL is the text of functions/<name>.sql with data filled in.
func functionSQL(name string, data map[string]any) (string, error) {
	path := "functions/" + name + ".sql"
	body, err := fs.ReadFile(functionFiles, path)
	if err != nil {
		return "", err
	}
	sql, err := pgsql.Execute(path, string(body), data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return sql, nil
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

// LockKey is the session advisory lock (pg_advisory_lock(bigint)) migrate
// takes for schema.
func LockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("outboxtop.migrate." + schema))
	return int64(h.Sum64())
}

// takeLock takes the migration lock, asking again every 100 ms rather than
// queueing for it, so that it can say who holds it and give up.
func takeLock(ctx context.Context, conn *pgx.Conn, key int64, opts Options) error {
	start := time.Now()
	told := false
	for {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
			return fmt.Errorf("taking migration lock: %w", err)
		}
		if ok {
			return nil
		}
		waited := time.Since(start)
		if !told && waited >= time.Second && opts.OnWait != nil {
			opts.OnWait(LockHolder(ctx, conn, key))
			told = true
		}
		if opts.LockWait > 0 && waited >= opts.LockWait {
			return fmt.Errorf("%w (%s) after waiting %v: end that session, or migrate again once it is done",
				ErrLockWait, LockHolder(ctx, conn, key), opts.LockWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("taking migration lock (%s): %w", LockHolder(context.WithoutCancel(ctx), conn, key), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LockHolder describes the sessions holding the advisory lock key, from pg_locks
// and pg_stat_activity: "pid 123 (role billing, application psql, idle in
// transaction since 2026-01-02 12:00:01 UTC)". PostgreSQL shows every session's pid, role,
// application and state to every role.
func LockHolder(ctx context.Context, conn *pgx.Conn, key int64) string {
	rows, err := conn.Query(ctx, `SELECT pg_catalog.format('pid %s (role %s%s%s)', l.pid, coalesce(a.usename::text, '?'),
			CASE WHEN coalesce(a.application_name, '') <> '' THEN ', application ' || a.application_name ELSE '' END,
			CASE WHEN a.state IS NOT NULL THEN ', ' || a.state || ' since ' ||
				pg_catalog.to_char(a.state_change, 'YYYY-MM-DD HH24:MI:SS TZ') ELSE '' END)
		FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		  AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.database = (
			SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())`,
		int64(uint32(uint64(key)>>32)), int64(uint32(uint64(key))))
	if err != nil {
		return "its holder could not be read: " + err.Error()
	}
	holders, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "its holder could not be read: " + err.Error()
	}
	if len(holders) == 0 {
		return "no session now: it was just released"
	}
	return strings.Join(holders, ", ")
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
