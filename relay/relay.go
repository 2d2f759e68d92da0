package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Relay moves outbox events to Kafka. Create it with New and start it with Run;
// Pause, Resume and Status are safe to call from other goroutines.
type Relay struct {
	pool  *pgxpool.Pool
	kafka *kgo.Client
	cfg   Config
	sql   statements
	log   *slog.Logger
	m     *Metrics

	wake      chan struct{} // events were inserted (wake.go)
	settled   chan struct{} // a batch finished: its aggregates may be unblocked
	resume    chan struct{}
	brokerUp  chan struct{} // the brokers answer again
	mu        sync.Mutex
	paused    bool
	leases    map[uuid.UUID]*batch // the batches in flight, by lease token (Status().InFlight counts them)
	brokerOK  atomic.Bool
	crashNext atomic.Bool
	stats     stats
	lastError atomic.Pointer[timedError]
	heads     headWatch
	cursor    claimCursor // where claims start reading (cursor.go)
	hints     headHints   // the ordered claim's last heads (cursor.go)
	missing   *missingTopics
	// missingWait bounds the wait of a record to a topic found missing
	// (missingTopicWait; tests shorten it).
	missingWait time.Duration
	waiters     sync.Map // lease token → aggregates of the batch with blocked rows, and the last seq of each one's run (map[aggregateKey]int64)

	beatStarted   atomic.Bool         // a heartbeat was written: started_at is set
	beatWarned    atomic.Int64        // when a failing heartbeat was last logged (unix ns)
	historyWarned atomic.Int64        // when unwritten attempt history was last logged (unix ns)
	sweepPaused   func(time.Duration) // tests: told of each pause between sweep chunks
	skipFinalBeat atomic.Bool         // tests: end as a killed process would, without the stopped beat
}

type batch struct {
	claimedAt time.Time
	renewedAt time.Time
	size      int
}

type timedError struct {
	at  time.Time
	msg string
}

// New checks cfg and returns a relay that publishes through client. The client
// should come from NewKafkaClient (acks=all, idempotent, sized to the config).
func New(pool *pgxpool.Pool, client *kgo.Client, cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := cfg.Metrics
	if m == nil {
		m = NewMetrics(nil)
	}
	r := &Relay{
		pool: pool, kafka: client, cfg: cfg, sql: newStatements(cfg.Schema),
		log: cfg.Logger, m: m,
		wake:     make(chan struct{}, 1),
		settled:  make(chan struct{}, 1),
		resume:   make(chan struct{}),
		brokerUp: make(chan struct{}, 1),
		leases:   map[uuid.UUID]*batch{},
		missing:  newMissingTopics(m),
	}
	r.missingWait = min(missingTopicWait, cfg.PublishTimeout)
	r.brokerOK.Store(true)
	return r, nil
}

// Run relays until ctx is cancelled (or, with Drain, until nothing is
// publishable). On cancellation it stops claiming, lets in-flight batches finish
// for up to ShutdownTimeout, releases the leases of any that did not, and returns
// nil. In drain mode it returns an error when it stopped on one.
func (r *Relay) Run(ctx context.Context) error {
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var helpers sync.WaitGroup
	helpers.Add(5)
	if r.cfg.HeartbeatInterval > 0 {
		helpers.Add(1)
		go func() { defer helpers.Done(); r.heartbeat(ctx, bg) }()
	}
	go func() { defer helpers.Done(); r.watchInserts(bg) }()
	go func() { defer helpers.Done(); r.renewLoop(bg) }()
	go func() { defer helpers.Done(); r.watchBrokers(bg) }()
	go func() { defer helpers.Done(); r.sweepLoop(bg) }()
	go func() { defer helpers.Done(); r.rescueLoop(bg) }()

	// Say at once when the brokers do not answer, instead of when the first
	// batch fails: the console and /readyz show it, and the loop probes until
	// they do.
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := r.kafka.Ping(pctx); err != nil && ctx.Err() == nil {
		r.brokerDown("kafka unreachable at start; relay waits for it", err)
	}
	cancel()
	err := r.loop(ctx, bg)
	stopBG()
	helpers.Wait()
	r.finalBeat(ctx)
	return err
}

