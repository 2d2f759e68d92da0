package console

import (
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// trend is what successive snapshots say about the flow: how fast events arrive,
// how fast they leave, and whether the backlog grows. A single snapshot cannot say
// any of it, so each answer reports whether there is enough history yet.
type trend struct {
	samples []trendSample
}

// trendSample is one snapshot's numbers, timed by the database's clock.
type trendSample struct {
	at       time.Time
	inserted *int64  // the seq identity's last value
	backlog  int64   // ready + scheduled + leased: what the relay still has to publish
	current  float64 // published/s over the last 10 s
}

// Windows of the trend: the incoming rate matches the published rate's 10 s; the
// backlog's direction needs a longer look to not flap with each batch.
const (
	incomingWindow = 10 * time.Second
	backlogWindow  = 15 * time.Second
	trendKeep      = 2 * time.Minute
)

func sampleOf(s inspect.Snapshot) trendSample {
	c := s.Counts
	return trendSample{at: s.TakenAt, inserted: s.Inserted, backlog: c.Ready + c.Scheduled + c.Leased,
		current: s.Published.CurrentPerSecond}
}

func (t *trend) add(s trendSample) {
	if n := len(t.samples); n > 0 && !s.at.After(t.samples[n-1].at) {
		return // the same snapshot again, or the database's clock stepped back
	}
	t.samples = append(t.samples, s)
	for len(t.samples) > 2 && s.at.Sub(t.samples[0].at) > trendKeep {
		t.samples = t.samples[1:]
	}
}

// since is the oldest sample at least w before the newest (else the oldest there
// is), with the span between them; ok is false with fewer than two samples.
func (t trend) since(w time.Duration) (first, last trendSample, span time.Duration, ok bool) {
	n := len(t.samples)
	if n < 2 {
		return first, last, 0, false
	}
	last = t.samples[n-1]
	first = t.samples[0]
	for i := n - 2; i >= 0; i-- {
		first = t.samples[i]
		if last.at.Sub(first.at) >= w {
			break
		}
	}
	span = last.at.Sub(first.at)
	return first, last, span, span > 0
}

// incoming is events added per second over about the last 10 s (the seq identity's
// advance; rolled-back inserts count too). Without the identity (not readable) it
// is the published rate plus the backlog's growth.
func (t trend) incoming() (float64, bool) {
	first, last, span, ok := t.since(incomingWindow)
	if !ok {
		return 0, false
	}
	if first.inserted != nil && last.inserted != nil {
		return max(float64(*last.inserted-*first.inserted)/span.Seconds(), 0), true
	}
	return max(last.current+float64(last.backlog-first.backlog)/span.Seconds(), 0), true
}

// backlogRate is the backlog's change per second over about the last 30 s:
// positive while it grows.
func (t trend) backlogRate() (float64, bool) {
	first, last, span, ok := t.since(backlogWindow)
	if !ok {
		return 0, false
	}
	return float64(last.backlog-first.backlog) / span.Seconds(), true
}

// drain is how long the backlog takes to empty at its current rate of shrinking;
// ok is false unless it shrinks.
func (t trend) drain() (time.Duration, bool) {
	rate, ok := t.backlogRate()
	if !ok || rate >= 0 || len(t.samples) == 0 {
		return 0, false
	}
	backlog := t.samples[len(t.samples)-1].backlog
	return time.Duration(float64(backlog) / -rate * float64(time.Second)), true
}

// publishing: the newest sample saw events published in its last 10 s. A
// backlog that shrinks while nothing is published is not draining (events were
// parked, skipped or archived), so it gets no forecast.
func (t trend) publishing() bool {
	n := len(t.samples)
	return n > 0 && t.samples[n-1].current > 0
}

// currents are the published rates of the samples, oldest first, for the sparkline.
func (t trend) currents() []float64 {
	out := make([]float64, len(t.samples))
	for i, s := range t.samples {
		out[i] = s.current
	}
	return out
}
