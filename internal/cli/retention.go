package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/inspect"
)

// retentionFlags are the relay's housekeeping: archive published events after a
// while, delete archived ones after longer. Both off by default.
type retentionFlags struct {
	archiveAfter     time.Duration
	archiveRetention time.Duration
	every            time.Duration
}

func (f *retentionFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.archiveAfter, "archive-after", 0, "move events published longer ago than this to outbox_event_archive (off when 0)")
	fs.DurationVar(&f.archiveRetention, "archive-retention", 0, "delete archived events archived longer ago than this (off when 0; skipped events are kept)")
	fs.DurationVar(&f.every, "retention-interval", time.Minute, "how often the archive housekeeping runs")
}

func (f *retentionFlags) check() error {
	if f.archiveAfter < 0 || f.archiveRetention < 0 {
		return usagef("--archive-after and --archive-retention must not be negative")
	}
	if (f.archiveAfter > 0 || f.archiveRetention > 0) && f.every < time.Second {
		return usagef("--retention-interval must be at least 1s, not %v", f.every)
	}
	return nil
}

// run does the housekeeping every f.every until ctx ends; several relays may run
// it at once (the batches skip each other's locked rows). Errors are logged and
// retried next round.
func (f *retentionFlags) run(ctx context.Context, pool *pgxpool.Pool, schema string, log *slog.Logger) {
	if f.archiveAfter == 0 && f.archiveRetention == 0 {
		return
	}
	in, err := inspect.New(pool, schema)
	if err != nil {
		log.Error("archive housekeeping disabled", "err", err)
		return
	}
	t := time.NewTicker(f.every)
	defer t.Stop()
	for {
		if f.archiveAfter > 0 {
			n, err := in.ArchiveOlderThan(ctx, f.archiveAfter, 1000)
			if err != nil && ctx.Err() == nil {
				log.Error("archiving published events", "err", err)
			} else if n > 0 {
				log.Info("archived published events", "events", n, "older_than", f.archiveAfter)
			}
		}
		if f.archiveRetention > 0 {
			n, err := in.DeleteArchivedOlderThan(ctx, f.archiveRetention, 1000)
			if err != nil && ctx.Err() == nil {
				log.Error("deleting archived events", "err", err)
			} else if n > 0 {
				log.Info("deleted archived events", "events", n, "older_than", f.archiveRetention)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
