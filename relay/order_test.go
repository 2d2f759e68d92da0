package relay

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// createTopic creates one topic (name without the test's prefix) with topic configs.
func (b *bundle) createTopic(t *testing.T, name string, partitions int32, configs map[string]*string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kafka.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	full := b.kafka.Prefix + name
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(ctx, partitions, 1, configs, full)
	if err == nil {
		err = resp[full].Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", full, err)
	}
	testenv.WaitFor(t, 30*time.Second, "topic "+full+" led", func() bool {
		d, err := adm.ListTopics(ctx, full)
		return err == nil && topicsLed(d[full])
	})
	return full
}

func topicsLed(d kadm.TopicDetail) bool {
	if d.Err != nil || len(d.Partitions) == 0 {
		return false
	}
	for _, p := range d.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

// TestFranzAcksLaterRecordAfterFailingEarlier is the question behind defect 1:
// can franz-go fail a record and then acknowledge a later record of the same
// partition? franz-go fails a partition's buffered records together (a refused
// batch fails every batch behind it), but a record handed to Produce after that
// failure starts afresh. The relay hands a batch over one record at a time, and
// Produce blocks while the client's buffer is full (MaxBufferedRecords; during
// and after an outage it is), so a failure can land in the middle of a batch:
// the aggregate's first event fails, its second is written and acknowledged.
// The old results loop then marked the second and retried the first, and the
// consumer saw them out of order. Here a buffer of one record makes that
// deterministic.
func TestFranzAcksLaterRecordAfterFailingEarlier(t *testing.T) {
	t.Parallel()
	b := setup(t)
	topic := b.createTopic(t, "limited", 1, map[string]*string{"max.message.bytes": ptr("100000")})
	cl := b.client(t, KafkaConfig{MaxMessageBytes: 250_000, MaxBufferedRecords: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, size := range []int{200_000, 60_000} {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("pair"), Value: make([]byte, size)}, func(_ *kgo.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	wg.Wait()
	if !errors.Is(errs[0], kerr.MessageTooLarge) {
		t.Fatalf("first record: %v, want MESSAGE_TOO_LARGE", errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("second record: %v; franz-go acknowledged nothing after the failure", errs[1])
	}
}

// insertSized inserts an event of aggregate type "limited" for aggregate agg with a payload of about size
// bytes and an optional topic (full name), and returns its id.
func (b *bundle) insertSized(t *testing.T, agg, eventType string, size int, topic *string) string {
	t.Helper()
	var id string
	if err := b.pool.QueryRow(context.Background(), `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, topic)
		VALUES (gen_random_uuid(), 'limited', $1, $2, jsonb_build_object('pad', repeat('x', $3)), $4)
		RETURNING event_id::text`, agg, eventType, size, topic).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

type rowState struct {
	published, failed bool
	attempts          int
	lastError         string
}

func (b *bundle) state(t *testing.T, id string) rowState {
	t.Helper()
	var s rowState
	var lastError *string
	if err := b.pool.QueryRow(context.Background(), `
		SELECT published_at IS NOT NULL, failed_at IS NOT NULL, attempts, last_error
		FROM outbox_event WHERE event_id = $1`, id).Scan(&s.published, &s.failed, &s.attempts, &lastError); err != nil {
		t.Fatal(err)
	}
	if lastError != nil {
		s.lastError = *lastError
	}
	return s
}

// Defect 1's mechanism through the relay: an aggregate's first event is refused
// by Kafka for good, its second is acknowledged (a later produce batch of the
// same partition). Before, the second was marked published while the first
// failed: a consumer saw the aggregate's second event without its first. Now the
// first fails and the second is released with a last_error and waits behind it.
func TestAckBehindRefusedEventIsNotMarked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createTopic(t, "outbox.limited", 1, map[string]*string{"max.message.bytes": ptr("100000")})
	big := b.insertSized(t, "pair", "Big", 200_000, nil)
	small := b.insertSized(t, "pair", "Small", 60_000, nil)
	cfg := b.config()
	cfg.MaxMessageBytes = 250_000
	// A buffer of one record: the relay's Produce of the second event waits
	// until the first has failed, as it does whenever the buffer is full.
	r, err := New(b.pool, b.client(t, KafkaConfig{MaxMessageBytes: cfg.MaxMessageBytes, MaxBufferedRecords: 1}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "the big event failed", func() bool { return b.state(t, big).failed })
	testenv.WaitFor(t, 10*time.Second, "the batch settled", func() bool { return r.Status().InFlight == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := b.state(t, big); !strings.Contains(s.lastError, "MESSAGE_TOO_LARGE") {
		t.Fatalf("big event: %+v", s)
	}
	s := b.state(t, small)
	if s.published || s.failed {
		t.Fatalf("small event published or failed behind the failed big one: %+v", s)
	}
	if !strings.Contains(s.lastError, big) {
		t.Fatalf("small event's last_error does not name the event it waits for: %q", s.lastError)
	}
}

// Defect 2: an aggregate's batch changes topic after an event Kafka refuses. The
// refused event must fail with Kafka's error (it was released without one, over
// and over), and the later event wait behind it without burning attempts.
func TestTopicChangeKeepsEarlierKafkaError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createTopic(t, "outbox.limited", 3, map[string]*string{"max.message.bytes": ptr("100000")})
	custom := b.createTopic(t, "custom.topic", 3, nil)
	big := b.insertSized(t, "pair", "Big", 200_000, nil)
	small := b.insertSized(t, "pair", "Small", 100, &custom)
	cfg := b.config()
	r := b.relay(t, cfg) // --kafka-max-message-bytes at its default (1 MB): the broker refuses
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "the big event failed", func() bool { return b.state(t, big).failed })
	testenv.WaitFor(t, 10*time.Second, "the batch settled", func() bool { return r.Status().InFlight == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	bs := b.state(t, big)
	if !strings.Contains(bs.lastError, "MESSAGE_TOO_LARGE") || bs.attempts != 1 {
		t.Fatalf("big event: %+v", bs)
	}
	ss := b.state(t, small)
	if ss.published || ss.failed || ss.attempts != 0 {
		t.Fatalf("small event: %+v, want waiting with no attempt spent", ss)
	}
}

// Defect 2's second form: with a topic per event type, an aggregate's missing
// topic followed by an existing one left both rows leased with attempts 1 and no
// error, claimed again every publish timeout. Now the first is scheduled with
// its error and the second waits behind it, uncharged.
func TestMissingTopicThenTopicChangeKeepsTheError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if b.kafka.Fake == nil {
		t.Skip("the real broker auto-creates topics; the missing-topic case runs against kfake")
	}
	b.kafka.CreateTopics(t, 3, "outbox.Exists")
	ctx := context.Background()
	var missing, exists string
	for _, x := range []struct {
		typ string
		id  *string
	}{{"Missing", &missing}, {"Exists", &exists}} {
		if err := b.pool.QueryRow(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), 'order', 'pair', $1, '{}') RETURNING event_id::text`, x.typ).Scan(x.id); err != nil {
			t.Fatal(err)
		}
	}
	cfg := b.config()
	cfg.TopicTemplate = b.kafka.Prefix + "outbox.{event_type}"
	cfg.BackoffBase, cfg.BackoffMax = time.Minute, time.Minute // one attempt in this test
	r := b.relay(t, cfg)
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "the missing topic recorded", func() bool {
		return strings.Contains(b.state(t, missing).lastError, "does not exist")
	})
	testenv.WaitFor(t, 10*time.Second, "the batch settled", func() bool { return r.Status().InFlight == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := b.state(t, missing); s.attempts != 0 || s.failed || s.published {
		t.Fatalf("missing-topic event: %+v, want waiting, its attempt not counted", s)
	}
	if s := b.state(t, exists); s.attempts != 0 || s.failed || s.published {
		t.Fatalf("event behind it: %+v, want waiting with no attempt spent", s)
	}
}
