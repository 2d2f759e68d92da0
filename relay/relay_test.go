package relay

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/wire"
)

func TestDrainPublishesEverySeedRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20_000
	b.insertSeed(t, n, 500, "o-")
	cfg := b.config()
	cfg.Drain = true
	r := b.relay(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if got := b.count(t, "published_at IS NOT NULL AND kafka_topic = '"+b.topic+"' AND kafka_partition IS NOT NULL AND kafka_offset IS NOT NULL"); got != n {
		t.Fatalf("published with coordinates: %d, want %d", got, n)
	}
	recs := b.delivered(t, n, b.topic)
	seen := map[string]bool{}
	for _, rec := range recs {
		seen[header(rec, "event_id")] = true
	}
	ids := b.seqs(t)
	for id := range ids {
		if !seen[id] {
			t.Fatalf("event %s not in Kafka", id)
		}
	}
	// Coordinates in the table match where Kafka has the record.
	rec := recs[len(recs)/2]
	var topic string
	var part int32
	var off int64
	if err := b.pool.QueryRow(ctx, `SELECT kafka_topic, kafka_partition, kafka_offset FROM outbox_event WHERE event_id = $1`,
		header(rec, "event_id")).Scan(&topic, &part, &off); err != nil {
		t.Fatal(err)
	}
	if topic != rec.Topic || part != rec.Partition || off != rec.Offset {
		t.Fatalf("row says %s/%d/%d, Kafka has %s/%d/%d", topic, part, off, rec.Topic, rec.Partition, rec.Offset)
	}
	for _, h := range wire.ReservedHeaders() {
		if header(rec, h) == "" {
			t.Errorf("header %s missing", h)
		}
	}
	if string(rec.Key) != header(rec, "aggregate_id") {
		t.Errorf("key %q, aggregate_id %q", rec.Key, header(rec, "aggregate_id"))
	}
}

func TestConcurrentRelaysKeepAggregateOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// 50,000 events over 1,000 aggregates, plus one hot aggregate of 2,000,
	// interleaved so the hot one's events are spread through the backlog.
	b.insertSeed(t, 48_000, 1000, "o-")
	if _, err := b.pool.Exec(context.Background(), `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'hot', 'OrderUpdated', jsonb_build_object('n', g) FROM generate_series(1, 2000) g ORDER BY g`); err != nil {
		t.Fatal(err)
	}
	b.insertSeed(t, 0, 1, "x") // no-op keeps the helper's shape obvious
	const total = 50_000
	var stops []func() error
	for i := 0; i < 4; i++ {
		cfg := b.config()
		cfg.BatchSize = 500
		stops = append(stops, start(t, b.relay(t, cfg)))
	}
	testenv.WaitFor(t, 3*time.Minute, "all published", func() bool { return b.count(t, "published_at IS NOT NULL") == total })
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	recs := b.delivered(t, total, b.topic)
	ids := b.seqs(t)
	copies := map[string]int{}
	last := map[string]int64{}
	for _, rec := range recs { // per partition in offset order
		id := header(rec, "event_id")
		copies[id]++
		if copies[id] > 1 {
			continue // order is about first deliveries
		}
		ev := ids[id]
		if prev, ok := last[ev.agg]; ok && ev.seq < prev {
			t.Fatalf("aggregate %s: seq %d delivered after %d", ev.agg, ev.seq, prev)
		}
		last[ev.agg] = ev.seq
	}
	if len(copies) != total {
		t.Fatalf("distinct delivered %d, want %d", len(copies), total)
	}
	for id, c := range copies {
		if c != 1 {
			t.Fatalf("event %s delivered %d times with no fault", id, c)
		}
	}
}

func TestBrokerOutageBurnsNoAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.MaxAttempts = 2
	// Warm up the connection, then cut it.
	b.insertSeed(t, 10, 5, "warm-")
	r := b.relay(t, cfg)
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "warm-up published", func() bool { return b.count(t, "published_at IS NOT NULL") == 10 })
	b.net.cut()
	b.insertSeed(t, 300, 30, "o-")
	// Longer than max-attempts × backoff many times over: attempts would be spent
	// several times over if the outage counted against events.
	// The broker watch notices the outage within seconds, before the batch claimed
	// at the cut has failed: wait for that batch too.
	testenv.WaitFor(t, 30*time.Second, "relay sees the outage and its batch settled", func() bool {
		return !r.Status().BrokerReachable && r.Status().InFlight == 0
	})
	// Let the outage last through several of the relay's attempts to reach
	// Kafka (its probes run once a second): a relay that counted the outage
	// against events would claim and charge them meanwhile.
	refused := b.net.refused.Load()
	testenv.WaitFor(t, 30*time.Second, "three more refused dials to the brokers", func() bool {
		return b.net.refused.Load() >= refused+3
	})
	if got := b.count(t, "failed_at IS NOT NULL"); got != 0 {
		t.Fatalf("%d events failed during a broker outage", got)
	}
	if got := b.count(t, "published_at IS NULL AND attempts > 0"); got != 0 {
		t.Fatalf("%d events were charged attempts during the outage", got)
	}
	b.net.restore()
	testenv.WaitFor(t, 60*time.Second, "all published after the outage", func() bool { return b.count(t, "published_at IS NOT NULL") == 310 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !r.Status().BrokerReachable {
		t.Fatal("status still says unreachable")
	}
}

func TestPoisonEventsFailAtOnceAndOthersFlow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// Aggregate big-1: a payload above the max message size, then a normal event
	// that must wait behind it. Aggregate "bad/type": an illegal topic name.
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES
		(gen_random_uuid(), 'order', 'big-1', 'OrderPlaced', jsonb_build_object('blob', repeat('x', 30000))),
		(gen_random_uuid(), 'order', 'big-1', 'OrderPaid', '{}'),
		(gen_random_uuid(), 'bad/type', 'b-1', 'Weird', '{}'),
		(gen_random_uuid(), 'bad/type', 'b-1', 'Weird2', '{}')`); err != nil {
		t.Fatal(err)
	}
	b.insertSeed(t, 200, 20, "ok-")
	cfg := b.config()
	cfg.MaxMessageBytes = 20_000
	cfg.Drain = true
	r := b.relay(t, cfg)
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.Run(dctx); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "aggregate_id LIKE 'ok-%' AND published_at IS NOT NULL"); got != 200 {
		t.Fatalf("healthy events published: %d, want 200", got)
	}
	var lastErr string
	var attempts int
	if err := b.pool.QueryRow(ctx, `SELECT last_error, attempts FROM outbox_event WHERE aggregate_id = 'big-1' AND event_type = 'OrderPlaced' AND failed_at IS NOT NULL`).Scan(&lastErr, &attempts); err != nil {
		t.Fatalf("oversized event not failed: %v", err)
	}
	if !strings.Contains(lastErr, "too large") || attempts != 1 {
		t.Fatalf("oversized: last_error %q attempts %d", lastErr, attempts)
	}
	if err := b.pool.QueryRow(ctx, `SELECT last_error FROM outbox_event WHERE aggregate_type = 'bad/type' AND event_type = 'Weird' AND failed_at IS NOT NULL`).Scan(&lastErr); err != nil {
		t.Fatalf("illegal-topic event not failed: %v", err)
	}
	if !strings.Contains(lastErr, "invalid topic") {
		t.Fatalf("illegal topic: last_error %q", lastErr)
	}
	// The relay's own last error is an event's failure: the latest trouble.
	if st := r.Status(); !strings.Contains(st.LastError, " failed: ") || (!strings.Contains(st.LastError, "invalid topic") && !strings.Contains(st.LastError, "too large")) {
		t.Fatalf("the relay's last error: %q", st.LastError)
	}
	// The later events of both aggregates wait, unpublished, not failed, not charged.
	if got := b.count(t, "event_type IN ('OrderPaid', 'Weird2') AND published_at IS NULL AND failed_at IS NULL AND attempts = 0"); got != 2 {
		t.Fatalf("events behind poison: %d waiting uncharged, want 2", got)
	}
	// Each failed event has one attempt in its history, by this relay; the
	// published ones and the held-back ones, which were not tried, have none.
	rows, err := b.pool.Query(ctx, `SELECT e.event_type, h.attempt, h.lease_holder, h.class, h.outcome, h.error, h.backoff_ms IS NULL
		FROM outbox_attempt h JOIN outbox_event e USING (event_id) ORDER BY e.event_type`)
	if err != nil {
		t.Fatal(err)
	}
	type try struct {
		Type           string
		Attempt        int
		Holder, Class  string
		Outcome, Error string
		NoBackoff      bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[try])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("attempt history %+v, want one row for each of the two failed events", got)
	}
	for k, typ := range []string{"OrderPlaced", "Weird"} {
		h := got[k]
		if h.Type != typ || h.Attempt != 1 || h.Holder != r.cfg.Holder || h.Class != "permanent" || h.Outcome != "fail" || h.Error == "" || !h.NoBackoff {
			t.Errorf("history of %s: %+v, want attempt 1 by %s, permanent, fail, an error, no backoff", typ, h, r.cfg.Holder)
		}
	}
}

// A missing topic is an operator's problem, not the events': they wait for it,
// scheduled again with the missing-topic error and their attempts refunded, and
// are never failed, however many times they find it missing. The relay says so
// once a minute per topic in its log, in Status and in /metrics. Once the topic
// exists they go out, and the published rows keep no stale error.
func TestMissingTopicWaitsWithoutCountingAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if b.kafka.Fake == nil {
		t.Skip("the real broker auto-creates topics; the missing-topic case runs against kfake")
	}
	cfg := b.config()
	cfg.TopicTemplate = b.kafka.Prefix + "missing.{aggregate_type}"
	cfg.MaxAttempts = 2
	logs := &capture{}
	cfg.Logger = slog.New(logs)
	b.insertSeed(t, 3, 3, "o-")
	// kfake in testenv auto-creates topics; a client without AllowAutoTopicCreation
	// does not ask for it, so the topic stays missing.
	r := b.relay(t, cfg)
	r.missingWait = time.Second
	start(t, r)
	topic := b.kafka.Prefix + "missing.order"
	// More tries than --max-attempts: one batch, then every later one.
	testenv.WaitFor(t, 60*time.Second, "several batches to the missing topic", func() bool {
		return r.stats.released.Load() >= 3*uint64(cfg.MaxAttempts+2)
	})
	if got := b.count(t, "failed_at IS NOT NULL OR published_at IS NOT NULL"); got != 0 {
		var rows []string
		rs, _ := b.pool.Query(context.Background(), "SELECT concat_ws(' ', attempts, failed_at, published_at, kafka_topic, last_error) FROM outbox_event")
		for rs.Next() {
			var x string
			_ = rs.Scan(&x)
			rows = append(rows, x)
		}
		t.Fatalf("%d events failed or published for a missing topic: %q", got, rows)
	}
	testenv.WaitFor(t, 10*time.Second, "the events waiting, uncharged, with the missing-topic error", func() bool {
		return b.count(t, "failed_at IS NULL AND (attempts = 0 AND lease_until IS NULL OR attempts = 1 AND lease_until > now())"+
			" AND starts_with(last_error, '"+MissingTopicError+topic+" ')") == 3
	})
	mt := r.Status().MissingTopics
	if len(mt) != 1 || mt[0].Topic != topic || mt[0].Events != 3 || mt[0].LastSeen.Before(mt[0].FirstSeen) {
		t.Fatalf("Status().MissingTopics = %+v, want %s with 3 events", mt, topic)
	}
	if got := testutil.ToFloat64(r.m.MissingTopicEvents); got != 3 {
		t.Fatalf("missing_topic_events %v, want 3", got)
	}
	if got := testutil.ToFloat64(r.m.MissingTopics); got != 1 {
		t.Fatalf("missing_topics %v, want 1", got)
	}
	if warns := logs.matching(slog.LevelWarn, `topic "`+topic+`" does not exist: `); len(warns) != 1 {
		t.Fatalf("%d warnings for the missing topic, want one a minute: %q", len(warns), warns)
	}

	b.kafka.CreateTopics(t, 3, "missing.order")
	testenv.WaitFor(t, 60*time.Second, "published once the topic exists", func() bool {
		return b.count(t, "published_at IS NOT NULL") == 3
	})
	if got := b.count(t, "published_at IS NOT NULL AND last_error IS NULL AND attempts = 1"); got != 3 {
		t.Fatalf("%d of 3 published rows without a stale last_error and with one attempt", got)
	}
	if mt := r.Status().MissingTopics; len(mt) != 0 {
		t.Fatalf("Status().MissingTopics = %+v once the topic exists", mt)
	}
	if infos := logs.matching(slog.LevelInfo, `topic "`+topic+`" exists now`); len(infos) != 1 {
		t.Fatalf("%d lines saying the topic exists now, want one: %q", len(infos), infos)
	}
	if got := testutil.ToFloat64(r.m.MissingTopicEvents); got != 0 {
		t.Fatalf("missing_topic_events %v once the topic exists", got)
	}
}

// capture is a slog handler that keeps what is logged.
type capture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.recs = append(c.recs, r)
	c.mu.Unlock()
	return nil
}
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

// matching is the messages logged at level that contain s.
func (c *capture) matching(level slog.Level, s string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.recs {
		if r.Level == level && strings.Contains(r.Message, s) {
			out = append(out, r.Message)
		}
	}
	return out
}

// A drain must not stop while events are only briefly held back: here the first
// claim finds every aggregate's head scheduled (a retry due in a moment), and the
// drain has to wait for it rather than call the outbox drained.
func TestDrainWaitsForScheduledRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 300, 30, "o-")
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox_event SET available_at = now() + interval '300 milliseconds', attempts = 1
		WHERE seq IN (SELECT min(seq) FROM outbox_event GROUP BY aggregate_id)`); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.Drain = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.relay(t, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "published_at IS NOT NULL"); got != 300 {
		t.Fatalf("drain stopped with %d of 300 published", got)
	}
}

