// Package housekeeping is the relay's retention policy as a service: it moves
// events published longer ago than ArchiveAfter to outbox_event_archive and
// deletes archived events older than Retention, every Every, until its context
// ends. Several relays may run it against one database at once: the schema's
// housekeeping functions lock their batches with SKIP LOCKED.
//
// A round that fails is logged and counted (outboxtop_housekeeping_rounds_total
// with result="error") and tried again at the next tick; an alert on
// outboxtop_housekeeping_last_success_timestamp_seconds sees housekeeping that
// stopped succeeding before published rows pile up.
package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Config is the policy. The zero Config does nothing.
type Config struct {
	// ArchiveAfter archives events published longer ago than this; 0: never.
	ArchiveAfter time.Duration
	// Retention deletes archived events archived longer ago than this; 0: never.
	Retention time.Duration
	// Every is the time between rounds: at least a second when the policy is on.
	Every time.Duration
	// Batch is the rows per transaction (default 1000).
	Batch int
}

// Enabled reports whether the policy does anything.
func (c Config) Enabled() bool { return c.ArchiveAfter > 0 || c.Retention > 0 }

// Validate checks the policy; its errors name the flags of outboxtop that set it.
func (c Config) Validate() error {
	if c.ArchiveAfter < 0 || c.Retention < 0 {
		return errors.New("--archive-after and --archive-retention must not be negative")
	}
	if c.Enabled() && c.Every < time.Second {
		return fmt.Errorf("--retention-interval must be at least 1s, not %v", c.Every)
	}
	return nil
}

// Service runs the policy.
type Service struct {
	cfg Config
	in  *inspect.Inspector
	log *slog.Logger
	m   *metrics
}

// New returns the service for a writable inspector. reg, when not nil, receives
// the service's metrics; log, when nil, is slog.Default().
func New(in *inspect.Inspector, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if in.IsReadOnly() {
		return nil, errors.New("housekeeping needs an inspector that may write")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Service{cfg: cfg, in: in, log: log}
	if reg != nil && cfg.Enabled() {
		s.m = newMetrics(reg)
	}
	return s, nil
}

// Result is what one round did.
type Result struct {
	Archived, Deleted int64
}

// Round runs the policy once. Both halves run even when the first fails; the
// error joins theirs.
func (s *Service) Round(ctx context.Context) (Result, error) {
	var r Result
	var errs []error
	if s.cfg.ArchiveAfter > 0 {
		n, err := s.in.ArchiveOlderThan(ctx, s.cfg.ArchiveAfter, s.cfg.Batch)
		r.Archived = n
		if err != nil {
			errs = append(errs, err)
		} else if n > 0 {
			s.log.Info("archived published events", "events", n, "older_than", s.cfg.ArchiveAfter)
		}
	}
	if s.cfg.Retention > 0 {
		n, err := s.in.DeleteArchivedOlderThan(ctx, s.cfg.Retention, s.cfg.Batch)
		r.Deleted = n
		if err != nil {
			errs = append(errs, err)
		} else if n > 0 {
			s.log.Info("deleted archived events", "events", n, "older_than", s.cfg.Retention)
		}
	}
	return r, errors.Join(errs...)
}

// Run runs a round at once and then every Every until ctx ends. It returns at
// once when the policy is off. A round cut short by ctx is not counted.
func (s *Service) Run(ctx context.Context) {
	if !s.cfg.Enabled() {
		return
	}
	t := time.NewTicker(s.cfg.Every)
	defer t.Stop()
	for {
		r, err := s.Round(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Error("archive housekeeping", "err", err)
		}
		s.m.round(r, err != nil)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// metrics let an alert see that the housekeeping stopped succeeding: published
// rows then pile up in outbox_event.
type metrics struct {
	rounds      *prometheus.CounterVec
	lastSuccess prometheus.Gauge
	archived    prometheus.Counter
	deleted     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outboxtop_housekeeping_rounds_total",
			Help: "Archive housekeeping rounds by result (ok, error)."}, []string{"result"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outboxtop_housekeeping_last_success_timestamp_seconds",
			Help: "Unix time of the last archive housekeeping round without an error."}),
		archived: prometheus.NewCounter(prometheus.CounterOpts{Name: "outboxtop_housekeeping_archived_total",
			Help: "Published events moved to outbox_event_archive by the housekeeping."}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "outboxtop_housekeeping_deleted_total",
			Help: "Archived events deleted by the housekeeping (--archive-retention)."}),
	}
	m.rounds.WithLabelValues("ok")
	m.rounds.WithLabelValues("error")
	reg.MustRegister(m.rounds, m.lastSuccess, m.archived, m.deleted)
	return m
}

func (m *metrics) round(r Result, failed bool) {
	if m == nil {
		return
	}
	m.archived.Add(float64(r.Archived))
	m.deleted.Add(float64(r.Deleted))
	if failed {
		m.rounds.WithLabelValues("error").Inc()
		return
	}
	m.rounds.WithLabelValues("ok").Inc()
	m.lastSuccess.SetToCurrentTime()
}
