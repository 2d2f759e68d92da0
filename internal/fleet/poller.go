package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/pgsql"
)

// Config configures a Poller.
type Config struct {
	// Thresholds decide each row's level (DefaultThresholds when zero).
	Thresholds *Thresholds
	// MaxConns bounds each outbox's polling pool: 1 or 2 (default 2).
	MaxConns int32
	// Dial reaches an outbox's brokers for its consumer lag check (default:
	// plain TCP). Only outboxes that name brokers are checked.
	Dial func(brokers []string) consumerlag.Dial
}

// Row is one outbox as the last poll saw it.
type Row struct {
	Name    string            `json:"name"`
	Schema  string            `json:"schema"`
	Labels  map[string]string `json:"labels,omitempty"`
	Brokers []string          `json:"brokers,omitempty"`
	Groups  []string          `json:"groups,omitempty"`
	// Polled is false until the outbox's first poll ends.
	Polled bool `json:"-"`
	// Reachable: the last poll read a snapshot; else Reason says why not (one
	// line, from the database or the network: sanitize before showing it).
	Reachable bool      `json:"reachable"`
	Reason    string    `json:"reason,omitempty"`
	PolledAt  time.Time `json:"polled_at"`
	// Took is how long the last poll ran.
	Took inspect.Age `json:"took_seconds"`
	// Leased are the live leases: a relay holds a batch. ExpiredLeases: a relay
	// died or stalled holding one.
	Leased        int64 `json:"leased"`
	ExpiredLeases int64 `json:"expired_leases"`
	// Relays are the relays live now: heartbeating (migration 010) or holding a
	// live lease (inspect.Snapshot.RelaysLive).
	Relays int `json:"relays"`
	// NoRelay: publishable events have waited over ten seconds, no relay is
	// live, and nothing was published in the last ten seconds.
	NoRelay bool `json:"no_relay"`
	// Publishable are the ready events not waiting behind a failed or scheduled
	// one; OldestPublishableAge is the relay's lag (status's "oldest publishable").
	Publishable       int64 `json:"publishable"`
	PublishableApprox bool  `json:"publishable_approx,omitempty"`
	// PublishableBound, FailedBound and BlockedBound say how each of those counts
	// relates to the truth (the snapshot's bounds; the *Approx booleans say the
	// same for older readers).
	PublishableBound     inspect.Bound `json:"publishable_bound,omitempty"`
	FailedBound          inspect.Bound `json:"failed_bound,omitempty"`
	BlockedBound         inspect.Bound `json:"blocked_bound,omitempty"`
	OldestPublishableAge inspect.Age   `json:"oldest_publishable_age_seconds"`
	Pending              int64         `json:"pending"`
	Failed               int64         `json:"failed"`
	FailedApprox         bool          `json:"failed_approx,omitempty"`
	Blocked              int64         `json:"blocked"`
	BlockedApprox        bool          `json:"blocked_approx,omitempty"`
	// RateIn is events added per second between the last two polls (nil until
	// there are two); RateOut is published per second over the last ten seconds.
	RateIn  *float64 `json:"rate_in_per_second"`
	RateOut float64  `json:"rate_out_per_second"`
	// Level is the verdict (UNKNOWN when unreachable), Crossed what made it.
	Level      Level       `json:"level"`
	Crossed    []string    `json:"crossed"`
	Thresholds []Threshold `json:"thresholds"`
	// Lag is the consumer lag of the outbox's groups as the last lag check read
	// it: nil without brokers or before the first check ends. It is checked on
	// a schedule of its own, so it may be older than PolledAt.
	Lag *Lag `json:"consumers,omitempty"`
	// Snapshot is the last snapshot read (nil when unreachable).
	Snapshot *inspect.Snapshot `json:"-"`
}

