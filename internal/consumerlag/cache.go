package consumerlag

import (
	"context"
	"sync"
	"time"
)

// Cache hands out the last Report and checks again only when it is older than
// the interval, and at least 20 times as long apart as the last check took: a
// slow cluster (a hundred groups, a coordinator failing over) is asked less often
// rather than more. One check runs at a time.
type Cache struct {
	checker  *Checker
	topics   func(context.Context) ([]string, error)
	interval time.Duration
	timeout  time.Duration

	checking sync.Mutex // held for a check
	bg       sync.WaitGroup

	mu      sync.Mutex // guards what follows
	readAt  time.Time
	took    time.Duration
	last    Report
	running bool // a background check is under way
	closed  bool
}

// NewCache checks the lag on the topics that topics returns, at most once per
// interval (at least 5 s), each check bounded by 10 s.
func NewCache(c *Checker, topics func(context.Context) ([]string, error), interval time.Duration) *Cache {
	return &Cache{checker: c, topics: topics, interval: max(interval, 5*time.Second), timeout: 10 * time.Second}
}

// due reports whether the last check is old enough to check again; c.mu held.
func (c *Cache) due() bool {
	return c.readAt.IsZero() || time.Since(c.readAt) >= max(c.interval, 20*c.took)
}

// Report returns the last Report, checking first when it is due (and waiting
// for a check under way).
func (c *Cache) Report() Report {
	c.checking.Lock()
	defer c.checking.Unlock()
	c.mu.Lock()
	if !c.due() {
		defer c.mu.Unlock()
		return c.last
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := time.Now()
	r := CheckTopics(ctx, c.checker, c.topics)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.readAt, c.took = r, time.Now(), time.Since(start)
	return r
}

// Last returns the last Report at once, and false before the first check has
// ended; when a check is due it starts one in the background. A scrape of
// /metrics uses it: brokers that do not answer (the check then takes its whole
// timeout) must not make the relay's other metrics miss the scrape.
func (c *Cache) Last() (Report, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.due() && !c.running && !c.closed {
		c.running = true
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			c.Report()
			c.mu.Lock()
			c.running = false
			c.mu.Unlock()
		}()
	}
	return c.last, !c.readAt.IsZero()
}

// Close waits for a background check and starts no more.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.bg.Wait()
}

// CheckTopics asks topics for the outbox's topics and checks them; when topics
// fails, the Report says so and holds no groups.
func CheckTopics(ctx context.Context, c *Checker, topics func(context.Context) ([]string, error)) Report {
	ts, err := topics(ctx)
	if err != nil {
		return Report{TakenAt: c.now(), Topics: []string{}, Groups: []Group{}, Errors: []string{"finding the outbox's topics: " + err.Error()}}
	}
	return c.Check(ctx, ts)
}
