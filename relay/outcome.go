package relay

import (
	"time"

	"github.com/google/uuid"
)

// The outcome of a batch is decided here, apart from Kafka and PostgreSQL, so
// that every combination of results can be tested: which events go out (plan),
// and what becomes of each once Kafka has answered (decide).
//
// The rules, in ordered mode, for each aggregate of a batch in seq order:
//
//   - An aggregate's run stops at its first event whose record cannot be built
//     (failed at once) or whose topic differs from the run's (Kafka orders one
//     partition only): the events after it are held back.
//   - An event is marked only if Kafka acknowledged it and every earlier event
//     of its aggregate in the batch was acknowledged too. An acknowledged event
//     behind one that was not is released with a last_error saying so, and is
//     published again after it (franz-go can fail one produce batch of a
//     partition and acknowledge the next: see TestFranzAcksLaterRecordAfterFailingEarlier).
//   - An event with an error of its own always ends with that error as its
//     last_error: failed when it can never succeed or is out of attempts,
//     scheduled with backoff otherwise. Its attempt is refunded only when the
//     brokers could not be reached at all or its topic does not exist (neither
//     is the event's fault).
//   - An event whose topic does not exist waits for it: scheduled again with a
//     backoff that grows with the batches that found the topic missing, capped
//     at missingTopicBackoffMax, its attempt refunded. It is never failed for it.
//   - A held-back event is released with its attempt refunded: it was not tried.
//
// Without ordering the same rules hold except that nothing waits for anything:
// an acknowledged event is always marked and nothing is held back.

// resultKind is what became of one claimed event's record.
type resultKind uint8

const (
	notSent   resultKind = iota // held back: it waits behind an earlier event of its aggregate
	acked                       // Kafka acknowledged it
	retriable                   // a Kafka error that a later attempt may not see
	permanent                   // can never succeed: record too large, invalid topic, authorization, malformed row
	noTopic                     // the topic does not exist (or the relay found it missing and Kafka did not answer in time)
	cancelled                   // not acknowledged within the publish timeout (perhaps written)
)

var resultKinds = []resultKind{notSent, acked, retriable, permanent, noTopic, cancelled}

func (k resultKind) String() string {
	return [...]string{"not-sent", "acked", "retriable", "permanent", "no-topic", "cancelled"}[k]
}

// result is what Kafka (or the relay's own checks) said about one event.
type result struct {
	kind      resultKind
	err       string // what went wrong, for every kind but notSent and acked
	topic     string // where an acknowledged record went; the missing topic (noTopic)
	partition int32
	offset    int64
	code      int16 // Kafka's error code, when its answer carried one
}

// verdict is what happens to an event's row.
type verdict uint8

const (
	vMark     verdict = iota // published
	vSchedule                // tried again after a backoff, attempt counted
	vFail                    // failed (dead) until an operator acts
	vRelease                 // ready again now, attempt refunded
	vWait                    // tried again after a delay, attempt refunded: it waits for its topic
)

func (v verdict) String() string {
	return [...]string{"mark", "schedule", "fail", "release", "wait"}[v]
}

// decision is the verdict on one event and how to settle it.
type decision struct {
	verdict verdict
	delay   time.Duration // vSchedule, vWait
	err     *string       // the new last_error; nil keeps the previous one
	// class is what went wrong with the try, for its attempt history: the
	// result's kind, "out-of-order" (acknowledged behind an earlier event that
	// was not) or "unreachable" (the brokers did not answer); empty when the
	// event was not tried (held back).
	class string
}

// policy is what decide needs besides the results.
type policy struct {
	ordered     bool
	maxAttempts int
	backoffBase time.Duration
	backoffMax  time.Duration
	// outage: after transient failures the brokers did not answer at all, so the
	// failures are theirs, not the events'.
	outage bool
	// missingStrikes is, per topic found missing, how many batches in a row found
	// it so (this one included): the backoff of the events waiting for it.
	missingStrikes map[string]int
}

// needsProbe reports whether decide's answer depends on policy.outage: the relay
// asks the brokers only then.
func needsProbe(results []result) bool {
	for _, r := range results {
		if r.kind == retriable || r.kind == cancelled {
			return true
		}
	}
	return false
}

