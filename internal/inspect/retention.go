package inspect

import (
	"context"
	"fmt"
	"time"
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
	if batch <= 0 {
		batch = 1000
	}
	total, err := i.housekeep(ctx, "archive_published", age, batch)
	if err != nil {
		return total, fmt.Errorf("archiving published events: %w", err)
	}
	return total, nil
}

// housekeep runs statement stmt, a call of one of the schema's housekeeping
// functions (migrations/functions/), until a batch comes back short. Each call
// is its own transaction.
func (i *Inspector) housekeep(ctx context.Context, stmt string, age time.Duration, batch int) (int64, error) {
	var total int64
	q := i.q.SQL(stmt)
	for {
		var n int64
		if err := i.pool.QueryRow(ctx, q, interval(age), batch).Scan(&n); err != nil {
			return total, err
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
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
	total, err := i.housekeep(ctx, "delete_archived", age, batch)
	if err != nil {
		return total, fmt.Errorf("deleting archived events: %w", err)
	}
	return total, nil
}
