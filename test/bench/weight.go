package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The weight of an insert: the WAL one row of the producers' INSERT writes,
// which, unlike tps on a shared machine, does not vary from run to run. The
// seed's table against the one migrate makes, and that table without each of
// its indexes (dropped in a transaction that is rolled back): each index's
// share.

// weightRows are the rows inserted per measure, weightFill the rows put there
// first (so that the indexes are not empty).
const (
	weightRows = 100_000
	weightFill = 20_000
)

// weightRow is the WAL per inserted row of one table, or of the migrated one
// without one index.
type weightRow struct {
	Table   string  `json:"table"`
	Without string  `json:"without,omitempty"` // the index dropped
	WALRow  float64 `json:"wal_bytes_per_row"`
}

// insertWeight measures seed and fresh (connections to the producer part's
// databases of those names).
func insertWeight(ctx context.Context, seed, fresh *pgx.Conn) ([]weightRow, error) {
	var out []weightRow
	for _, db := range []struct {
		name string
		c    *pgx.Conn
	}{{"seed", seed}, {"fresh", fresh}} {
		w, err := walPerRow(ctx, db.c, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", db.name, err)
		}
		out = append(out, weightRow{Table: db.name, WALRow: w})
	}
	rows, err := fresh.Query(ctx, `SELECT i.indexrelid::regclass::text FROM pg_index i
		WHERE i.indrelid = 'outbox_event'::regclass AND NOT i.indisprimary ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, ix := range indexes {
		w, err := walPerRow(ctx, fresh, ix)
		if err != nil {
			return nil, fmt.Errorf("fresh without %s: %w", ix, err)
		}
		out = append(out, weightRow{Table: "fresh", Without: ix, WALRow: w})
	}
	return out, nil
}

// walPerRow is the WAL bytes per row of weightRows inserts into c's
// outbox_event, emptied and filled with weightFill rows first, in a
// transaction that drops index without first when it is not "" (and is rolled
// back).
func walPerRow(ctx context.Context, c *pgx.Conn, without string) (float64, error) {
	if _, err := c.Exec(ctx, "TRUNCATE outbox_event"); err != nil {
		return 0, err
	}
	insert := func(n int) string {
		return fmt.Sprintf(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', (random() * %d)::int::text, 'OrderConfirmed', '%s'
			FROM generate_series(1, %d)`, producerOrders, strings.ReplaceAll(producerPayload, ":aid", "1"), n)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	if without != "" {
		if _, err := tx.Exec(ctx, "DROP INDEX "+without); err != nil {
			return 0, err
		}
	}
	if _, err := tx.Exec(ctx, insert(weightFill)); err != nil {
		return 0, err
	}
	// Four statements: the WAL between the first's start and the last's end.
	var wal float64
	var start string
	if err := tx.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&start); err != nil {
		return 0, err
	}
	for range 4 {
		if _, err := tx.Exec(ctx, insert(weightRows/4)); err != nil {
			return 0, err
		}
	}
	if err := tx.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)`, start).Scan(&wal); err != nil {
		return 0, err
	}
	return wal / weightRows, nil
}

func weightMarkdown(b *strings.Builder, rows []weightRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "WAL per row of a bulk INSERT of %s rows (random aggregates among %s, the producers' payload; "+
		"the table holding %s first): the seed's table, the one migrate makes, and that one without each of its indexes but the primary key (a partial index whose predicate a new row fails costs it nothing).\n\n",
		human(weightRows), human(producerOrders), human(weightFill))
	b.WriteString("| table | WAL bytes per row | × seed | the index's share |\n|---|---:|---:|---:|\n")
	var seed, fresh float64
	for _, r := range rows {
		switch {
		case r.Table == "seed":
			seed = r.WALRow
		case r.Without == "":
			fresh = r.WALRow
		}
	}
	for _, r := range rows {
		name, share := r.Table, ""
		if r.Without != "" {
			name, share = r.Table+" without "+r.Without, fmt.Sprintf("%.0f", fresh-r.WALRow)
		}
		fmt.Fprintf(b, "| %s | %.0f | %s | %s |\n", name, r.WALRow, ratio(r.WALRow, seed), share)
	}
	b.WriteString("\n")
}
