package relay

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

const testMaxAttempts = 3

// batchOf builds events in seq order for aggregates given as letters ("aab").
func batchOf(aggs []byte, attempts []int) []*event {
	events := make([]*event, len(aggs))
	for i, a := range aggs {
		events[i] = &event{id: uuid.UUID{15: byte(i + 1)}, seq: int64(i + 1), aggregateType: "order", aggregateID: string(a), attempts: attempts[i]}
	}
	return events
}

func describe(events []*event, results []result, p policy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ordered=%v outage=%v:", p.ordered, p.outage)
	for i, e := range events {
		fmt.Fprintf(&b, " %s#%d/%s(attempts %d)", e.aggregateID, e.seq, results[i].kind, e.attempts)
	}
	return b.String()
}

// checkOutcome asserts the rules every batch outcome must keep. (It returns its
// finding rather than calling t.Helper: it runs millions of times.)
func checkOutcome(events []*event, results []result, p policy, ds []decision) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", describe(events, results, p), fmt.Sprintf(format, args...))
	}
	if len(ds) != len(events) {
		return fail("%d decisions for %d events", len(ds), len(events))
	}
	notMarked := map[aggregateKey]bool{}
	for i, e := range events {
		res, d := results[i], ds[i]
		// An earlier event that did not succeed never lets a later one of its aggregate be marked.
		if p.ordered && d.verdict == vMark && notMarked[e.key()] {
			return fail("event %d marked after an earlier event of its aggregate was not", i)
		}
		if d.verdict != vMark {
			notMarked[e.key()] = true
		}
		// The attempt history: every event that was tried and not marked has a
		// class (and an error to go with it); a marked or held-back one none.
		if tried := d.verdict != vMark && res.kind != notSent; tried != (d.class != "") || d.class != "" && d.err == nil {
			return fail("event %d (%s, %s): history class %q, error %v", i, res.kind, d.verdict, d.class, d.err != nil)
		}
		switch res.kind {
		case acked:
			// Progress: an acknowledged event is marked unless something before it failed.
			if d.verdict != vMark && d.verdict != vRelease {
				return fail("acknowledged event %d: %s", i, d.verdict)
			}
			if d.verdict == vRelease && d.err == nil {
				return fail("acknowledged event %d released without saying why", i)
			}
			if !p.ordered && d.verdict != vMark {
				return fail("unordered: acknowledged event %d not marked", i)
			}
		case notSent:
			if d.verdict != vRelease {
				return fail("event %d not sent but %s", i, d.verdict)
			}
		default:
			// Every unsuccessful event ends with a last_error naming its own error.
			if d.err == nil || !strings.Contains(*d.err, res.err) {
				return fail("event %d (%s) ends without its error: %v", i, res.kind, d.err)
			}
			if d.verdict == vMark {
				return fail("event %d (%s) marked", i, res.kind)
			}
			// No error is refunded except for a broker that cannot be reached and a
			// topic that does not exist.
			if d.verdict == vRelease && !(p.outage && (res.kind == retriable || res.kind == cancelled)) {
				return fail("event %d (%s) refunded without an outage", i, res.kind)
			}
			if d.verdict == vWait && res.kind != noTopic {
				return fail("event %d (%s) waits for its topic", i, res.kind)
			}
			// A missing topic waits, out of attempts or not, outage or not: it is
			// never failed for it.
			want := map[resultKind]verdict{permanent: vFail, noTopic: vWait, retriable: vSchedule, cancelled: vSchedule}[res.kind]
			if want == vSchedule && e.attempts >= p.maxAttempts {
				want = vFail
			}
			if p.outage && (res.kind == retriable || res.kind == cancelled) {
				want = vRelease
			}
			if d.verdict != want {
				return fail("event %d (%s): %s, want %s", i, res.kind, d.verdict, want)
			}
			if (d.verdict == vSchedule || d.verdict == vWait) && d.delay <= 0 {
				return fail("event %d scheduled without a backoff", i)
			}
			if d.verdict == vWait && d.delay > missingTopicBackoffMax {
				return fail("event %d waits %v for its topic, longer than %v", i, d.delay, missingTopicBackoffMax)
			}
		}
	}
	return nil
}

// resultOf is event i's result of kind k, from a table built once.
func resultOf(k resultKind, i int) result { return resultTable[k][i] }

var resultTable = func() (t [6][4]result) {
	for _, k := range resultKinds {
		for i := range t[k] {
			t[k][i] = newResult(k, i)
		}
	}
	return t
}()

