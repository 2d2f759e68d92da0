package cmd

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

// dbFlags are the connection settings every database command takes: its
// target. The target is one outbox, given by --dsn and --schema, or by name
// from a fleet file (--fleet FILE --outbox NAME), which then supplies both. A
// command that shows a whole fleet (console, watch, serve, status) takes
// --fleet alone as its fleet form; any other refuses it without --outbox.
type dbFlags struct {
	dsn            string
	schema         string
	connectTimeout time.Duration
	fleet          string
	outbox         string
	// wholeFleet, set before register, is what --fleet alone does in this
	// command; empty when the command works on one outbox only.
	wholeFleet string
}

func (d *dbFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&d.dsn, "dsn", "", "PostgreSQL connection string (else DATABASE_URL, else libpq PG* variables)")
	fs.StringVar(&d.schema, "schema", wire.DefaultSchema, "schema holding outboxtop's tables")
	fs.DurationVar(&d.connectTimeout, "connect-timeout", 5*time.Second, "give up connecting to PostgreSQL after this long")
	fleetUsage := "fleet file (TOML, docs/fleet.md) holding the outbox --outbox names"
	if d.wholeFleet != "" {
		fleetUsage = d.wholeFleet + "; with --outbox, that outbox alone"
	}
	fs.StringVar(&d.fleet, "fleet", "", fleetUsage)
	fs.Var(outboxTarget{d, fs}, "outbox", "the outbox of --fleet to work on: its database and schema come from the fleet file")
}

// outboxTarget is --outbox. parse resolves it once every flag and variable is
// read (afterParse): the fleet file's outbox becomes the command's database
// and schema.
type outboxTarget struct {
	d  *dbFlags
	fs *pflag.FlagSet
}

func (t outboxTarget) String() string     { return t.d.outbox }
func (t outboxTarget) Set(v string) error { t.d.outbox = strings.TrimSpace(v); return nil }
func (t outboxTarget) Type() string       { return "name" }

func (t outboxTarget) afterParse(io IO) error {
	d := t.d
	switch {
	case d.fleet == "" && d.outbox == "":
		return nil
	case d.fleet == "":
		return usagef("--outbox names an outbox of a fleet file: give the file with --fleet")
	}
	if d.outbox == "" && d.wholeFleet != "" {
		return nil // the command's fleet form loads the file
	}
	f, err := fleet.Load(d.fleet, io.Getenv)
	if err != nil {
		return usagef("%v", err)
	}
	names := make([]string, len(f.Outboxes))
	for i, o := range f.Outboxes {
		names[i] = o.Name
	}
	if d.outbox == "" {
		return usagef("--fleet: this command works on one outbox: name it with --outbox (%s)", strings.Join(names, ", "))
	}
	for _, name := range []string{"dsn", "schema"} {
		if t.fs.Changed(name) {
			return usagef("--%s and --outbox: the fleet file gives the outbox's database and schema", name)
		}
	}
	for _, o := range f.Outboxes {
		if o.Name == d.outbox {
			d.dsn, d.schema = o.DSN(), o.Schema
			return nil
		}
	}
	return usagef("--outbox %q is not an outbox of %s (%s)", d.outbox, d.fleet, strings.Join(names, ", "))
}

// fleetView reports whether the command shows the whole fleet: --fleet
// without --outbox.
func (d *dbFlags) fleetView() bool { return d.fleet != "" && d.outbox == "" }

// config resolves the DSN (flag or OUTBOXTOP_DSN, else DATABASE_URL, else PG*) into
// a pgx config; connect and openPool set it up for session.
func (d *dbFlags) config(io IO) (*pgx.ConnConfig, error) {
	if err := wire.ValidateSchema(d.schema); err != nil {
		return nil, usagef("--schema: %v", err)
	}
	dsn := d.dsn
	if dsn == "" {
		dsn = io.Getenv("DATABASE_URL")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors may quote the DSN, password included: say only what is wrong.
		return nil, usagef("invalid database connection string: %s", redactParseError(err))
	}
	if d.connectTimeout <= 0 {
		return nil, usagef("--connect-timeout must be positive")
	}
	return cfg, nil
}

// session is what every session a command opens runs with (pgsql.Session):
// outboxtop's search_path, a bounded connect, and no statement of ours waiting
// for a lock without end (inspect.ActionLockTimeout; a DSN that sets
// lock_timeout itself wins).
func (d *dbFlags) session() pgsql.Session {
	return pgsql.Session{App: "outboxtop", LockTimeout: inspect.ActionLockTimeout, ConnectTimeout: d.connectTimeout}
}

func (d *dbFlags) connect(ctx context.Context, io IO) (*pgx.Conn, error) {
	cfg, err := d.config(io)
	if err != nil {
		return nil, err
	}
	conn, err := pgsql.Connect(ctx, cfg, d.session())
	if err != nil {
		return nil, connectError(cfg, err)
	}
	return conn, nil
}

// pool opens the pool of a command that reads the outbox: one a newer
// outboxtop migrated is refused.
func (d *dbFlags) pool(ctx context.Context, io IO, maxConns int32) (*pgxpool.Pool, error) {
	pool, err := d.openPool(ctx, io, maxConns)
	if err != nil {
		return nil, err
	}
	if err := refuseNewerSchema(ctx, pool, d.schema); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// openPool opens a pool and checks that the server answers; the application
// lifecycle checks the schema's version itself (app.CheckSchema).
func (d *dbFlags) openPool(ctx context.Context, io IO, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := d.config(io)
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	pcfg.ConnConfig = cfg
	if maxConns > 0 {
		pcfg.MaxConns = maxConns
	}
	pool, err := pgsql.Pool(ctx, pcfg, d.session())
	if err != nil {
		return nil, connectError(cfg, err)
	}
	pctx, cancel := context.WithTimeout(ctx, d.connectTimeout+time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, connectError(cfg, err)
	}
	return pool, nil
}

func connectError(cfg *pgx.ConnConfig, err error) error {
	return fmt.Errorf("cannot connect to PostgreSQL at %s:%d (database %q, user %q): %s",
		cfg.Host, cfg.Port, cfg.Database, cfg.User, rootCause(err))
}

// rootCause strips pgx's "failed to connect to `user=… database=…`:" preamble, which
// repeats what connectError already says.
func rootCause(err error) string {
	msg := err.Error()
	for _, sep := range []string{"`: ", "): "} {
		if i := lastIndex(msg, sep); i >= 0 && i+len(sep) < len(msg) {
			msg = msg[i+len(sep):]
			break
		}
	}
	return termtext.OneLine(msg)
}

func lastIndex(s, sep string) int {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return i
		}
	}
	return -1
}

func redactParseError(err error) string {
	msg := err.Error()
	// pgx: "cannot parse `<dsn>`: <reason>" — drop the quoted DSN.
	if i := lastIndex(msg, "`: "); i >= 0 {
		// The reason may quote a piece of the DSN too (net/url: unexpected spaces
		// found in "pass word@host"), password included: drop every quoted piece.
		return termtext.OneLine(quoted.ReplaceAllString(msg[i+3:], `"…"`))
	}
	return "unparseable"
}

// quoted matches a Go-quoted string (%q), escaped quotes included.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// refuseNewerSchema stops every command that reads the outbox when a newer
// outboxtop has migrated the schema (migrations.CheckVersion). A role that may
// not read the version table is let through; the command's own statements then
// say what is missing.
func refuseNewerSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := migrations.CheckVersion(ctx, conn.Conn(), schema, false); errors.Is(err, migrations.ErrNewerSchema) {
		return exitError{ExitFailure, err.Error()}
	}
	return nil
}
