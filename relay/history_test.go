package relay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// brokerMode is what the fake broker answers to produce requests.
type brokerMode int32

const (
	answer    brokerMode = iota // as Kafka would
	serverErr                   // UNKNOWN_SERVER_ERROR on every partition (not retried by the client)
	noReply                     // nothing: the client times out
	tooLarge                    // MESSAGE_TOO_LARGE: the record can never be written
)

// controlProduce makes the fake broker answer produce requests as mode says.
func controlProduce(b *bundle, mode *atomic.Int32) {
	b.kafka.Fake.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.kafka.Fake.KeepControl()
		var code int16
		switch brokerMode(mode.Load()) {
		case answer:
			return nil, nil, false
		case noReply:
			return nil, nil, true
		case serverErr:
			code = kerr.InvalidRequiredAcks.Code
		case tooLarge:
			code = kerr.MessageTooLarge.Code
		}
		r := req.(*kmsg.ProduceRequest)
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

// One event that goes wrong four ways before it is published: its topic
// missing, a broker error, no answer in time, a record too large (failed);
// then an operator retries it. Its history holds each try, by this relay,
// classed, with Kafka's code where Kafka gave one and the relay's decision,
// and its timeline has the operator's retry after the try that failed it; no
// other event has history.
func TestAttemptHistoryRecordsEachWayATryFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if b.kafka.Fake == nil {
		t.Skip("the broker's answers are the fake's to choose; the real broker runs the other history tests")
	}
	ctx := context.Background()
	var mode atomic.Int32
	controlProduce(b, &mode)
	const id = "00000000-0000-4000-8000-00000000f1ee"
	if _, err := b.pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, topic)
		VALUES ($1, 'order', 'five-1', 'OrderPlaced', '{"total": 5}', $2)`, id, b.kafka.Prefix+"no.such.topic"); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.MaxAttempts = 50
	r := b.relay(t, cfg)
	r.missingWait = 500 * time.Millisecond
	start(t, r)
	tries := func(class string) int {
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_attempt WHERE event_id = $1 AND class = $2`, id, class).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.WaitFor(t, 30*time.Second, "a try that found the topic missing", func() bool { return tries("no-topic") > 0 })
	mode.Store(int32(serverErr))
	if _, err := b.pool.Exec(ctx, `UPDATE outbox_event SET topic = NULL WHERE event_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "a try the broker refused", func() bool { return tries("retriable") > 0 })
	mode.Store(int32(noReply))
	testenv.WaitFor(t, 30*time.Second, "a try not acknowledged in time", func() bool { return tries("cancelled") > 0 })
	mode.Store(int32(tooLarge))
	// The history row of the try that failed it too: the relay writes it in
	// a statement after the settle, stamped by the database then, and a
	// retry that came between the two would be listed before it.
	testenv.WaitFor(t, 30*time.Second, "the event failed, its try in the history", func() bool {
		return b.count(t, "failed_at IS NOT NULL") == 1 && tries("permanent") > 0
	})
	mode.Store(int32(answer))
	in := b.inspector(t)
	if _, err := in.Do(ctx, inspect.Request{Action: inspect.Retry, IDs: []string{id}, Actor: "alice", Reason: "broker fixed"}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "the event published", func() bool { return b.count(t, "published_at IS NOT NULL") == 1 })

	d, err := in.Detail(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]inspect.Attempt{}
	for _, a := range d.AttemptHistory {
		if a.Holder != r.cfg.Holder {
			t.Errorf("try %+v names relay %q, want %q", a, a.Holder, r.cfg.Holder)
		}
		if _, ok := seen[a.Class]; !ok {
			seen[a.Class] = a
		}
	}
	want := []struct {
		class, outcome string
		code           *kerr.Error
		backoff        bool
	}{
		{"no-topic", "wait", nil, true},
		{"retriable", "schedule", kerr.InvalidRequiredAcks, true},
		{"cancelled", "schedule", nil, true},
		{"permanent", "fail", kerr.MessageTooLarge, false},
	}
	for _, w := range want {
		a, ok := seen[w.class]
		switch {
		case !ok:
			t.Errorf("no %s try in the history: %+v", w.class, d.AttemptHistory)
		case a.Outcome != w.outcome || (a.BackoffMS != nil) != w.backoff || a.Error == "":
			t.Errorf("%s try %+v: want outcome %s, a backoff %v, an error", w.class, a, w.outcome, w.backoff)
		case w.code != nil && (a.KafkaCode == nil || *a.KafkaCode != w.code.Code):
			t.Errorf("%s try %+v: want Kafka's code %d", w.class, a, w.code.Code)
		}
	}
	// The retry comes after the try that failed the event (a try after it may
	// meet the broker still timing out the unanswered request).
	failedAt, retriedAt := -1, -1
	for k, h := range d.Timeline() {
		switch {
		case h.Attempt != nil && h.Attempt.Outcome == "fail":
			failedAt = k
		case h.Action != nil && h.Action.Action == "retry" && h.Action.Reason == "broker fixed":
			retriedAt = k
		}
	}
	if failedAt < 0 || retriedAt < failedAt {
		t.Errorf("the timeline %+v: the failing try at %d, alice's retry at %d; want the retry after it", d.Timeline(), failedAt, retriedAt)
	}
	if len(d.AttemptHistory) > inspect.AttemptHistoryLimit {
		t.Errorf("%d tries kept, more than %d", len(d.AttemptHistory), inspect.AttemptHistoryLimit)
	}
	rows, err := b.pool.Query(ctx, `SELECT count(*) FROM outbox_attempt WHERE event_id <> $1`, id)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int]); err != nil || n != 0 {
		t.Errorf("%d history rows of other events (%v), want none", n, err)
	}
}
