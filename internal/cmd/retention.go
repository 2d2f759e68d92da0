package cmd

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/housekeeping"
)

// retentionFlags are the embedded relay's housekeeping (internal/housekeeping):
// archive published events after a while, delete archived ones after longer.
// Both off by default.
type retentionFlags struct {
	archiveAfter     time.Duration
	archiveRetention time.Duration
	every            time.Duration
}

func (f *retentionFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.archiveAfter, "archive-after", 0, "move events published longer ago than this to outbox_event_archive (off when 0; needs the embedded relay)")
	fs.DurationVar(&f.archiveRetention, "archive-retention", 0, "delete archived events archived longer ago than this (off when 0; skipped events are kept; needs the embedded relay)")
	fs.DurationVar(&f.every, "retention-interval", time.Minute, "how often the archive housekeeping runs")
}

func (f *retentionFlags) config() housekeeping.Config {
	return housekeeping.Config{ArchiveAfter: f.archiveAfter, Retention: f.archiveRetention, Every: f.every}
}

func (f *retentionFlags) check() error {
	if err := f.config().Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}
