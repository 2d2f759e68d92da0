package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Summary is what a demo run did, taken from the counters and the database.
type Summary struct {
	// Elapsed is how long the order service ran.
	Elapsed time.Duration
	// Committed is the number of events the order service committed.
	Committed int64
	// Published is how many of this run's events the outbox marks published.
	Published int64
	// Produced is the number of records Kafka acknowledged to the relay,
	// re-publishes of killed batches included.
	Produced int64
	// Applied is the number of records whose effect the consumer applied.
	Applied int64
	// Duplicates is the number of redelivered records the inbox absorbed.
	Duplicates int64
	// Dead is the number of this run's events the relay failed.
	Dead int64
	// Invalid is the number of records the consumer skipped as unusable.
	Invalid int64
	// Kills is the number of batch kills asked for.
	Kills int64
	// Report compares the orders with the consumer's projections.
	Report Report
}

// Settled reports whether every committed event was published and its effect
// applied exactly once, in order, with nothing dead.
func (s Summary) Settled() bool {
	return s.Published == s.Committed && s.Applied == s.Committed && s.Dead == 0 && s.Invalid == 0 && s.Report.Settled()
}

// caughtUp reports whether the consumer has read every record Kafka
// acknowledged, so Duplicates is final.
func (s Summary) caughtUp() bool { return s.Applied+s.Duplicates+s.Invalid >= s.Produced }

// Print writes the summary for a reader.
func (s Summary) Print(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "committed   %d events (each with its order change, in one transaction)\n", s.Committed)
	fmt.Fprintf(w, "published   %d (marked in the outbox)\n", s.Published)
	fmt.Fprintf(w, "produced    %d records acknowledged by Kafka (re-publishes included; batch kills: %d)\n", s.Produced, s.Kills)
	fmt.Fprintf(w, "applied     %d effects, each through the inbox\n", s.Applied)
	fmt.Fprintf(w, "duplicates  %d absorbed by the inbox\n", s.Duplicates)
	fmt.Fprintf(w, "dead        %d events\n", s.Dead)
	fmt.Fprintf(w, "projection  %s\n", s.Report)
	if s.Settled() {
		fmt.Fprintln(w, "settled: every committed event was published and applied exactly once, in order")
	} else {
		fmt.Fprintln(w, "NOT settled: committed, published and applied differ, or events are dead")
	}
}