// Condition is the row's worst condition in a few words: why it cannot be
// reached, the first bound crossed, "no relay", or "ok".
func (r Row) Condition() string {
	switch {
	case !r.Polled:
		return "polling…"
	case !r.Reachable:
		return r.Reason
	case len(r.Crossed) > 0:
		return r.Crossed[0]
	case r.NoRelay:
		return "no relay: publishable events wait"
	case r.Lag != nil && r.Lag.Problem != "":
		return "kafka: " + r.Lag.Problem
	}
	return "ok"
}

// Worse orders rows worst first: by level (UNKNOWN, CRITICAL, WARNING, OK), then
// the oldest publishable age, failed events, and name.
func Worse(a, b Row) int {
	return cmp.Or(
		cmp.Compare(b.Level, a.Level),
		cmp.Compare(b.OldestPublishableAge, a.OldestPublishableAge),
		cmp.Compare(b.Failed, a.Failed),
		cmp.Compare(a.Name, b.Name),
	)
}

// Poller polls the outboxes of a fleet file. Its methods are safe for
// concurrent use.
type Poller struct {
	file    *File
	th      Thresholds
	members []*member
	updated chan struct{}
}

type member struct {
	o       Outbox
	pool    *pgxpool.Pool
	in      *inspect.Inspector
	th      Thresholds
	checker *consumerlag.Checker // nil without brokers
	// polled is closed when the first poll of the database ends.
	polled     chan struct{}
	polledOnce sync.Once

	mu           sync.Mutex
	row          Row  // the database's part, with its verdict alone
	lag          *Lag // the last lag check
	prevInserted *int64
	prevAt       time.Time
}

// NewPoller makes a pool for every outbox of f (connections open on first use,
// so an unreachable database costs nothing here). Close releases them.
func NewPoller(f *File, cfg Config) (*Poller, error) {
	th := DefaultThresholds()
	if cfg.Thresholds != nil {
		th = *cfg.Thresholds
	}
	maxConns := cfg.MaxConns
	if maxConns <= 0 {
		maxConns = 2
	}
	if maxConns > 2 {
		return nil, errors.New("fleet: a polling pool has at most 2 connections")
	}
	dial := cfg.Dial
	if dial == nil {
		dial = plainDial
	}
	p := &Poller{file: f, th: th, updated: make(chan struct{}, 1)}
	for _, o := range f.Outboxes {
		// A lock held by a stuck session turns into a reason that says so
		// before the poll's own deadline ends it with a plain timeout.
		pool, err := newPool(o, maxConns, "outboxtop fleet", o.Timeout*8/10)
		if err != nil {
			p.Close()
			return nil, err
		}
		in, err := inspect.New(pool, o.Schema, inspect.ReadOnly())
		if err != nil {
			pool.Close()
			p.Close()
			return nil, fmt.Errorf("outbox %q: %w", o.Name, err)
		}
		m := &member{o: o, pool: pool, in: in, th: th, polled: make(chan struct{})}
		if len(o.Brokers) > 0 {
			// The client connects on first use: brokers that do not answer cost
			// nothing here.
			c, err := consumerlag.New(dial(o.Brokers), consumerlag.Options{Groups: o.Groups})
			if err != nil {
				pool.Close()
				p.Close()
				return nil, fmt.Errorf("outbox %q: groups: %w", o.Name, err)
			}
			m.checker = c
		}
		p.members = append(p.members, m)
		m.row = m.base()
		m.row.Level = Unknown
	}
	return p, nil
}

// newPool is a pool on o's database that gives up connecting after o.Timeout
// and never waits for a lock longer than lockTimeout, set up like every
// session outboxtop opens (pgsql.Session: outboxtop's search_path).
func newPool(o Outbox, maxConns int32, app string, lockTimeout time.Duration) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(o.DSN())
	if err != nil {
		return nil, fmt.Errorf("outbox %q: the connection string does not parse", o.Name)
	}
	pcfg.MaxConns = maxConns
	pool, err := pgsql.Pool(context.Background(), pcfg, pgsql.Session{App: app, LockTimeout: lockTimeout, ConnectTimeout: o.Timeout})
	if err != nil {
		return nil, fmt.Errorf("outbox %q: %w", o.Name, err)
	}
	return pool, nil
}

