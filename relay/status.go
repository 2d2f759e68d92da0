package relay

import (
	"sync/atomic"
	"time"
)

type stats struct {
	published, failed, retried, released, lostFences, batches, outages atomic.Uint64
	lastClaim, lastPublish, lastBatch                                  atomic.Int64
}

// Status is a point-in-time view of a running relay, for the console.
type Status struct {
	Paused          bool
	BrokerReachable bool
	InFlight        int // batches
	Published       uint64
	Failed          uint64
	Retried         uint64
	Released        uint64
	LostFences      uint64
	Outages         uint64        // times the brokers became unreachable
	LastClaim       time.Duration // duration of the last claim transaction
	LastPublish     time.Duration // claim-to-settled time of the last batch
	LastBatch       int           // events in the last batch
	// HeadsLocked counts aggregates whose head event another session has held
	// locked for longer than the lock timeout: they wait until it lets go.
	HeadsLocked int
	// MissingTopics are the Kafka topics that do not exist while events wait for
	// them (found missing in the last two minutes), the latest first, at most
	// MaxMissingTopics: the events wait, their attempts not counted, until an
	// operator creates the topic.
	MissingTopics []MissingTopic
	// LastError is the latest trouble and when it was: the relay's own (a claim,
	// a mark, the brokers unreachable) or an event's (failed, or tried again
	// later), whichever came last.
	LastError   string
	LastErrorAt time.Time
}

// Status returns the relay's current status.
func (r *Relay) Status() Status {
	r.mu.Lock()
	s := Status{Paused: r.paused, InFlight: len(r.leases)}
	r.mu.Unlock()
	s.BrokerReachable = r.brokerOK.Load()
	s.Published = r.stats.published.Load()
	s.Failed = r.stats.failed.Load()
	s.Retried = r.stats.retried.Load()
	s.Released = r.stats.released.Load()
	s.LostFences = r.stats.lostFences.Load()
	s.Outages = r.stats.outages.Load()
	s.LastClaim = time.Duration(r.stats.lastClaim.Load())
	s.LastPublish = time.Duration(r.stats.lastPublish.Load())
	s.LastBatch = int(r.stats.lastBatch.Load())
	s.HeadsLocked = r.heads.count()
	s.MissingTopics = r.missing.list(time.Now())
	if e := r.lastError.Load(); e != nil {
		s.LastError, s.LastErrorAt = e.msg, e.at
	}
	return s
}
