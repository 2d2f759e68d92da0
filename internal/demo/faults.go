package demo

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The demo's faults, offered as console keys and scheduled by headless runs
// with faults on. Each one shows a failure the outbox pattern absorbs.

// SetOutage cuts (true) or restores (false) the relay's connections to Kafka,
// as a network partition would: open connections are closed and new ones are
// refused. The brokers themselves keep running, so the consumer is unaffected.
func (d *Demo) SetOutage(on bool) {
	if on {
		d.outage.cut()
	} else {
		d.outage.restore()
	}
}

// Outage reports whether the relay's connections to Kafka are cut.
func (d *Demo) Outage() bool { return d.outage.isDown() }

// KillBatch makes the relay abandon the next batch Kafka acknowledges, as if
// the process died between the ack and the mark: once the batch's lease runs
// out its events are published again and the consumer's inbox absorbs the
// duplicates. It returns how many kills were asked for so far.
func (d *Demo) KillBatch() int64 {
	d.Relay.AbandonNextBatch()
	return d.kills.Add(1)
}

// Kills is how many batch kills were asked for.
func (d *Demo) Kills() int64 { return d.kills.Load() }

// InjectPoison adds an event too large to publish to a hot order: the relay
// fails it at once and that order's later events wait behind it.
func (d *Demo) InjectPoison(ctx context.Context) (string, error) {
	id, err := d.Orders.InjectPoison(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("poison %s on order hot-1: failed at once, hot-1 waits behind it (4 Failed)", id.String()[28:]), nil // the console's short form of a UUIDv7: its random end
}

// Produced is the number of records Kafka acknowledged to the relay, repeats
// of abandoned batches included.
func (d *Demo) Produced() int64 { return d.produced.n.Load() }

// outageSwitch is the relay's dialer: it can cut every connection it made and
// refuse new ones until restored.
type outageSwitch struct {
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func (s *outageSwitch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, fmt.Errorf("dial %s: connection refused (demo broker outage)", addr)
	}
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

func (s *outageSwitch) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = true
	for c := range s.conns {
		_ = c.(*trackedConn).Conn.Close()
	}
	clear(s.conns)
}

func (s *outageSwitch) restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
}

func (s *outageSwitch) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// trackedConn forgets itself when closed, so a long demo does not collect
// every connection it ever made.
type trackedConn struct {
	net.Conn
	s *outageSwitch
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// producedHook counts the records Kafka acknowledged.
type producedHook struct{ n atomic.Int64 }

func (h *producedHook) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if err == nil {
		h.n.Add(1)
	}
}

var _ kgo.HookProduceRecordUnbuffered = (*producedHook)(nil)
