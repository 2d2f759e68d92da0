package sshserve

import (
	"context"
	"sync"
	"time"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// sharedSnapshots gives every session the same Overview snapshot, k9s-style:
// one read of the database per interval however many consoles are open. A
// session asking within interval of the last read's start gets that read; one
// asking while a read runs waits for it. Lists, detail and actions stay the
// session's own.
//
// A read cut short because its session closed is not shared: the next caller
// reads again. A failed read is shared like a good one (a database that is down
// is not asked twenty times a second).
type sharedSnapshots struct {
	src      console.SnapshotSource
	interval time.Duration

	mu      sync.Mutex
	snap    inspect.Snapshot
	err     error
	at      time.Time     // start of the last completed read; zero before the first
	running chan struct{} // closed when the running read ends; nil when none runs
}

func newSharedSnapshots(src console.SnapshotSource, interval time.Duration) *sharedSnapshots {
	return &sharedSnapshots{src: src, interval: interval}
}

// Snapshot returns the shared snapshot, reading it when it is older than the
// interval.
func (s *sharedSnapshots) Snapshot(ctx context.Context) (inspect.Snapshot, error) {
	s.mu.Lock()
	for s.running != nil || (!s.at.IsZero() && time.Since(s.at) < s.interval) {
		if s.running == nil {
			snap, err := s.snap, s.err
			s.mu.Unlock()
			return snap, err
		}
		wait := s.running
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return inspect.Snapshot{}, ctx.Err()
		}
		s.mu.Lock()
	}
	done := make(chan struct{})
	s.running = done
	s.mu.Unlock()

	start := time.Now()
	snap, err := s.src.Snapshot(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = nil
	close(done)
	if err != nil && ctx.Err() != nil {
		return snap, err // this session's end, not the database's answer
	}
	s.snap, s.err, s.at = snap, err, start
	return snap, err
}
