package migrations

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Numbering an adopted seed table's rows, online.
//
// seq is insertion order, which per-aggregate order follows. A seed table
// that holds rows when it is adopted has none, and numbering its rows in one
// statement (what 001 does on a table without rows) rewrites every one of them
// under the ALTER TABLE's ACCESS EXCLUSIVE lock: the application's inserts
// wait seconds on 50,000 events. So before the numbered files, a seed
// outbox_event without seq is numbered in short steps, each a transaction
// that waits at most stepLockTimeout for its locks and is tried again
// (retryLocked), none holding the table against writers for longer than a
// catalog change:
//
//  1. seq is added, nullable, with a default drawn from a sequence of its own
//     that starts past any number the rows present may get (the rows the
//     table's pages can hold): from this commit on, every insert is numbered
//     after them. Any role may draw from it (the application's inserts do).
//  2. The rows present (those without seq) are ordered by the seed's own
//     order, created_at then event_id, into outboxtop_adopt_order, read
//     without holding writers.
//  3. They are numbered from it, adoptBatch rows per transaction.
//  4. seq becomes NOT NULL through a CHECK added NOT VALID and validated
//     (which reads the table without holding writers), then the identity
//     that continues the sequence, and the comment 025 reads ("adopted
//     through seq N").
//
// Each step can be interrupted: the next migrate resumes at the step the
// schema shows (seq missing, nullable without the order table, numbering,
// NOT NULL). Between two steps the application's table works as before, with
// one more column; outboxtop's relay and console refuse the schema until
// migrate completes (its version is still 0).
const adoptBatch = 5000

// numberAdopted numbers a seed outbox_event's rows as above, when it lacks seq.
func numberAdopted(ctx context.Context, conn *pgx.Conn, schema string, opts Options) error {
	state, err := seqState(ctx, conn, schema)
	if err != nil || state == "" || state == "identity" {
		return err
	}
	q := func(sql string) string { return pgx.Identifier{schema}.Sanitize() + "." + sql }
	step := func(name, sql string, args ...any) error {
		if opts.OnStart != nil {
			opts.OnStart(0, "001_outbox_event.sql: "+name)
		}
		return retryLocked(ctx, conn, schema, opts, func() (string, error) {
			return "001_outbox_event.sql: " + name, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp;\n"+setLockTimeout); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, sql, args...)
				return err
			})
		})
	}
	if state == "missing" {
		if err := step("seq added", `
			ALTER TABLE `+q(`outbox_event ADD COLUMN IF NOT EXISTS seq bigint`)+`;
			CREATE SEQUENCE IF NOT EXISTS `+q(`outboxtop_adopt_seq`)+` START WITH 1;
			SELECT pg_catalog.setval('`+q(`outboxtop_adopt_seq`)+`', (pg_catalog.pg_relation_size('`+q(`outbox_event`)+`')
				/ pg_catalog.current_setting('block_size')::bigint + 1) * (pg_catalog.current_setting('block_size')::bigint / 28) + 1, false);
			GRANT USAGE ON SEQUENCE `+q(`outboxtop_adopt_seq`)+` TO PUBLIC;
			ALTER TABLE `+q(`outbox_event ALTER COLUMN seq SET DEFAULT pg_catalog.nextval('`)+q(`outboxtop_adopt_seq`)+`'::pg_catalog.regclass)`); err != nil {
			return err
		}
	}
	if err := step("the rows present ordered", `
		CREATE TABLE IF NOT EXISTS `+q(`outboxtop_adopt_order`)+` (event_id uuid PRIMARY KEY, n bigint NOT NULL UNIQUE);
		INSERT INTO `+q(`outboxtop_adopt_order`)+` (event_id, n)
		SELECT e.event_id, pg_catalog.row_number() OVER (ORDER BY e.created_at, e.event_id)
		FROM `+q(`outbox_event`)+` AS e
		WHERE e.seq IS NULL AND NOT EXISTS (SELECT FROM `+q(`outboxtop_adopt_order`)+`)`); err != nil {
		return err
	}
	var total int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(pg_catalog.max(n), 0) FROM `+q(`outboxtop_adopt_order`)).Scan(&total); err != nil {
		return fmt.Errorf("reading the adopted rows' order: %w", err)
	}
	batch := int64(adoptBatch)
	if opts.adoptBatch > 0 {
		batch = opts.adoptBatch
	}
	for lo := int64(0); lo < total; lo += batch {
		if err := step(fmt.Sprintf("rows %d to %d of %d numbered", lo+1, min(lo+batch, total), total), `
			UPDATE `+q(`outbox_event`)+` AS e SET seq = o.n
			FROM `+q(`outboxtop_adopt_order`)+` AS o
			WHERE o.event_id = e.event_id AND o.n > $1 AND o.n <= $2 AND e.seq IS NULL`, lo, lo+batch); err != nil {
			return err
		}
	}
	if err := step("seq checked", `
		ALTER TABLE `+q(`outbox_event`)+` DROP CONSTRAINT IF EXISTS outboxtop_seq_numbered;
		ALTER TABLE `+q(`outbox_event`)+` ADD CONSTRAINT outboxtop_seq_numbered CHECK (seq IS NOT NULL) NOT VALID`); err != nil {
		return err
	}
	if err := step("seq check validated", `ALTER TABLE `+q(`outbox_event`)+` VALIDATE CONSTRAINT outboxtop_seq_numbered`); err != nil {
		return err
	}
	return step("seq made the identity", `
		ALTER TABLE `+q(`outbox_event`)+` ALTER COLUMN seq SET NOT NULL;
		ALTER TABLE `+q(`outbox_event`)+` DROP CONSTRAINT outboxtop_seq_numbered;
		ALTER TABLE `+q(`outbox_event`)+` ALTER COLUMN seq DROP DEFAULT;
		ALTER TABLE `+q(`outbox_event`)+` ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
		SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence('`+q(`outbox_event`)+`', 'seq'),
			pg_catalog.nextval('`+q(`outboxtop_adopt_seq`)+`'), false);
		DO $c$ BEGIN
			EXECUTE pg_catalog.format('COMMENT ON COLUMN `+q(`outbox_event.seq`)+` IS %L',
				'outboxtop: adopted through seq ' || (SELECT coalesce(pg_catalog.max(n), 0) FROM `+q(`outboxtop_adopt_order`)+`)
				|| ' (rows present at adoption, numbered by created_at and event_id)');
		END $c$;
		DROP SEQUENCE `+q(`outboxtop_adopt_seq`)+`;
		DROP TABLE `+q(`outboxtop_adopt_order`)+``)
}

// seqState is where a seed outbox_event's numbering stands: "" when there
// is no outbox_event, "missing" (no seq), "numbering" (seq not yet the
// identity) or "identity".
func seqState(ctx context.Context, conn *pgx.Conn, schema string) (string, error) {
	var identity *string
	err := conn.QueryRow(ctx, `SELECT a.attidentity::text FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = 'seq' AND NOT a.attisdropped
		WHERE n.nspname = $1 AND c.relname = 'outbox_event' AND c.relkind IN ('r', 'p')`, schema).Scan(&identity)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading outbox_event's seq: %w", err)
	case identity == nil:
		return "missing", nil
	case *identity == "":
		return "numbering", nil
	}
	return "identity", nil
}
