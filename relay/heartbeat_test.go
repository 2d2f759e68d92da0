package relay

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// beatRow is a relay's outbox_relay row as the database sees it now.
type beatRow struct {
	state      string
	seenAt     time.Time
	age        time.Duration
	version    string
	startedAt  time.Time
	ordering   string
	batchSize  int
	intervalMS int
	found      bool
	inFlight   int
}

func (b *bundle) beatRow(t *testing.T, holder string) beatRow {
	t.Helper()
	var r beatRow
	var ageMS float64
	err := b.pool.QueryRow(context.Background(), `SELECT state, seen_at, extract(epoch from now() - seen_at) * 1000,
			version, started_at, ordering, batch_size, interval_ms, in_flight
		FROM outbox_relay WHERE holder = $1`, holder).
		Scan(&r.state, &r.seenAt, &ageMS, &r.version, &r.startedAt, &r.ordering, &r.batchSize, &r.intervalMS, &r.inFlight)
	if err != nil {
		return r
	}
	r.found, r.age = true, time.Duration(ageMS*float64(time.Millisecond))
	return r
}

// A relay's heartbeat row appears with its holder and settings, follows pause,
// resume and a broker outage, and says stopped after a clean stop.
func TestHeartbeatFollowsTheRelay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.Holder = "hb-follow:1"
	cfg.HeartbeatInterval = 100 * time.Millisecond
	cfg.Version = "v-test"
	cfg.BatchSize = 50
	r := b.relay(t, cfg)
	stop := start(t, r)
	state := func(want string) {
		t.Helper()
		testenv.WaitFor(t, 10*time.Second, "heartbeat state "+want, func() bool { return b.beatRow(t, cfg.Holder).state == want })
	}
	state(BeatRunning)
	row := b.beatRow(t, cfg.Holder)
	if row.version != "v-test" || row.ordering != "aggregate" || row.batchSize != 50 || row.intervalMS != 100 {
		t.Errorf("heartbeat row %+v, want version v-test, ordering aggregate, batch 50, interval 100ms", row)
	}
	// It keeps beating: seen_at moves, started_at does not.
	testenv.WaitFor(t, 10*time.Second, "a later beat", func() bool { return b.beatRow(t, cfg.Holder).seenAt.After(row.seenAt) })
	if again := b.beatRow(t, cfg.Holder); !again.startedAt.Equal(row.startedAt) {
		t.Errorf("started_at moved from %v to %v between beats", row.startedAt, again.startedAt)
	}

	r.Pause()
	state(BeatPaused)
	r.Resume()
	state(BeatRunning)

	b.net.cut()
	state(BeatBrokerDown)
	b.net.restore()
	state(BeatRunning)

	// And it still publishes meanwhile.
	b.insertSeed(t, 20, 4, "o-")
	testenv.WaitFor(t, 20*time.Second, "20 published", func() bool { return b.count(t, "published_at IS NOT NULL") == 20 })

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := b.beatRow(t, cfg.Holder); got.state != BeatStopped {
		t.Errorf("after a clean stop the row says %q, want stopped", got.state)
	}
	if n := testutil.ToFloat64(r.m.HeartbeatFailures); n != 0 {
		t.Errorf("%v heartbeat failures, want 0", n)
	}
}

// A relay that dies without its last beat (killed) leaves its row as it was:
// seen_at stops moving, and the row goes stale (readers call it gone after 3
// intervals).
func TestHeartbeatOfAKilledRelayGoesStale(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.Holder = "hb-killed:1"
	cfg.HeartbeatInterval = 100 * time.Millisecond
	r := b.relay(t, cfg)
	r.skipFinalBeat.Store(true)
	stop := start(t, r)
	testenv.WaitFor(t, 10*time.Second, "a running heartbeat", func() bool { return b.beatRow(t, cfg.Holder).state == BeatRunning })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	last := b.beatRow(t, cfg.Holder)
	testenv.WaitFor(t, 10*time.Second, "the row older than 3 intervals", func() bool {
		return b.beatRow(t, cfg.Holder).age > 3*cfg.HeartbeatInterval
	})
	if got := b.beatRow(t, cfg.Holder); got.state != BeatRunning || !got.seenAt.Equal(last.seenAt) {
		t.Errorf("a killed relay's row changed: %+v, was %+v", got, last)
	}
}

