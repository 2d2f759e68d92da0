package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/migrations"
)

func runMigrate(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("migrate", io)
	var db dbFlags
	db.register(fs)
	allowCreate := fs.Bool("allow-schema-create", false,
		"migrate even though roles other than the schema's owner may create objects in it (warns instead of refusing)")
	lockWait := fs.Duration("lock-wait", time.Minute,
		"how long to wait for the migration lock another session holds (another migrate, or any role: every role may take it), "+
			"and to keep retrying a step that gives up on a table lock after 500ms (the application's transactions hold it); 0: no bound")
	commitOrder := fs.String("commit-order", "",
		"detect, enforce or off: how each aggregate's seq order relates to its commit order (default: keep; detect when none was chosen)")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if *lockWait < 0 {
		return exitError{code: ExitUsage, msg: "--lock-wait must not be negative"}
	}
	var order migrations.CommitOrder
	if *commitOrder != "" {
		o, err := migrations.ParseCommitOrder(*commitOrder)
		if err != nil {
			return exitError{code: ExitUsage, msg: fmt.Sprintf("--commit-order %q: want enforce, detect or off", *commitOrder)}
		}
		order = o
	}
	conn, err := db.connect(ctx, io)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A role that may create in the schema could shadow a built-in the SECURITY
	// DEFINER functions call and run as their owner: refuse before creating them.
	warned, err := checkSchemaCreators(ctx, io, conn, db.schema, *allowCreate, "nothing was changed")
	if err != nil {
		return err
	}
	from, to, err := migrations.MigrateWith(ctx, conn, db.schema, migrations.Options{
		OnStart:     func(version int32, name string) { fmt.Fprintf(io.Out, "applying %s\n", name) },
		LockWait:    *lockWait,
		CommitOrder: order,
		OnOrder: func(o migrations.CommitOrder) {
			fmt.Fprintf(io.Out, "commit order: %s (%s)\n", o, orderMeaning[o])
		},
		OnWait: func(holder string) {
			fmt.Fprintf(io.Err, "outboxtop: waiting for the migration lock of schema %s, held by %s (--lock-wait %v)\n",
				db.schema, holder, *lockWait)
		},
		OnLockRetry: func(r migrations.LockRetry) {
			fmt.Fprintf(io.Err, "outboxtop: %s (%v of --lock-wait %v spent)\n", r, r.Waited.Round(time.Millisecond), *lockWait)
		},
	})
	if errors.Is(err, migrations.ErrLockWait) {
		return exitError{ExitFailure, err.Error() + "; nothing was changed"}
	}
	if err != nil {
		return err
	}
	// A schema this run created may have been given privileges by default
	// (ALTER DEFAULT PRIVILEGES … ON SCHEMAS).
	if !warned {
		if _, err := checkSchemaCreators(ctx, io, conn, db.schema, *allowCreate, "the schema is migrated"); err != nil {
			return err
		}
	}
	if err := warnPathCreators(ctx, io, conn, db.schema); err != nil {
		return err
	}
	// from is read under the migration lock, so a migrate that waited for another
	// one reports that it applied nothing rather than repeating the other's work.
	if from == to {
		fmt.Fprintf(io.Out, "schema %s is up to date (version %d)\n", db.schema, to)
	} else {
		fmt.Fprintf(io.Out, "schema %s migrated from version %d to %d\n", db.schema, from, to)
	}
	return nil
}

// orderMeaning says in a few words what each commit-order mode means.
var orderMeaning = map[migrations.CommitOrder]string{
	migrations.OrderEnforce: "seq order is commit order for every aggregate; writers of one aggregate wait for each other",
	migrations.OrderDetect:  "nothing runs on the writers' inserts; the relay marks the aggregates whose writers overlapped as of unknown order",
	migrations.OrderOff:     "nothing runs on the writers' inserts, and nothing checks their order",
}

// checkSchemaCreators refuses (or, with allow, warns about) a schema in which
// roles other than its owner may create objects; done says what state a
// refusal leaves. It reports whether it warned.
func checkSchemaCreators(ctx context.Context, io IO, conn *pgx.Conn, schema string, allow bool, done string) (bool, error) {
	creators, err := migrations.SchemaCreators(ctx, conn, schema)
	if err != nil {
		return false, err
	}
	if len(creators) == 0 {
		return false, nil
	}
	fix := migrations.SchemaCreatorsFix(schema, creators)
	if allow {
		fmt.Fprintf(io.Err, "outboxtop: warning: %s\n(--allow-schema-create: migrating anyway)\n", fix)
		return true, nil
	}
	return false, exitError{ExitFailure, fmt.Sprintf("%s\nor pass --allow-schema-create to migrate anyway; %s", fix, done)}
}

// warnPathCreators warns of every other schema on a search_path of the
// database in which roles other than its owner may create objects
// (migrations.PathCreators): outboxtop's own sessions never search them, the
// database's other sessions do.
func warnPathCreators(ctx context.Context, io IO, conn *pgx.Conn, schema string) error {
	cs, err := migrations.PathCreators(ctx, conn, schema)
	if err != nil {
		return err
	}
	for _, c := range cs {
		fmt.Fprintf(io.Err, "outboxtop: warning: %s\n", migrations.PathCreatorsFix(c))
	}
	return nil
}
