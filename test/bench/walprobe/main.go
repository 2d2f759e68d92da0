// Command walprobe drains the outbox table at --dsn with the relay's own claim
// and mark statements (relay.MeasureCeiling, batch 1,000, no broker) right
// after a CHECKPOINT, and prints the WAL that drain wrote by resource manager
// (pg_walinspect's pg_get_wal_stats): records and full-page images. It is how
// BENCHMARKS.md attributes the incident profile's storm cost. It changes the
// table: run it on a copy.
//
//	go run ./test/bench/walprobe --dsn postgres://…/db [--ordering none]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/relay"
)

func main() {
	dsn := flag.String("dsn", "", "database whose outbox_event to drain (it is changed)")
	ordering := flag.String("ordering", "aggregate", "aggregate or none")
	flag.Parse()
	if err := run(*dsn, relay.Ordering(*ordering)); err != nil {
		fmt.Fprintln(os.Stderr, "walprobe:", err)
		os.Exit(1)
	}
}

func run(dsn string, ordering relay.Ordering) error {
	if dsn == "" {
		return fmt.Errorf("--dsn is required")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return err
	}
	var start string
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&start); err != nil {
		return err
	}
	res, err := relay.MeasureCeiling(ctx, pool, relay.Config{Ordering: ordering, BatchSize: 1000}, 1)
	if err != nil {
		return err
	}
	fmt.Printf("drained %d events in %v (%s ordering)\n", res.Events, res.Elapsed, ordering)
	rows, err := pool.Query(ctx, `
SELECT "resource_manager/record_type", count, pg_size_pretty(record_size::bigint), pg_size_pretty(fpi_size::bigint)
FROM pg_get_wal_stats($1::pg_lsn, pg_current_wal_flush_lsn(), false)
WHERE count > 0 ORDER BY fpi_size + record_size DESC`, start)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Printf("%-12s %10s %10s %12s\n", "rmgr", "records", "size", "full pages")
	for rows.Next() {
		var rmgr, size, fpi string
		var n int64
		if err := rows.Scan(&rmgr, &n, &size, &fpi); err != nil {
			return err
		}
		fmt.Printf("%-12s %10d %10s %12s\n", rmgr, n, size, fpi)
	}
	return rows.Err()
}
