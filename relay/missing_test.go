package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// What the relay keeps of missing topics stays bounded (topics, events per
// topic, the list Status shows), warns once per interval per topic however
// many batches meet it, forgets events not seen for the window, and forgets a
// topic as soon as Kafka takes a record for it.
func TestMissingTopicsStayBounded(t *testing.T) {
	t.Parallel()
	m := NewMetrics(nil)
	mt := newMissingTopics(m)
	now := time.Unix(1_000_000, 0)
	ids := func(n int) []uuid.UUID {
		out := make([]uuid.UUID, n)
		for i := range out {
			out[i] = uuid.New()
		}
		return out
	}
	if mt.known("a") {
		t.Fatal("a topic known before it was seen")
	}
	same := ids(3)
	warns := 0
	for i := range 10 {
		strikes, events, warn := mt.saw("a", same, now.Add(time.Duration(i)*time.Second))
		if strikes != i+1 || events != 3 {
			t.Fatalf("batch %d: strikes %d, events %d", i, strikes, events)
		}
		if warn {
			warns++
		}
	}
	if _, _, warn := mt.saw("a", same, now.Add(missingTopicWarnEvery)); warns != 1 || !warn {
		t.Fatalf("%d warnings in the first minute, and then %v: want one a minute", warns, warn)
	}
	if _, events, _ := mt.saw("a", ids(2*maxMissingTopicEvents), now.Add(missingTopicWarnEvery)); events != maxMissingTopicEvents {
		t.Fatalf("%d events counted for a topic, at most %d", events, maxMissingTopicEvents)
	}
	for i := range 2 * maxMissingTopics {
		mt.saw(fmt.Sprint("t", i), ids(1), now.Add(missingTopicWarnEvery+time.Duration(i+1)*time.Millisecond))
	}
	if len(mt.topics) != maxMissingTopics {
		t.Fatalf("%d topics kept, at most %d", len(mt.topics), maxMissingTopics)
	}
	l := mt.list(now.Add(missingTopicWarnEvery + time.Second))
	if len(l) != MaxMissingTopics || l[0].Topic != fmt.Sprint("t", 2*maxMissingTopics-1) {
		t.Fatalf("list of %d, first %+v: want the %d latest, the latest first", len(l), l[0], MaxMissingTopics)
	}
	if got := testutil.ToFloat64(m.MissingTopics); got != maxMissingTopics {
		t.Fatalf("missing_topics %v", got)
	}
	// Kafka took a record for one: forgotten at once.
	mt.published("t63", now)
	if mt.known("t63") || len(mt.list(now.Add(missingTopicWarnEvery+time.Second))) != MaxMissingTopics {
		t.Fatal("a topic Kafka took a record for is still listed")
	}
	// Not seen for the window: no longer listed, its events not counted.
	later := now.Add(missingTopicWarnEvery + missingTopicWindow + time.Second)
	if l := mt.list(later); len(l) != 0 {
		t.Fatalf("listed after the window: %+v", l)
	}
	if got := testutil.ToFloat64(m.MissingTopicEvents); got != 0 {
		t.Fatalf("missing_topic_events %v after the window", got)
	}
	if !mt.known("t62") {
		t.Fatal("a topic not seen for the window is no longer known missing: its records would wait the delivery timeout again")
	}
	mt.refresh(later.Add(missingTopicForget))
	if mt.known("t62") {
		t.Fatal("a topic not seen for an hour is still known")
	}
}