// Outboxes are the fleet file's outboxes, in the file's order.
func (p *Poller) Outboxes() []Outbox { return p.file.Outboxes }

// File is the fleet file polled.
func (p *Poller) File() *File { return p.file }

// Rows are the outboxes as last polled, worst first.
func (p *Poller) Rows() []Row {
	rows := make([]Row, 0, len(p.members))
	for _, m := range p.members {
		rows = append(rows, m.current())
	}
	slices.SortStableFunc(rows, Worse)
	return rows
}

// Updated receives after a poll of any outbox ends (coalesced: one value
// stands for any number of polls).
func (p *Poller) Updated() <-chan struct{} { return p.updated }

// Poll polls every outbox once, all at the same time, and returns the rows
// worst first. An outbox with brokers has its consumer lag checked after its
// database answered (or did not): Poll returns when the slowest outbox is
// done, within the largest timeout plus lag timeout of the fleet.
func (p *Poller) Poll(ctx context.Context) []Row {
	var wg sync.WaitGroup
	for _, m := range p.members {
		wg.Go(func() {
			p.poll(ctx, m)
			if m.checker != nil {
				p.pollLag(ctx, m)
			}
		})
	}
	wg.Wait()
	return p.Rows()
}

// Run polls each outbox on its own schedule until ctx ends, then returns once
// every poll has stopped. An outbox's consumer lag is checked in a loop of its
// own, after the first poll of its database, every lagPause: brokers that do
// not answer hold up neither its database's row nor any other outbox.
func (p *Poller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range p.members {
		if m.checker != nil {
			wg.Go(func() {
				select {
				case <-ctx.Done():
					return
				case <-m.polled:
				}
				for {
					took := p.pollLag(ctx, m)
					select {
					case <-ctx.Done():
						return
					case <-time.After(lagPause(m.o, took)):
					}
				}
			})
		}
		wg.Go(func() {
			t := time.NewTimer(0)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				p.poll(ctx, m)
				t.Reset(m.o.PollInterval)
			}
		})
	}
	wg.Wait()
}

// Close closes every pool and Kafka client.
func (p *Poller) Close() {
	for _, m := range p.members {
		m.pool.Close()
		if m.checker != nil {
			m.checker.Close()
		}
	}
}

func (p *Poller) poll(ctx context.Context, m *member) {
	row := m.read(ctx)
	if ctx.Err() != nil && !row.Reachable {
		return // stopping: keep the last row rather than "canceled"
	}
	m.mu.Lock()
	m.row = row
	m.mu.Unlock()
	m.polledOnce.Do(func() { close(m.polled) })
	p.notify()
}

// pollLag checks m's consumer lag and returns how long that took.
func (p *Poller) pollLag(ctx context.Context, m *member) time.Duration {
	l := m.checkLag(ctx)
	if ctx.Err() != nil {
		return l.Took.Duration() // stopping: keep the last check
	}
	m.mu.Lock()
	m.lag = l
	m.mu.Unlock()
	p.notify()
	return l.Took.Duration()
}

func (p *Poller) notify() {
	select {
	case p.updated <- struct{}{}:
	default:
	}
}

// current is m's row: the database's part with the last lag check, the lag
// thresholds applied to it (worst wins). An unreachable database stays
// UNKNOWN whatever the lag says.
func (m *member) current() Row {
	m.mu.Lock()
	r, l := m.row, m.lag
	m.mu.Unlock()
	if l == nil {
		return r
	}
	r.Lag = l
	if !r.Reachable {
		return r
	}
	c := &Check{Level: r.Level, Crossed: slices.Clone(r.Crossed), Thresholds: slices.Clone(r.Thresholds)}
	m.th.CheckLag(c, l.Report, nil)
	r.Level, r.Crossed, r.Thresholds = c.Level, c.Crossed, c.Thresholds
	return r
}

