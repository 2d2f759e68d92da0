package cmd

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/app"
)

// openApp opens the application lifecycle (internal/app) that the console,
// --headless and serve share, with the database settings of d.
func openApp(ctx context.Context, d *dbFlags, io IO, cfg app.Config) (*app.App, error) {
	cfg.Schema = d.schema
	cfg.Connect = func(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) { return d.openPool(ctx, io, maxConns) }
	a, err := app.Open(ctx, cfg)
	return a, usageOf(err)
}

// usageOf turns the lifecycle's configuration errors into bad usage (exit 2).
func usageOf(err error) error {
	var ce app.ConfigError
	if errors.As(err, &ce) {
		return usagef("%v", inFlagWords(ce.Err))
	}
	return err
}