// Summary reads the counters and the database.
func (d *Demo) Summary(ctx context.Context) (Summary, error) {
	c := d.Counters.Snapshot()
	s := Summary{Committed: c.Committed, Applied: c.Applied, Duplicates: c.Duplicates, Invalid: c.Invalid,
		Produced: d.Produced(), Kills: d.Kills()}
	err := d.Pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE published_at IS NOT NULL AND event_type <> $2),
			count(*) FILTER (WHERE published_at IS NULL AND failed_at IS NOT NULL)
		FROM `+ident(d.cfg.Outbox)+`.outbox_event WHERE seq > $1`, d.startSeq, OrderPoisoned).
		Scan(&s.Published, &s.Dead)
	if err != nil {
		return s, fmt.Errorf("reading the outbox: %w", err)
	}
	s.Report, err = Verify(ctx, d.Pool, d.cfg.Schema)
	return s, err
}

// Settle stops the order service and waits until everything it committed is
// published and applied and the consumer has read every record Kafka
// acknowledged, or ctx ends. It returns the last summary either way.
func (d *Demo) Settle(ctx context.Context) (Summary, error) {
	d.StopOrders()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := d.Summary(ctx)
		if err != nil {
			return s, err
		}
		if s.Settled() && s.caughtUp() {
			return s, nil
		}
		// The relay's marks are only in the database: poll it.
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-tick.C:
		}
	}
}

// HeadlessConfig configures RunHeadless.
type HeadlessConfig struct {
	// Duration is how long the order service runs.
	Duration time.Duration
	// Faults schedules a batch kill at a fifth of Duration and a broker outage
	// from two fifths to three fifths.
	Faults bool
	// SettleTimeout bounds the wait for everything to be published and
	// applied after Duration; 0 means 60 s.
	SettleTimeout time.Duration
	// Progress receives a line per fault and a progress line every
	// ProgressEvery; nil discards.
	Progress io.Writer
	// ProgressEvery is the interval between progress lines; 0 means 5 s.
	ProgressEvery time.Duration
}

// ErrInterrupted is returned by RunHeadless when ctx ended before the run
// could settle.
var ErrInterrupted = errors.New("interrupted before the demo settled")

// RunHeadless runs the demo without a terminal: the order service for
// cfg.Duration (with faults when asked), then waits for everything to settle,
// stops and returns the summary. The summary is returned with ErrInterrupted
// when ctx ends first.
func (d *Demo) RunHeadless(ctx context.Context, cfg HeadlessConfig) (Summary, error) {
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = 60 * time.Second
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 5 * time.Second
	}
	out := cfg.Progress
	if out == nil {
		out = io.Discard
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(runCtx) }()
	started := time.Now()
	finish := func(s Summary, err error) (Summary, error) {
		stop()
		if rerr := <-runErr; rerr != nil && err == nil {
			err = rerr
		}
		// Everything has stopped: read the final counts.
		if final, serr := d.Summary(context.WithoutCancel(ctx)); serr == nil {
			final.Elapsed = s.Elapsed
			s = final
		}
		return s, err
	}

	type fault struct {
		at time.Duration
		do func()
	}
	var faults []fault
	if cfg.Faults {
		faults = []fault{
			{cfg.Duration / 5, func() {
				d.KillBatch()
				fmt.Fprintf(out, "%5s  fault: killing the next relay batch after Kafka's ack\n", since(started))
			}},
			{2 * cfg.Duration / 5, func() { d.SetOutage(true); fmt.Fprintf(out, "%5s  fault: broker outage on\n", since(started)) }},
			{3 * cfg.Duration / 5, func() { d.SetOutage(false); fmt.Fprintf(out, "%5s  fault: broker outage off\n", since(started)) }},
		}
	}
	end := time.NewTimer(cfg.Duration)
	defer end.Stop()
	progress := time.NewTicker(cfg.ProgressEvery)
	defer progress.Stop()
	for running := true; running; {
		var next <-chan time.Time
		nextFault := time.NewTimer(time.Hour)
		if len(faults) > 0 {
			nextFault.Reset(max(0, faults[0].at-time.Since(started)))
			next = nextFault.C
		}
		select {
		case <-ctx.Done():
			d.SetOutage(false)
			return finish(Summary{Elapsed: time.Since(started)}, ErrInterrupted)
		case err := <-runErr:
			runErr <- err // for finish
			return finish(Summary{Elapsed: time.Since(started)}, err)
		case <-next:
			faults[0].do()
			faults = faults[1:]
		case <-progress.C:
			if s, err := d.Summary(ctx); err == nil {
				fmt.Fprintf(out, "%5s  committed %d · published %d · applied %d · duplicates %d · dead %d\n",
					since(started), s.Committed, s.Published, s.Applied, s.Duplicates, s.Dead)
			}
		case <-end.C:
			running = false
		}
		nextFault.Stop()
	}
	d.SetOutage(false) // a duration shorter than the schedule must not leave Kafka cut
	elapsed := time.Since(started)
	fmt.Fprintf(out, "%5s  order service stopped; waiting for the relay and the consumer to settle\n", since(started))
	settleCtx, cancel := context.WithTimeout(ctx, cfg.SettleTimeout)
	defer cancel()
	s, err := d.Settle(settleCtx)
	s.Elapsed = elapsed
	if err != nil && ctx.Err() != nil {
		return finish(s, ErrInterrupted)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil // not settled in time: the summary says so
	}
	return finish(s, err)
}

func since(t time.Time) string { return time.Since(t).Round(time.Second).String() }