// step is what plan does with an event before Kafka is asked.
type step uint8

const (
	stepSend step = iota
	stepFail      // its record cannot be built: failed at once
	stepHold      // held back behind an earlier event of its aggregate, or past the byte budget
)

// plan decides which events of a batch go to Kafka. topics[i] is the topic of
// event i's record, or "" when its record cannot be built; deferred[i] (nil:
// none) says that the claim did not load event i's payload, which was past the
// batch's byte budget: it is held back (released, its attempt refunded), and
// in ordered mode so is every later event of its aggregate.
func plan(events []*event, topics []string, deferred []bool, ordered bool) []step {
	steps := make([]step, len(events))
	type run struct {
		topic string
		stop  bool
	}
	runs := map[aggregateKey]*run{}
	for i, e := range events {
		held := deferred != nil && deferred[i]
		if !ordered {
			switch {
			case held:
				steps[i] = stepHold
			case topics[i] == "":
				steps[i] = stepFail
			}
			continue
		}
		r := runs[e.key()]
		switch {
		case r != nil && r.stop:
			steps[i] = stepHold
		case held:
			steps[i] = stepHold
			runs[e.key()] = &run{stop: true}
		case topics[i] == "":
			steps[i] = stepFail
			runs[e.key()] = &run{stop: true}
		case r == nil:
			runs[e.key()] = &run{topic: topics[i]}
		case r.topic != topics[i]:
			// Continues in a later batch, once this one is acknowledged.
			r.stop = true
			steps[i] = stepHold
		}
	}
	return steps
}

// decide turns the results of a batch (events in seq order) into a decision per
// event, following the rules above.
func decide(events []*event, results []result, p policy) []decision {
	out := make([]decision, len(events))
	blocker := map[aggregateKey]uuid.UUID{} // an aggregate's first event in the batch not acknowledged
	for i, e := range events {
		res := results[i]
		k := e.key()
		first, blocked := blocker[k]
		if res.kind != acked && p.ordered && !blocked {
			blocker[k] = e.id
		}
		switch res.kind {
		case acked:
			if p.ordered && blocked {
				msg := "kafka acknowledged it after the earlier event " + first.String() +
					" of its aggregate did not go out: it is published again after that one"
				out[i] = decision{verdict: vRelease, err: &msg, class: classOutOfOrder}
			} else {
				out[i] = decision{verdict: vMark}
			}
		case notSent:
			out[i] = decision{verdict: vRelease}
		case permanent:
			out[i] = failedWith(res.err, res.kind.String())
		case noTopic:
			out[i] = p.waitForTopic(res)
		case retriable, cancelled:
			if p.outage {
				msg := res.err + " (kafka unreachable: attempt not counted)"
				out[i] = decision{verdict: vRelease, err: &msg, class: classUnreachable}
			} else {
				out[i] = p.again(e, res)
			}
		}
	}
	return out
}

// again schedules e after a backoff, or fails it when it has used its attempts.
func (p policy) again(e *event, res result) decision {
	msg, class := res.err, res.kind.String()
	if e.attempts >= p.maxAttempts {
		return failedWith(msg+" (out of attempts)", class)
	}
	return decision{verdict: vSchedule, delay: backoff(e.attempts, p.backoffBase, p.backoffMax), err: &msg, class: class}
}

// waitForTopic schedules an event whose topic does not exist, attempt refunded.
// The backoff grows with the topic's strikes, not the event's attempts (which do
// not grow), and stays short enough that a created topic is used promptly.
func (p policy) waitForTopic(res result) decision {
	msg := res.err
	delay := backoff(max(p.missingStrikes[res.topic], 1), p.backoffBase, min(p.backoffMax, missingTopicBackoffMax))
	return decision{verdict: vWait, delay: delay, err: &msg, class: res.kind.String()}
}

func failedWith(msg, class string) decision { return decision{verdict: vFail, err: &msg, class: class} }

// The classes of a try that are not a result's kind.
const (
	classOutOfOrder  = "out-of-order"
	classUnreachable = "unreachable"
)

func (e *event) key() aggregateKey { return aggregateKey{e.aggregateType, e.aggregateID} }
