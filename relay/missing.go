package relay

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// A topic that does not exist is an operator's problem, not the events': its
// events wait for it (scheduled again, attempt refunded, never failed) and the
// relay says which topics it is waiting for — in the log, in Status and in
// /metrics — while `outboxtop status`, which runs without a relay, reads the
// same fact from the rows' last_error (WaitingForMissingTopics).

// MissingTopicError begins the last_error of an event that waits for a Kafka
// topic that does not exist; the topic's name follows, then a space. Topic names
// have no spaces, so a reader finds the name up to the first one.
const MissingTopicError = "kafka topic does not exist: "

const (
	// missingTopicBackoffMax caps the backoff of events waiting for a topic (below
	// BackoffMax when that is longer): once the topic is created they go out
	// within this, however long it was missing.
	missingTopicBackoffMax = 30 * time.Second
	// missingTopicWait bounds how long a record to a topic this relay already
	// found missing waits for Kafka (franz-go would wait for the topic's
	// metadata until the delivery timeout, holding the batch, every event riding
	// with it, and a shutdown). It is franz-go's minimum metadata age, so every
	// such wait sees a fresh answer; a topic created meanwhile is found by that
	// metadata update, and the next attempt goes through.
	missingTopicWait = 5 * time.Second
	// missingTopicWarnEvery is how often a topic still missing is logged.
	missingTopicWarnEvery = time.Minute
	// missingTopicWindow: events that found a topic missing within it count as
	// waiting for it (their backoff is at most missingTopicBackoffMax, so a
	// waiting event is seen again well within it).
	missingTopicWindow = 2 * time.Minute
	// missingTopicForget: a topic not seen missing for this long is forgotten.
	missingTopicForget = time.Hour
	// Bounds on what is kept: topics, and the events counted per topic.
	maxMissingTopics      = 32
	maxMissingTopicEvents = 10_000
	// MaxMissingTopics is the most topics Status lists.
	MaxMissingTopics = 20
)

// MissingTopic is a Kafka topic that does not exist while events wait for it.
type MissingTopic struct {
	Topic string
	// Events is how many distinct events found it missing within the last two
	// minutes (at most 10,000 are counted).
	Events    int
	FirstSeen time.Time // when this relay first found it missing (since it last published to it)
	LastSeen  time.Time // the latest attempt that found it missing
}

func missingTopicMessage(topic, why string) string {
	return MissingTopicError + topic + " (create it, or run with --kafka-auto-create-topics where the brokers allow it; the event waits for it, the attempt not counted): " + why
}

type missingTopic struct {
	firstSeen, lastSeen, warnedAt time.Time
	strikes                       int                     // batches that found it missing in a row: its backoff
	events                        map[uuid.UUID]time.Time // event → when it last found the topic missing
}

// missingTopics is what the relay knows of the topics that do not exist.
type missingTopics struct {
	mu       sync.Mutex
	topics   map[string]*missingTopic
	prunedAt time.Time
	m        *Metrics
	// size is len(topics), read without the lock: publish asks known for every
	// record, and nearly always no topic is missing.
	size atomic.Int64
}

func newMissingTopics(m *Metrics) *missingTopics {
	return &missingTopics{topics: map[string]*missingTopic{}, m: m}
}

// known reports whether topic was found missing and not published to since.
func (t *missingTopics) known(topic string) bool {
	if t.size.Load() == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.topics[topic]
	return ok
}

// saw records that a batch found topic missing for ids. It returns the topic's
// strikes (for the backoff), the events now waiting for it, and whether to log
// it (once per missingTopicWarnEvery).
func (t *missingTopics) saw(topic string, ids []uuid.UUID, now time.Time) (strikes, events int, warn bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mt := t.topics[topic]
	if mt == nil {
		if len(t.topics) >= maxMissingTopics {
			t.evictOldestLocked()
		}
		mt = &missingTopic{firstSeen: now, events: map[uuid.UUID]time.Time{}}
		t.topics[topic] = mt
	}
	mt.lastSeen = now
	mt.strikes++
	for _, id := range ids {
		if _, ok := mt.events[id]; ok || len(mt.events) < maxMissingTopicEvents {
			mt.events[id] = now
		}
	}
	t.pruneLocked(now)
	if warn = now.Sub(mt.warnedAt) >= missingTopicWarnEvery; warn {
		mt.warnedAt = now
	}
	t.gaugesLocked(now)
	return mt.strikes, len(mt.events), warn
}

// published forgets topic: Kafka took a record for it, so it exists. It
// reports whether the topic had been found missing.
func (t *missingTopics) published(topic string, now time.Time) bool {
	if t.size.Load() == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.topics[topic]; !ok {
		return false
	}
	delete(t.topics, topic)
	t.gaugesLocked(now)
	return true
}

// list is the topics found missing within missingTopicWindow, the latest first,
// at most MaxMissingTopics.
func (t *missingTopics) list(now time.Time) []MissingTopic {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pruneLocked(now)
	t.gaugesLocked(now)
	var out []MissingTopic
	for name, mt := range t.topics {
		if now.Sub(mt.lastSeen) < missingTopicWindow {
			out = append(out, MissingTopic{Topic: name, Events: len(mt.events), FirstSeen: mt.firstSeen, LastSeen: mt.lastSeen})
		}
	}
	slices.SortFunc(out, func(a, b MissingTopic) int {
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		return cmp.Compare(a.Topic, b.Topic)
	})
	if len(out) > MaxMissingTopics {
		out = out[:MaxMissingTopics]
	}
	return out
}

// refresh keeps the gauges current while no batch meets a missing topic.
func (t *missingTopics) refresh(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pruneLocked(now)
	t.gaugesLocked(now)
}

func (t *missingTopics) pruneLocked(now time.Time) {
	if now.Sub(t.prunedAt) < time.Second {
		return // at most 10,000 events a topic: not on every batch
	}
	t.prunedAt = now
	for name, mt := range t.topics {
		if now.Sub(mt.lastSeen) >= missingTopicForget {
			delete(t.topics, name)
			continue
		}
		for id, at := range mt.events {
			if now.Sub(at) >= missingTopicWindow {
				delete(mt.events, id)
			}
		}
	}
}

func (t *missingTopics) evictOldestLocked() {
	var oldest string
	var at time.Time
	for name, mt := range t.topics {
		if oldest == "" || mt.lastSeen.Before(at) {
			oldest, at = name, mt.lastSeen
		}
	}
	delete(t.topics, oldest)
}

func (t *missingTopics) gaugesLocked(now time.Time) {
	t.size.Store(int64(len(t.topics)))
	topics, events := 0, 0
	for _, mt := range t.topics {
		if now.Sub(mt.lastSeen) < missingTopicWindow {
			topics++
			events += len(mt.events)
		}
	}
	t.m.MissingTopics.Set(float64(topics))
	t.m.MissingTopicEvents.Set(float64(events))
}