func TestUnreachableBrokerAtStartIsReportedAndAwaited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.net.cut()
	r := b.relay(t, b.config())
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "status says Kafka is unreachable", func() bool { return !r.Status().BrokerReachable })
	b.insertSeed(t, 20, 5, "o-")
	b.net.restore()
	testenv.WaitFor(t, time.Minute, "published once Kafka answers", func() bool { return b.count(t, "published_at IS NOT NULL") == 20 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "attempts > 1 OR failed_at IS NOT NULL"); got != 0 {
		t.Fatalf("%d events charged or failed for an outage", got)
	}
}

// A published row keeps no last_error: it was an earlier attempt's, and trace
// and the console would show it as the event's current trouble. The attempts
// still say it took more than one; a failed row keeps its error.
func TestMarkClearsAnEarlierAttemptsError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 5, 5, "o-")
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox_event SET attempts = 2, last_error = 'kafka: NOT_LEADER_FOR_PARTITION'`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, attempts, last_error)
		VALUES (gen_random_uuid(), 'order', 'dead', 'OrderPlaced', '{}', now(), 10, 'kafka: MESSAGE_TOO_LARGE')`); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.Drain = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.relay(t, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "published_at IS NOT NULL AND last_error IS NULL AND attempts = 3"); got != 5 {
		t.Fatalf("%d of 5 published rows without the earlier error and with their attempts", got)
	}
	if got := b.count(t, "failed_at IS NOT NULL AND last_error = 'kafka: MESSAGE_TOO_LARGE'"); got != 1 {
		t.Fatal("the failed row lost its error")
	}
}

