// Command smokedb starts a throwaway PostgreSQL, migrates it, seeds the console's
// fixed events and prints the DSN on stdout; it stops the cluster when stdin
// closes or on SIGINT/SIGTERM. scripts/tui-smoke runs the console against it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "smokedb:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := pgtemp.Start(ctx, pgtemp.Options{NoFsync: true})
	if err != nil {
		return err
	}
	defer c.Close()
	dsn := c.DSN("postgres")
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	if _, err := migrations.Apply(ctx, conn.Conn(), wire.DefaultSchema, nil); err != nil {
		return err
	}
	conn.Release()
	if err := seed.Seed(ctx, pool, wire.DefaultSchema, time.Now().UTC().Truncate(time.Second)); err != nil {
		return err
	}
	fmt.Println(dsn)
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-ctx.Done():
	case <-done:
	}
	return nil
}
