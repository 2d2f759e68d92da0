package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ArchiveOlderThan moves events published more than age ago to the archive, batch
// rows per transaction (default 1000), and returns how many it moved. It is the
// relay's --archive-after: no audit row. Cancel ctx to stop between batches.
func (i *Inspector) ArchiveOlderThan(ctx context.Context, age time.Duration, batch int) (int64, error) {
	if i.readOnly {
		return 0, ErrReadOnly
	}
	if age <= 0 {
		return 0, fmt.Errorf("archive age must be positive")
	}
	var res Result
	err := i.archiveBatches(ctx, Request{Action: Archive, Filter: Filter{OlderThan: age}, BatchSize: batch}, &res)
	if err != nil {
		return res.Rows, fmt.Errorf("archiving published events: %w", err)
	}
	return res.Rows, nil
}

// DeleteArchivedOlderThan deletes archived events archived more than age ago, batch
// rows per transaction (default 1000), and returns how many it deleted. It is the
// relay's --archive-retention. Skipped events (archived unpublished) are kept: they
// were never delivered, and only an operator decides to let them go.
func (i *Inspector) DeleteArchivedOlderThan(ctx context.Context, age time.Duration, batch int) (int64, error) {
	if i.readOnly {
		return 0, ErrReadOnly
	}
	if age <= 0 {
		return 0, fmt.Errorf("retention must be positive")
	}
	if batch <= 0 {
		batch = 1000
	}
	var total int64
	for {
		var n int64
		err := pgx.BeginFunc(ctx, i.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM `+i.archive+` WHERE event_id IN (
					SELECT event_id FROM `+i.archive+`
					WHERE archived_at <= now() - $1::interval AND published_at IS NOT NULL
					ORDER BY archived_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, interval(age), batch)
			n = tag.RowsAffected()
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("deleting archived events: %w", err)
		}
		if n < int64(batch) {
			return total, nil
		}
	}
}