// A drain does not wait for a topic that does not exist (nobody may ever create
// it): it ends once only such events, and the events behind them, are left, and
// says which topics they wait for. They stay waiting, uncharged, not failed.
func TestDrainEndsWhenOnlyAMissingTopicIsLeft(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if b.kafka.Fake == nil {
		t.Skip("the real broker auto-creates topics; the missing-topic case runs against kfake")
	}
	b.insertSeed(t, 20, 5, "o-")
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox_event SET topic = 'absent.topic' WHERE seq IN (SELECT min(seq) FROM outbox_event GROUP BY aggregate_id LIMIT 2)`); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.Drain = true
	logs := &capture{}
	cfg.Logger = slog.New(logs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.relay(t, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	// Three aggregates published, two wait: their head for the topic, the rest behind it.
	if got := b.count(t, "published_at IS NOT NULL"); got != 12 {
		t.Fatalf("%d of the 12 events of the other aggregates published", got)
	}
	if got := b.count(t, "topic = 'absent.topic' AND attempts = 0 AND failed_at IS NULL AND starts_with(last_error, '"+MissingTopicError+"absent.topic ')"); got != 2 {
		rows, _ := b.pool.Query(context.Background(), `SELECT seq, attempts, failed_at IS NOT NULL, coalesce(last_error, '<null>'), lease_until IS NOT NULL, available_at > now() FROM outbox_event WHERE topic = 'absent.topic'`)
		for rows.Next() {
			var seq int64
			var att int
			var failed, leased, later bool
			var le string
			_ = rows.Scan(&seq, &att, &failed, &le, &leased, &later)
			t.Logf("seq %d attempts %d failed %v leased %v later %v last_error %q", seq, att, failed, leased, later, le)
		}
		rows.Close()
		rows, _ = b.pool.Query(context.Background(), `SELECT e.seq, h.attempt, h.class, h.outcome, left(coalesce(h.error, ''), 80) FROM outbox_attempt h JOIN outbox_event e USING (event_id) WHERE e.topic = 'absent.topic' ORDER BY h.attempt_id`)
		for rows.Next() {
			var seq int64
			var att int
			var class, outcome, herr string
			_ = rows.Scan(&seq, &att, &class, &outcome, &herr)
			t.Logf("history seq %d attempt %d %s %s %q", seq, att, class, outcome, herr)
		}
		rows.Close()
		logs.mu.Lock()
		for _, r := range logs.recs {
			var attrs []string
			r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
			t.Logf("log %s %s %v", r.Level, r.Message, attrs)
		}
		logs.mu.Unlock()
		t.Fatalf("%d of 2 events waiting for the missing topic, uncharged", got)
	}
	if len(logs.matching(slog.LevelWarn, "drained: events wait for Kafka topics that do not exist")) != 1 {
		t.Fatalf("the drain did not say it left events waiting for a topic: %q", logs.matching(slog.LevelWarn, "drained"))
	}
}