func newResult(k resultKind, i int) result {
	r := result{kind: k}
	if k != acked && k != notSent {
		r.err = fmt.Sprintf("error-%d-%s", i, k)
	}
	if k == acked || k == noTopic {
		r.topic, r.offset = "t", int64(i)
	}
	return r
}

// TestDecideEveryCombination runs decide over every combination of up to four
// events on up to two aggregates, each with every result (consistent with a plan
// or not) and with attempts left or used up, ordered or not, outage or not.
func TestDecideEveryCombination(t *testing.T) {
	t.Parallel()
	cases := 0
	for n := 1; n <= 4; n++ {
		aggs := make([]byte, n)
		kinds := make([]resultKind, n)
		attempts := make([]int, n)
		var rec func(i int)
		rec = func(i int) {
			if i == n {
				events := batchOf(aggs, attempts)
				results := make([]result, n)
				for j := range kinds {
					results[j] = resultOf(kinds[j], j)
				}
				for _, ordered := range []bool{true, false} {
					for _, outage := range []bool{true, false} {
						p := policy{ordered: ordered, outage: outage, maxAttempts: testMaxAttempts, backoffBase: time.Millisecond, backoffMax: time.Second}
						if err := checkOutcome(events, results, p, decide(events, results, p)); err != nil {
							t.Fatal(err)
						}
						cases++
					}
				}
				return
			}
			for _, a := range []byte("ab") {
				for _, k := range resultKinds {
					for _, at := range []int{1, testMaxAttempts} {
						if at == testMaxAttempts && (k == notSent || k == acked || k == permanent) {
							continue // attempts matter to the other kinds only
						}
						aggs[i], kinds[i], attempts[i] = a, k, at
						rec(i + 1)
					}
				}
			}
		}
		rec(0)
	}
	t.Logf("%d combinations", cases)
}

// TestPlanAndDecideEveryCombination runs plan then decide over every batch of up
// to four events on two aggregates and two topics (or a record that cannot be
// built), with every Kafka result for each event sent.
func TestPlanAndDecideEveryCombination(t *testing.T) {
	t.Parallel()
	cases := 0
	for n := 1; n <= 4; n++ {
		aggs := make([]byte, n)
		topics := make([]string, n)
		var rec func(i int)
		rec = func(i int) {
			if i == n {
				attempts := make([]int, n)
				for j := range attempts {
					attempts[j] = 1
				}
				events := batchOf(aggs, attempts)
				// The claim's byte budget defers a suffix of the batch from
				// its cut on (never the first event); those get no record.
				for cut := 1; cut <= n; cut++ {
					deferred := make([]bool, n)
					tops := slices.Clone(topics)
					for j := cut; j < n; j++ {
						deferred[j], tops[j] = true, ""
					}
					for _, ordered := range []bool{true, false} {
						steps := plan(events, tops, deferred, ordered)
						checkPlan(t, events, tops, deferred, steps, ordered)
						// Every combination of Kafka results for the events sent.
						var sent []int
						for j, s := range steps {
							if s == stepSend {
								sent = append(sent, j)
							}
						}
						kafkaKinds := []resultKind{acked, retriable, permanent, noTopic, cancelled}
						combos := 1
						for range sent {
							combos *= len(kafkaKinds)
						}
						for c := 0; c < combos; c++ {
							results := make([]result, n)
							for j := range results {
								switch steps[j] {
								case stepFail:
									results[j] = result{kind: permanent, err: fmt.Sprintf("invalid-%d", j)}
								case stepHold:
									results[j] = result{kind: notSent}
								}
							}
							x := c
							for _, j := range sent {
								results[j] = resultOf(kafkaKinds[x%len(kafkaKinds)], j)
								x /= len(kafkaKinds)
							}
							for _, outage := range []bool{true, false} {
								p := policy{ordered: ordered, outage: outage, maxAttempts: testMaxAttempts, backoffBase: time.Millisecond, backoffMax: time.Second}
								if err := checkOutcome(events, results, p, decide(events, results, p)); err != nil {
									t.Fatal(err)
								}
								cases++
							}
						}
					}
				}
				return
			}
			for _, a := range []byte("ab") {
				for _, tp := range []string{"t1", "t2", ""} {
					aggs[i], topics[i] = a, tp
					rec(i + 1)
				}
			}
		}
		rec(0)
	}
	t.Logf("%d combinations", cases)
}

