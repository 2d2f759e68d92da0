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
	before, err := migrations.Version(ctx, conn, db.schema)
	if err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	v, err := migrations.Apply(ctx, conn, db.schema, func(version int32, name string) {
		fmt.Fprintf(io.Out, "applying %s\n", name)
	})
	if err != nil {
		return err
	}
	if v == before {
		fmt.Fprintf(io.Out, "schema %s is up to date (version %d)\n", db.schema, v)
	} else {
		fmt.Fprintf(io.Out, "schema %s migrated from version %d to %d\n", db.schema, before, v)
	}
	return nil
}