func (r *Relay) loop(ctx, bg context.Context) error {
	slots := make(chan struct{}, r.cfg.InFlight)
	var batches sync.WaitGroup
	// Batches run on their own context: shutdown cancels it after
	// ShutdownTimeout and waits for them before Run returns.
	bctx, cancelBatches := context.WithCancel(bg)
	defer func() { r.shutdown(bg, &batches, cancelBatches) }()

	dbFailures := 0
	for {
		if ctx.Err() != nil {
			return nil
		}
		if err := r.waitRunnable(ctx); err != nil {
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		token := uuid.New()
		start := time.Now()
		// A batch in flight or settling during the claim may unblock events the
		// claim could not see: only a claim that overlapped none proves a drain.
		busyBefore, settledBefore := r.Status().InFlight, r.stats.batches.Load()
		events, again, err := r.claimAgain(ctx, token, r.cfg.BatchSize)
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			dbFailures++
			r.noteError("claiming", err)
			if r.cfg.Drain && dbFailures >= 5 {
				return fmt.Errorf("%w: claiming: %v", ErrStopped, err)
			}
			sleep(ctx, backoff(dbFailures, 100*time.Millisecond, 5*time.Second))
			continue
		}
		dbFailures = 0
		r.m.ClaimSeconds.Observe(time.Since(start).Seconds())
		r.stats.lastClaim.Store(int64(time.Since(start)))
		if len(events) == 0 {
			<-slots
			if again {
				continue // the window moved past waiting rows or a held head: claim again now
			}
			if r.cfg.Drain && busyBefore == 0 && r.Status().InFlight == 0 && r.stats.batches.Load() == settledBefore {
				done, err := r.drained(ctx)
				if err != nil {
					return fmt.Errorf("%w: %v", ErrStopped, err)
				}
				if done {
					return nil
				}
			}
			r.idle(ctx)
			continue
		}
		r.m.BatchSize.Observe(float64(len(events)))
		r.log.Debug("claimed batch", "lease_token", token, "events", len(events), "took", time.Since(start))
		r.track(token, len(events))
		batches.Add(1)
		go func() {
			defer batches.Done()
			var checked chan struct{}
			if r.cfg.Ordering == OrderAggregate {
				checked = make(chan struct{})
				go func() { defer close(checked); r.checkOrder(bctx, events) }()
			}
			r.publish(bctx, ctx, token, events, checked)
			r.untrack(token)
			r.stats.batches.Add(1)
			<-slots
			signal(r.settled)
		}()
		if len(events) < r.cfg.BatchSize && !again {
			// The backlog is used up (or blocked): wait for news rather than spin.
			r.idle(ctx)
		}
	}
}