// checkPlan: in ordered mode an aggregate's events are sent up to its first
// unbuildable event (failed), change of topic or deferred event (held), and
// held back after it; without ordering everything buildable goes, what was
// deferred is held and the rest fails.
func checkPlan(t *testing.T, events []*event, topics []string, deferred []bool, steps []step, ordered bool) {
	t.Helper()
	stopped := map[aggregateKey]bool{}
	topic := map[aggregateKey]string{}
	for i, e := range events {
		k := e.key()
		if topics[i] == "" && steps[i] == stepSend {
			t.Fatalf("%v: unbuildable event %d sent", topics, i)
		}
		if deferred[i] && steps[i] != stepHold {
			t.Fatalf("%v %v: deferred event %d not held back", topics, deferred, i)
		}
		if !ordered {
			if (topics[i] == "" && !deferred[i]) != (steps[i] == stepFail) || (steps[i] == stepHold) != deferred[i] {
				t.Fatalf("%v unordered: event %d %d", topics, i, steps[i])
			}
			continue
		}
		if stopped[k] && steps[i] != stepHold {
			t.Fatalf("%v: event %d not held back after an earlier event of its aggregate stopped", topics, i)
		}
		if steps[i] != stepSend {
			stopped[k] = true
			continue
		}
		if tp, ok := topic[k]; ok && tp != topics[i] {
			t.Fatalf("%v: aggregate's run changes topic at event %d", topics, i)
		}
		topic[k] = topics[i]
	}
	// The first event of each aggregate is sent or failed, never held, unless
	// it was deferred; the batch's first is never deferred: a batch always
	// progresses.
	seen := map[aggregateKey]bool{}
	for i, e := range events {
		if !seen[e.key()] && steps[i] == stepHold && !deferred[i] {
			t.Fatalf("%v: first event %d of its aggregate held back", topics, i)
		}
		seen[e.key()] = true
	}
	if steps[0] == stepHold {
		t.Fatalf("%v %v: the batch's first event held back", topics, deferred)
	}
}

// The case of defect 2: a big event that Kafka refuses, then a small one of the
// same aggregate to another topic. The big one fails with Kafka's error, the
// small one waits behind it; before, the big one was released without its error.
func TestDecideTopicChangeKeepsEarlierError(t *testing.T) {
	t.Parallel()
	events := batchOf([]byte("pp"), []int{1, 1})
	steps := plan(events, []string{"outbox.pair", "custom.topic"}, nil, true)
	if steps[0] != stepSend || steps[1] != stepHold {
		t.Fatalf("steps %v, want send, hold", steps)
	}
	results := []result{{kind: permanent, err: "kafka: MESSAGE_TOO_LARGE"}, {kind: notSent}}
	ds := decide(events, results, policy{ordered: true, maxAttempts: 10, backoffBase: time.Millisecond, backoffMax: time.Second})
	if ds[0].verdict != vFail || ds[0].err == nil || !strings.Contains(*ds[0].err, "MESSAGE_TOO_LARGE") {
		t.Fatalf("big event: %+v", ds[0])
	}
	if ds[1].verdict != vRelease || ds[1].err != nil {
		t.Fatalf("small event: %+v", ds[1])
	}
}

// A missing topic's events wait with a backoff that grows with the batches that
// found the topic missing (the events' attempts, refunded, do not grow) and is
// capped so that a created topic is used within missingTopicBackoffMax, even
// when --backoff-max is longer. Out of attempts or not, they are never failed.
func TestDecideMissingTopicWaitsWithACappedBackoff(t *testing.T) {
	t.Parallel()
	res := result{kind: noTopic, topic: "outbox.order", err: missingTopicMessage("outbox.order", "UNKNOWN_TOPIC_OR_PARTITION")}
	for _, c := range []struct {
		strikes, attempts int
		lo, hi            time.Duration
	}{
		{0, 1, 500 * time.Millisecond, time.Second},
		{1, 1, 500 * time.Millisecond, time.Second},
		{3, 1, 2 * time.Second, 4 * time.Second},
		{5, 10, 8 * time.Second, 16 * time.Second},
		{50, 10, missingTopicBackoffMax / 2, missingTopicBackoffMax},
	} {
		p := policy{ordered: true, maxAttempts: 10, backoffBase: time.Second, backoffMax: 5 * time.Minute,
			missingStrikes: map[string]int{"outbox.order": c.strikes}}
		events := batchOf([]byte("a"), []int{c.attempts})
		d := decide(events, []result{res}, p)[0]
		if d.verdict != vWait || d.delay < c.lo || d.delay > c.hi || d.err == nil || !strings.HasPrefix(*d.err, MissingTopicError+"outbox.order ") {
			t.Errorf("strikes %d, attempts %d: %s after %v (%v), want wait for %v..%v with the missing-topic error",
				c.strikes, c.attempts, d.verdict, d.delay, d.err, c.lo, c.hi)
		}
	}
}