// A heartbeat that cannot be written (here: the schema has no heartbeat function,
// as before migration 010 or without the grant) is counted and never stops the
// relay: events are still published and Run ends cleanly.
func TestHeartbeatFailureDoesNotStopRelaying(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `DROP FUNCTION outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)`); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.HeartbeatInterval = 100 * time.Millisecond
	r := b.relay(t, cfg)
	stop := start(t, r)
	b.insertSeed(t, 30, 5, "o-")
	testenv.WaitFor(t, 20*time.Second, "30 published", func() bool { return b.count(t, "published_at IS NOT NULL") == 30 })
	testenv.WaitFor(t, 10*time.Second, "failed heartbeats counted", func() bool { return testutil.ToFloat64(r.m.HeartbeatFailures) >= 2 })
	if err := stop(); err != nil {
		t.Fatalf("Run after failing heartbeats: %v", err)
	}
}

// With no heartbeat (negative interval) the relay writes no row.
func TestHeartbeatOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.Holder = "hb-off:1"
	cfg.HeartbeatInterval = -1
	r := b.relay(t, cfg)
	stop := start(t, r)
	b.insertSeed(t, 5, 1, "o-")
	testenv.WaitFor(t, 20*time.Second, "5 published", func() bool { return b.count(t, "published_at IS NOT NULL") == 5 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if row := b.beatRow(t, cfg.Holder); row.found {
		t.Errorf("a relay without heartbeat wrote %+v", row)
	}
}

// A beat reports the events of the relay's batches in flight: a batch held up
// by a slow broker shows in in_flight, and 0 once it is published.
func TestHeartbeatReportsEventsInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.Holder = "hb-inflight:1"
	cfg.HeartbeatInterval = 100 * time.Millisecond
	r := b.relay(t, cfg)
	stop := start(t, r)
	b.insertSeed(t, 1, 1, "warm-")
	testenv.WaitFor(t, 30*time.Second, "warm-up published", func() bool { return b.count(t, "published_at IS NOT NULL") == 1 })
	b.net.slowNextWrite(3 * time.Second)
	b.insertSeed(t, 20, 20, "o-")
	testenv.WaitFor(t, 30*time.Second, "20 events in flight in the heartbeat", func() bool { return b.beatRow(t, cfg.Holder).inFlight == 20 })
	testenv.WaitFor(t, time.Minute, "slow batch published", func() bool { return b.count(t, "published_at IS NOT NULL") == 21 })
	testenv.WaitFor(t, 10*time.Second, "nothing in flight in the heartbeat", func() bool { return b.beatRow(t, cfg.Holder).inFlight == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A beat that cannot get its lock (a session holds outbox_relay locked) gives
// up after its own timeout: the relay keeps publishing meanwhile, counts the
// missed beats, and beats again once the lock is gone.
func TestHeartbeatNeverHoldsUpPublishing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := b.config()
	cfg.Holder = "hb-locked:1"
	cfg.HeartbeatInterval = 100 * time.Millisecond
	r := b.relay(t, cfg)
	stop := start(t, r)
	testenv.WaitFor(t, 10*time.Second, "a first beat", func() bool { return b.beatRow(t, cfg.Holder).state == BeatRunning })

	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE outbox_relay IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	failed := testutil.ToFloat64(r.m.HeartbeatFailures)
	b.insertSeed(t, 30, 6, "o-")
	testenv.WaitFor(t, 20*time.Second, "30 published while the heartbeat is locked out", func() bool {
		return b.count(t, "published_at IS NOT NULL") == 30
	})
	testenv.WaitFor(t, 10*time.Second, "missed beats counted", func() bool { return testutil.ToFloat64(r.m.HeartbeatFailures) >= failed+3 })
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	before := b.beatRow(t, cfg.Holder).seenAt
	testenv.WaitFor(t, 10*time.Second, "beating again", func() bool { return b.beatRow(t, cfg.Holder).seenAt.After(before) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A beat cut short because Run is returning (its context cancelled mid-statement)
// is not a heartbeat failure: stopping a healthy relay must not count one.
func TestHeartbeatCancelledByStopIsNoFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.Holder = "hb-cancel:1"
	r := b.relay(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.beat(ctx, BeatRunning)
	if n := testutil.ToFloat64(r.m.HeartbeatFailures); n != 0 {
		t.Errorf("a beat cancelled by stop counted %v failures, want 0", n)
	}
	// A beat that fails on its own still counts.
	if _, err := b.pool.Exec(context.Background(), `DROP FUNCTION outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)`); err != nil {
		t.Fatal(err)
	}
	r.beat(context.Background(), BeatRunning)
	if n := testutil.ToFloat64(r.m.HeartbeatFailures); n != 1 {
		t.Errorf("a refused beat counted %v failures, want 1", n)
	}
}
