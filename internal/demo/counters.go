package demo

import (
	"context"
	"sync"
)

// Stats is a snapshot of what the demo's order service and consumer did.
type Stats struct {
	// Committed is the number of events the order service committed to the
	// outbox (each with its order change).
	Committed int64
	// Poisoned is the number of poison events injected (not in Committed).
	Poisoned int64
	// WriteErrors counts order-service transactions that failed.
	WriteErrors int64

	// Applied is the number of records whose effect the consumer applied.
	Applied int64
	// Duplicates is the number of redelivered records the inbox skipped.
	Duplicates int64
	// Invalid is the number of records skipped for lack of a usable event_id.
	Invalid int64
	// ConsumeErrors counts failed attempts to apply a record (each retried).
	ConsumeErrors int64
}

// Counters are the demo's shared counters. Both the order service and the
// consumer add to one Counters, and anyone may wait for a condition on them.
// The zero value is ready to use.
type Counters struct {
	mu      sync.Mutex
	s       Stats
	changed chan struct{}
}

// Snapshot returns the current counts.
func (c *Counters) Snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

// WaitFor returns once cond holds for the counts, or ctx's error.
func (c *Counters) WaitFor(ctx context.Context, cond func(Stats) bool) error {
	for {
		c.mu.Lock()
		s := c.s
		ch := c.changedLocked()
		c.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Counters) add(f func(*Stats)) {
	c.mu.Lock()
	f(&c.s)
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
	c.mu.Unlock()
}

func (c *Counters) changedLocked() chan struct{} {
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}
