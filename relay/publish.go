package relay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type aggregateKey struct{ typ, id string }

// aggregateRun is what a batch knows of one aggregate while publishing it in
// ordered mode: the topic its run goes to, and whether the run was cut short.
type aggregateRun struct {
	topic string
	cut   bool
}

type outcome struct {
	rec *kgo.Record
	err error
}

// publish produces a claimed batch and settles every event in it: marked
// published, scheduled again, failed, or released.
func (r *Relay) publish(ctx context.Context, token uuid.UUID, events []*event) {
	start := time.Now()
	ordered := r.cfg.Ordering == OrderAggregate
	runs := map[aggregateKey]*aggregateRun{}
	results := make([]outcome, len(events))
	var settles []settlement
	var toProduce []int

	// cut ends an aggregate's run in this batch: the events after it go back
	// without an attempt and wait behind the one that stopped it.
	cut := func(k aggregateKey) {
		if run := runs[k]; run != nil {
			run.cut = true
		} else {
			runs[k] = &aggregateRun{cut: true}
		}
	}
	for i, e := range events {
		k := aggregateKey{e.aggregateType, e.aggregateID}
		if ordered && runs[k] != nil && runs[k].cut {
			settles = append(settles, released(e))
			continue
		}
		rec, err := r.record(e)
		if err != nil {
			settles = append(settles, failed(e, err.Error()))
			if ordered {
				cut(k)
			}
			continue
		}
		if ordered {
			// Kafka orders records within a partition only: a run that changes topic
			// stops here and continues in a later batch, after this one is acknowledged.
			if run := runs[k]; run == nil {
				runs[k] = &aggregateRun{topic: rec.Topic}
			} else if run.topic != rec.Topic {
				run.cut = true
				settles = append(settles, released(e))
				continue
			}
		}
		results[i].rec = rec
		toProduce = append(toProduce, i)
	}

	// Records not acknowledged in time are failed by franz-go through this context
	// (gaplessly per partition), so an outage ends a batch instead of stalling it.
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(len(toProduce))
	for _, i := range toProduce {
		r.kafka.Produce(pctx, results[i].rec, func(_ *kgo.Record, err error) {
			results[i].err = err
			wg.Done()
		})
	}
	wg.Wait()
	ackedAt := time.Now()
	if len(toProduce) > 0 && r.crashNext.CompareAndSwap(true, false) {
		r.log.Warn("abandoning an acknowledged batch as a crash would: its events will be published again", "events", len(events))
		return
	}

	var acked []published
	var transient []int
	for _, i := range toProduce {
		e, res := events[i], results[i]
		k := aggregateKey{e.aggregateType, e.aggregateID}
		if res.err == nil {
			acked = append(acked, published{e.id, res.rec.Topic, res.rec.Partition, res.rec.Offset})
			r.m.CommitToAck.Observe(ackedAt.Sub(e.createdAt).Seconds())
			continue
		}
		if ordered && runs[k].cut {
			settles = append(settles, released(e))
			continue
		}
		if ordered {
			cut(k)
		}
		switch classify(res.err) {
		case classPermanent:
			settles = append(settles, failed(e, "kafka: "+res.err.Error()))
		case classNoTopic:
			msg := "topic " + res.rec.Topic + " does not exist: create it, or run with --kafka-auto-create-topics where the brokers allow it (" + res.err.Error() + ")"
			settles = append(settles, settlement{id: e.id, delay: backoff(e.attempts, r.cfg.BackoffBase, r.cfg.BackoffMax), refund: true, err: &msg})
		default:
			transient = append(transient, i)
		}
	}
	if len(transient) > 0 {
		outage := r.brokersDown(ctx)
		for _, i := range transient {
			e, err := events[i], results[i].err
			switch {
			case outage:
				settles = append(settles, released(e))
			case e.attempts >= r.cfg.MaxAttempts:
				settles = append(settles, failed(e, "kafka: "+err.Error()+" (out of attempts)"))
			default:
				msg := "kafka: " + err.Error()
				settles = append(settles, settlement{id: e.id, delay: backoff(e.attempts, r.cfg.BackoffBase, r.cfg.BackoffMax), err: &msg})
			}
		}
	}

	markStart := time.Now()
	marked, err := retryDB(ctx, func() (int, error) { return r.mark(ctx, token, acked) })
	if err != nil {
		r.noteError("marking published (the lease will expire and the events be published again)", err)
	} else {
		r.m.MarkSeconds.Observe(time.Since(markStart).Seconds())
		r.m.Published.Add(float64(marked))
		r.stats.published.Add(uint64(marked))
		if lost := len(acked) - marked; lost > 0 {
			r.lostFences(lost)
		}
	}
	n, err := retryDB(ctx, func() (int, error) { return r.settle(ctx, token, settles) })
	if err != nil {
		r.noteError("settling failed events (their lease will expire)", err)
	} else if n < len(settles) {
		r.lostFences(len(settles) - n)
	}
	r.count(settles)
	r.stats.lastBatch.Store(int64(len(events)))
	r.stats.lastPublish.Store(int64(time.Since(start)))
}

func (r *Relay) lostFences(n int) {
	r.m.LostFences.Add(float64(n))
	r.stats.lostFences.Add(uint64(n))
	r.log.Warn("lost fences: leases expired before the mark; another relay owns these events now", "events", n)
}

func (r *Relay) count(settles []settlement) {
	for _, s := range settles {
		switch {
		case s.dead:
			r.m.Failed.Inc()
			r.stats.failed.Add(1)
			r.log.Warn("event failed", "event_id", s.id, "error", *s.err)
		case s.refund:
			r.m.Released.Inc()
			r.stats.released.Add(1)
		default:
			r.m.Retried.Inc()
			r.stats.retried.Add(1)
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

func released(e *event) settlement { return settlement{id: e.id, refund: true} }

func failed(e *event, msg string) settlement { return settlement{id: e.id, dead: true, err: &msg} }

type errorClass int

const (
	classTransient errorClass = iota
	classPermanent
	classNoTopic
)

func classify(err error) errorClass {
	for _, p := range []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidTopicException,
		kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.InvalidRecord,
		kerr.PolicyViolation, kerr.CorruptMessage} {
		if errors.Is(err, p) {
			return classPermanent
		}
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return classNoTopic
	}
	return classTransient
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