func (m *member) base() Row {
	return Row{Name: m.o.Name, Schema: m.o.Schema, Labels: m.o.Labels, Brokers: m.o.Brokers, Groups: m.o.Groups,
		Crossed: []string{}, Thresholds: []Threshold{}}
}

// read takes one snapshot of m's outbox within its timeout.
func (m *member) read(ctx context.Context) Row {
	pctx, cancel := context.WithTimeout(ctx, m.o.Timeout)
	defer cancel()
	start := time.Now()
	row := m.base()
	row.Polled = true
	s, err := m.in.Snapshot(pctx)
	var publishable inspect.Age
	if err == nil {
		publishable, err = m.in.OldestPublishableAge(pctx)
	}
	row.Took = inspect.Age(time.Since(start))
	row.PolledAt = time.Now()
	if err != nil {
		row.Level = Unknown
		row.Reason = reason(pctx, err, m.o.Timeout)
		return row
	}
	row.PolledAt = s.TakenAt
	row.Reachable = true
	row.Snapshot = &s
	c := s.Counts
	row.Leased, row.ExpiredLeases = c.Leased, s.ExpiredLeases
	row.Publishable, row.PublishableBound = c.Publishable, c.Bounds.Publishable
	row.PublishableApprox = row.PublishableBound != inspect.Exact
	row.OldestPublishableAge = publishable
	row.Pending = c.Pending
	row.Failed, row.FailedApprox, row.FailedBound = c.Failed, c.Approx.Failed, c.Bounds.Failed
	row.Blocked, row.BlockedApprox, row.BlockedBound = s.Blocked.Count, s.Blocked.Estimate, s.Blocked.Bound
	row.RateOut = s.Published.CurrentPerSecond
	row.Relays = s.RelaysLive()
	row.NoRelay = row.Publishable > 0 && row.Relays == 0 && c.Leased == 0 && s.Published.Last10s == 0 && publishable.Duration() > 10*time.Second
	check := m.th.Check(s, publishable)
	row.Level, row.Crossed, row.Thresholds = check.Level, check.Crossed, check.Thresholds
	m.mu.Lock()
	if s.Inserted != nil && m.prevInserted != nil {
		if dt := s.TakenAt.Sub(m.prevAt).Seconds(); dt > 0 {
			r := max(0, float64(*s.Inserted-*m.prevInserted)/dt)
			row.RateIn = &r
		}
	}
	if s.Inserted != nil {
		m.prevInserted, m.prevAt = s.Inserted, s.TakenAt
	}
	m.mu.Unlock()
	return row
}

// reason is why a poll failed, in one line without the pgx preamble.
func reason(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	// A network error says the address and what the system said, which is all
	// pgx's longer text repeats.
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil && op.Err != nil {
		return fmt.Sprintf("%s: %v", op.Addr, op.Err)
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	// "failed to connect to `user=… database=…`: <cause>": the cause is the news.
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		msg = msg[i+3:]
	}
	msg = strings.TrimPrefix(msg, "snapshot: ")
	return msg
}

// Open connects a pool of its own (at most maxConns connections) to the
// outbox named name, for a console on it: the poller's pools stay the
// poller's. Its actions wait for locks as long as the CLI's
// (inspect.ActionLockTimeout), not a poll's. The caller closes it.
func (p *Poller) Open(ctx context.Context, name string, maxConns int32) (*pgxpool.Pool, Outbox, error) {
	for _, o := range p.file.Outboxes {
		if o.Name != name {
			continue
		}
		pool, err := newPool(o, maxConns, "outboxtop", inspect.ActionLockTimeout)
		if err != nil {
			return nil, o, err
		}
		pctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		if err := pool.Ping(pctx); err != nil {
			pool.Close()
			return nil, o, fmt.Errorf("outbox %q: %s", name, reason(pctx, err, o.Timeout))
		}
		return pool, o, nil
	}
	return nil, Outbox{}, fmt.Errorf("no outbox %q in %s", name, p.file.Path)
}
