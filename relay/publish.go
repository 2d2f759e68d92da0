package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type aggregateKey struct{ typ, id string }

// publish produces a claimed batch and settles every event in it: marked
// published, scheduled again, failed, or released (see outcome.go for the rules).
// ctx ends past the shutdown timeout; stop when shutdown begins, which ends at
// once the wait of records for a topic already found missing (they would not be
// acknowledged soon, and were never sent: they wait again, attempt refunded).
//
// checked, when not nil, closes once the batch's order check has run
// (checkOrder): it runs beside the publish, and the mark, which takes the
// events out of what the check reads, waits for it.
func (r *Relay) publish(ctx, stop context.Context, token uuid.UUID, events []*event, checked <-chan struct{}) {
	start := time.Now()
	ordered := r.cfg.Ordering == OrderAggregate
	results := make([]result, len(events))
	recs := make([]*kgo.Record, len(events))
	topics := make([]string, len(events))
	buildErrs := make([]error, len(events))
	deferred := make([]bool, len(events))
	for i, e := range events {
		if deferred[i] = r.deferred(e); deferred[i] {
			continue
		}
		rec, err := r.record(e)
		if err != nil {
			buildErrs[i] = err
			continue
		}
		recs[i], topics[i] = rec, rec.Topic
	}
	steps := plan(events, topics, deferred, ordered)
	for i, s := range steps {
		switch s {
		case stepFail:
			results[i] = result{kind: permanent, err: buildErrs[i].Error()}
		case stepHold:
			results[i] = result{kind: notSent}
		}
	}

	// Records not acknowledged in time are failed by franz-go through this context
	// (gaplessly per partition), so an outage ends a batch instead of stalling it.
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	// Records to a topic found missing wait for it no longer than missingTopicWait
	// and not past the start of a shutdown. franz-go ends a topic's metadata wait
	// when the context of the record that began it ends, failing every record
	// buffered for it: so each such record carries the bound.
	wctx, wcancel := context.WithTimeout(stop, r.missingWait)
	defer wcancel()
	waited := make([]bool, len(events))
	for i, s := range steps {
		if s == stepSend && r.missing.known(topics[i]) {
			recs[i].Context, waited[i] = wctx, true
		}
	}
	var wg sync.WaitGroup
	// franz-go fails a partition's buffered records together, but a record handed
	// over after such a failure starts afresh and can be written ahead of the
	// failed ones. An aggregate whose record already failed sends nothing more in
	// this batch (what is left of the race, a failure landing during the Produce
	// call, decide handles: the later event is not marked). That is why this is
	// Produce with a callback per record and not ProduceSync: ProduceSync hands
	// every record over before the first answer, so nothing could be held back.
	var mu sync.Mutex
	failedAggs := map[aggregateKey]bool{}
	produced := 0
	for i, s := range steps {
		if s != stepSend {
			continue
		}
		k := events[i].key()
		mu.Lock()
		stop := ordered && failedAggs[k]
		mu.Unlock()
		if stop {
			results[i] = result{kind: notSent}
			continue
		}
		produced++
		wg.Add(1)
		r.kafka.Produce(pctx, recs[i], func(rec *kgo.Record, err error) {
			results[i] = r.kafkaResult(rec, err, waited[i])
			if err != nil {
				mu.Lock()
				failedAggs[k] = true
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	ackedAt := time.Now()
	if ctx.Err() != nil {
		// Shutting down past ShutdownTimeout: shutdown releases the leases once
		// this goroutine has ended.
		return
	}
	if produced > 0 && r.crashNext.CompareAndSwap(true, false) {
		r.log.Warn("abandoning an acknowledged batch as a crash would: its events will be published again", "events", len(events))
		return
	}

	p := policy{ordered: ordered, maxAttempts: r.cfg.MaxAttempts, backoffBase: r.cfg.BackoffBase, backoffMax: r.cfg.BackoffMax}
	p.missingStrikes = r.noteTopics(events, results)
	if needsProbe(results) {
		p.outage = r.brokersDown(ctx)
	}
	var toMark []published
	var settles []settlement
	for i, d := range decide(events, results, p) {
		e := events[i]
		switch d.verdict {
		case vMark:
			res := results[i]
			toMark = append(toMark, published{e.id, res.topic, res.partition, res.offset})
			r.m.CommitToAck.Observe(ackedAt.Sub(e.createdAt).Seconds())
		default:
			st := settlement{id: e.id, delay: d.delay, dead: d.verdict == vFail,
				refund: d.verdict == vWait || d.verdict == vRelease, err: d.err,
				attempt: e.attempts, class: d.class, code: results[i].code}
			settles = append(settles, st)
		}
		if d.verdict == vRelease && results[i].kind == acked {
			// Kafka has it before an earlier event of its aggregate: consumers see
			// this one first. It goes again after the earlier one.
			r.log.Warn("event acknowledged after an earlier event of its aggregate failed", "event_id", e.id, "seq", e.seq, "aggregate_id", e.aggregateID)
		}
	}

	if checked != nil {
		<-checked
	}
	markStart := time.Now()
	var mr markResult
	_, err := retryDB(ctx, func() (int, error) {
		var err error
		mr, err = r.mark(ctx, token, toMark)
		return mr.marked, err
	})
	if err != nil {
		r.noteError("marking published (the lease will expire and the events be published again)", err)
	} else {
		r.m.MarkSeconds.Observe(time.Since(markStart).Seconds())
		r.m.Published.Add(float64(mr.marked))
		r.stats.published.Add(uint64(mr.marked))
		if mr.parked > 0 {
			r.log.Warn("events parked by an operator while in flight stay parked (Kafka has them)", "events", mr.parked)
		}
		if lost := len(toMark) - mr.marked - mr.parked; lost > 0 {
			r.lostFences(lost)
		}
	}
	n, err := retryDB(ctx, func() (int, error) { return r.settle(ctx, token, settles) })
	if err != nil {
		r.noteError("settling failed events (their lease will expire)", err)
	} else if n < len(settles) {
		r.lostFences(len(settles) - n)
	}
	r.writeHistory(ctx, settles)
	r.count(settles)
	r.stats.lastBatch.Store(int64(len(events)))
	r.stats.lastPublish.Store(int64(time.Since(start)))
}

// kafkaResult classifies franz-go's answer for one record. waited says the
// record went to a topic found missing, with missingTopicWait as its bound.
func (r *Relay) kafkaResult(rec *kgo.Record, err error, waited bool) result {
	if err == nil {
		return result{kind: acked, topic: rec.Topic, partition: rec.Partition, offset: rec.Offset}
	}
	var code int16
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
		code = ke.Code
	}
	switch classify(err) {
	case classPermanent:
		return result{kind: permanent, err: "kafka: " + err.Error(), code: code}
	case classNoTopic:
		return result{kind: noTopic, topic: rec.Topic, err: missingTopicMessage(rec.Topic, err.Error()), code: code}
	}
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrRecordTimeout)
	if (waited || r.missing.known(rec.Topic)) && timedOut {
		// A bound ended the wait (or a shutdown did, or franz-go's own record
		// timeout, whose last error need not be the missing topic): the topic
		// was missing at the last answer and Kafka has not said otherwise since.
		// A record produced before the topic was found missing can share the
		// wait of one produced after (franz-go keeps one per topic), and ends
		// with it. Counted, such tries would fail an event that only waits.
		return result{kind: noTopic, topic: rec.Topic, err: missingTopicMessage(rec.Topic,
			"still unknown to Kafka "+r.missingWait.String()+" after asking again ("+err.Error()+")")}
	}
	if timedOut {
		return result{kind: cancelled, err: "kafka: not acknowledged in time: " + err.Error()}
	}
	return result{kind: retriable, err: "kafka: " + err.Error(), code: code}
}

// noteTopics records the topics this batch found missing and the ones Kafka
// took records for, logs a missing one once per missingTopicWarnEvery, and
// returns each missing topic's strikes for the backoff.
func (r *Relay) noteTopics(events []*event, results []result) map[string]int {
	var missing map[string][]uuid.UUID
	now := time.Now()
	lastAcked := ""
	for i, res := range results {
		switch res.kind {
		case noTopic:
			if missing == nil {
				missing = map[string][]uuid.UUID{}
			}
			missing[res.topic] = append(missing[res.topic], events[i].id)
		case acked:
			if res.topic != lastAcked {
				lastAcked = res.topic // batches mostly go to one topic: a lookup per change
				if r.missing.published(res.topic, now) {
					r.log.Info(fmt.Sprintf("relay: topic %q exists now: the events waiting for it go out", res.topic), "topic", res.topic)
				}
			}
		}
	}
	if missing == nil {
		return nil
	}
	strikes := make(map[string]int, len(missing))
	for topic, ids := range missing {
		n, waiting, warn := r.missing.saw(topic, ids, now)
		strikes[topic] = n
		if warn {
			r.log.Warn(fmt.Sprintf("relay: topic %q does not exist: %d events waiting for it (create it, or run with --kafka-auto-create-topics where the brokers allow it; their attempts are not counted)", topic, waiting),
				"topic", topic, "events", waiting)
		}
	}
	return strikes
}

func (r *Relay) lostFences(n int) {
	r.m.LostFences.Add(float64(n))
	r.stats.lostFences.Add(uint64(n))
	r.log.Warn("lost fences: leases expired before the mark; another relay owns these events now", "events", n)
}

// count counts the settled events; an event's own error becomes the relay's
// last error (Status.LastError), so that it is the latest trouble, not an
// outage long over.
func (r *Relay) count(settles []settlement) {
	now := time.Now()
	for _, s := range settles {
		switch {
		case s.dead:
			r.m.Failed.Inc()
			r.stats.failed.Add(1)
			r.log.Warn("event failed", "event_id", s.id, "error", *s.err)
			r.lastError.Store(&timedError{at: now, msg: "event " + s.id.String() + " failed: " + *s.err})
		case s.refund:
			r.m.Released.Inc()
			r.stats.released.Add(1)
		default:
			r.m.Retried.Inc()
			r.stats.retried.Add(1)
			if s.err != nil {
				r.lastError.Store(&timedError{at: now, msg: "event " + s.id.String() + " is tried again later: " + *s.err})
			}
		}
	}
}

// brokersDown tells an outage from an event's own trouble: after transient
// failures, do the brokers answer at all?
func (r *Relay) brokersDown(ctx context.Context) bool {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.kafka.Ping(pctx); err != nil {
		r.brokerDown("kafka unreachable; relay backs off as a whole, attempts are not counted", err)
		return true
	}
	return false
}

type errorClass int

const (
	classTransient errorClass = iota
	classPermanent
	classNoTopic
)

// permanentKafkaErrors are the broker's answers that say this record can never
// be written, whoever retries it: too large, an illegal or forbidden topic, a
// record the broker or a policy rejects.
//
// kerr.IsRetriable is not this rule, in both directions. Kafka calls
// CORRUPT_MESSAGE retriable, but to a producer it means the record itself is bad
// (a null key for a compacted topic, …). And most of what Kafka calls
// non-retriable is the client's or the cluster's trouble, not the event's —
// SASL_AUTHENTICATION_FAILED, UNSUPPORTED_VERSION, OUT_OF_ORDER_SEQUENCE_NUMBER,
// UNKNOWN_SERVER_ERROR, INVALID_REQUIRED_ACKS: failing events on those would
// dead-letter a healthy backlog for a configuration mistake. TestClassify pins
// the difference.
var permanentKafkaErrors = []*kerr.Error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidTopicException,
	kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.InvalidRecord,
	kerr.PolicyViolation, kerr.CorruptMessage}

func classify(err error) errorClass {
	switch {
	case slices.ContainsFunc(permanentKafkaErrors, func(p *kerr.Error) bool { return errors.Is(err, p) }):
		return classPermanent
	case errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID):
		return classNoTopic
	}
	return classTransient // a retriable broker error, or the client's: a timeout, a closed connection, …
}

// retryDB runs a short write a few times: a failed mark means duplicates later,
// worth a retry over a dropped connection.
func retryDB(ctx context.Context, f func() (int, error)) (int, error) {
	var err error
	for i := 1; i <= 4; i++ {
		var n int
		if n, err = f(); err == nil {
			return n, nil
		}
		sleep(ctx, backoff(i, 100*time.Millisecond, 2*time.Second))
	}
	return 0, err
}
