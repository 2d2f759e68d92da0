package cli

import (
	"context"
	"fmt"

	"github.com/outboxtop/outboxtop/migrations"
)

func runMigrate(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("migrate", io)
	var db dbFlags
	db.register(fs)
	if err := parse(fs, args, io); err != nil {
		return err
	}
	conn, err := db.connect(ctx, io)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	from, to, err := migrations.Migrate(ctx, conn, db.schema, func(version int32, name string) {
		fmt.Fprintf(io.Out, "applying %s\n", name)
	})
	if err != nil {
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