// idle waits for new inserts, a finished batch, the next scheduled event, or the
// poll interval, whichever comes first.
func (r *Relay) idle(ctx context.Context) {
	wait := r.cfg.PollInterval
	if next, err := r.nextScheduled(ctx); err == nil && !next.IsZero() {
		if d := time.Until(next); d < wait {
			wait = max(d, time.Millisecond)
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-r.settled:
	case <-r.wake:
		// Let the rest of a burst of commits arrive before claiming.
		sleep(ctx, r.cfg.WakeCooldown)
	}
}

// drained reports whether nothing is left to publish: no batch is in flight here
// or in any other relay (a live lease anywhere may still fail and come back),
// nothing is scheduled, and every waiting event waits behind a failed event of its
// aggregate (ordered mode; without ordering nothing may wait at all) or for a
// Kafka topic that does not exist (until an operator creates it: a drain that
// waited for it would not end). The caller's empty claim is not enough on its
// own: a scheduled event can come due between that claim and this check. Events
// left behind are logged.
func (r *Relay) drained(ctx context.Context) (bool, error) {
	var leased bool
	var next *time.Time
	var waiting, free, missing int
	if err := r.pool.QueryRow(ctx, r.sql.drainState, pgx.StrictNamedArgs{"missing": MissingTopicError}).Scan(&leased, &next, &waiting, &free, &missing); err != nil {
		return false, err
	}
	if r.cfg.Ordering == OrderNone {
		free = waiting - missing
	}
	if leased || next != nil || free > 0 {
		return false, nil
	}
	if missing > 0 {
		topics := r.Status().MissingTopics
		names := make([]string, len(topics))
		for i, t := range topics {
			names[i] = t.Topic
		}
		r.log.Warn("drained: events wait for Kafka topics that do not exist (create them, or run with --kafka-auto-create-topics)",
			"waiting", missing, "topics", names)
	}
	if waiting > missing {
		r.log.Warn("drained: events wait behind failed events of their aggregates, or behind events waiting for a topic", "waiting", waiting-missing)
	}
	return true, nil
}

// waitRunnable blocks while the relay is paused or the brokers are unreachable.
func (r *Relay) waitRunnable(ctx context.Context) error {
	for {
		r.mu.Lock()
		paused, resume := r.paused, r.resume
		r.mu.Unlock()
		if paused {
			select {
			case <-resume:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if !r.brokerOK.Load() {
			// watchBrokers says when they answer again.
			select {
			case <-r.brokerUp:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		return nil
	}
}

// How often the relay asks Kafka whether it is there, and how long it waits for
// the answer: readiness follows Kafka within about their sum, idle or busy.
const (
	brokerProbeInterval = time.Second
	brokerProbeTimeout  = 2 * time.Second
)

// watchBrokers probes Kafka (ApiVersions: one small request, no topic metadata)
// on a short timer, so that readiness and the broker_reachable gauge follow
// Kafka both ways within a few seconds whether the relay is idle or busy, and
// a relay that backs off resumes as soon as the brokers answer.
func (r *Relay) watchBrokers(ctx context.Context) {
	t := time.NewTicker(brokerProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.missing.refresh(time.Now())
		pctx, cancel := context.WithTimeout(ctx, brokerProbeTimeout)
		err := r.kafka.Ping(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.brokerDown("kafka unreachable; relay backs off as a whole, attempts are not counted", err)
		case !r.brokerOK.Swap(true):
			r.m.BrokerReachable.Set(1)
			r.log.Info("kafka reachable again; relaying resumes")
			signal(r.brokerUp)
		}
	}
}

// AbandonNextBatch is a fault lever, for demos and tests: the next batch that
// Kafka acknowledges ends as if the relay process died right then. Nothing is
// marked or released, the lease runs out, and a later claim publishes the
// events again. It shows the mark-after-ack gap every at-least-once relay has,
// and the duplicates consumers' inboxes absorb; it loses nothing.
func (r *Relay) AbandonNextBatch() { r.crashNext.Store(true) }

// brokerDown records an outage once: the relay then backs off as a whole and
// waitRunnable probes until the brokers answer.
func (r *Relay) brokerDown(why string, err error) {
	if r.brokerOK.Swap(false) {
		r.stats.outages.Add(1)
		r.m.BrokerReachable.Set(0)
		r.noteError(why, err)
	}
}

// Pause stops claiming new batches; in-flight batches finish.
func (r *Relay) Pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.paused {
		r.paused = true
		r.m.Paused.Set(1)
		r.log.Info("relay paused")
	}
}

// Resume undoes Pause.
func (r *Relay) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		r.paused = false
		close(r.resume)
		r.resume = make(chan struct{})
		r.m.Paused.Set(0)
		r.log.Info("relay resumed")
	}
}

func (r *Relay) track(token uuid.UUID, n int) {
	now := time.Now()
	r.mu.Lock()
	r.leases[token] = &batch{claimedAt: now, renewedAt: now, size: n}
	r.mu.Unlock()
}

func (r *Relay) untrack(token uuid.UUID) {
	r.waiters.Delete(token)
	r.mu.Lock()
	delete(r.leases, token)
	r.mu.Unlock()
}

// renewLoop extends the lease of batches that have used half of it.
func (r *Relay) renewLoop(ctx context.Context) {
	t := time.NewTicker(max(r.cfg.Lease/8, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		var due []uuid.UUID
		for tok, b := range r.leases {
			if time.Since(b.renewedAt) >= r.cfg.Lease/2 {
				due = append(due, tok)
			}
		}
		r.mu.Unlock()
		for _, tok := range due {
			n, err := r.renew(ctx, tok)
			if err != nil {
				r.noteError("renewing lease", err)
				continue
			}
			r.mu.Lock()
			// Renew skips rows that another statement holds: until every row of
			// the batch was renewed, try again on the next tick.
			if b, ok := r.leases[tok]; ok && n >= b.size {
				b.renewedAt = time.Now()
			}
			r.mu.Unlock()
			if n > 0 {
				r.m.LeaseRenewals.Inc()
			}
		}
	}
}

// shutdown waits for in-flight batches for up to ShutdownTimeout; then it
// cancels them, waits until their goroutines have ended (a cancelled batch
// settles nothing), and releases their leases. Run returns only after that, so
// nothing of the relay touches the pool or the client once it has returned.
func (r *Relay) shutdown(ctx context.Context, batches *sync.WaitGroup, cancelBatches context.CancelFunc) {
	defer cancelBatches()
	done := make(chan struct{})
	go func() { batches.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(r.cfg.ShutdownTimeout):
	}
	r.mu.Lock()
	tokens := make([]uuid.UUID, 0, len(r.leases))
	for tok := range r.leases {
		tokens = append(tokens, tok)
	}
	r.mu.Unlock()
	cancelBatches()
	<-done
	for _, tok := range tokens {
		tag, err := r.pool.Exec(ctx, r.sql.release, tok)
		if err != nil {
			r.noteError("releasing leases at shutdown", err)
			continue
		}
		r.m.Released.Add(float64(tag.RowsAffected()))
		r.log.Warn("shutdown timeout: released an unfinished batch (its events may be published twice)", "events", tag.RowsAffected())
	}
}

func (r *Relay) noteError(what string, err error) {
	msg := what + ": " + err.Error()
	r.lastError.Store(&timedError{at: time.Now(), msg: msg})
	r.log.Error(what, "err", err)
}

// signal does a non-blocking send on a 1-buffered channel.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
