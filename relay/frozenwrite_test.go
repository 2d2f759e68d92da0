package relay

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// A relay that stops reading in the middle of a claim's result — a process
// frozen while PostgreSQL still sends it the batch — leaves its backend blocked
// writing, where neither the lock nor the idle timeout reaches it. The claim's
// tcp_user_timeout (twice the lock timeout) ends that connection: the claimed
// rows are free again within the bound, and nothing is lost once the relay
// reads again.
func TestClaimResultUnreadIsEndedWithinTheBound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const events = 200 // 64 KiB each: a 13 MB result, more than the socket buffers hold
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 20), 'OrderPlaced', jsonb_build_object('n', g, 'pad', repeat('x', 65536))
		FROM generate_series(1, $1) g ORDER BY g`, events); err != nil {
		t.Fatal(err)
	}

	f := &readFreezer{release: make(chan struct{})}
	pcfg, err := pgxpool.ParseConfig(b.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "frozen-reader"
	pcfg.ConnConfig.DialFunc = f.dial
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cfg := b.config()
	cfg.LockTimeout = time.Second
	cfg.BatchSize = events
	r, err := New(pool, b.client(t, KafkaConfig{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, r)
	var unfrozen sync.Once
	unfreeze := func() { unfrozen.Do(func() { close(f.release) }) }
	t.Cleanup(unfreeze) // before stop (cleanups run last first)

	var pid int32
	testenv.WaitFor(t, time.Minute, "the claim's backend blocked writing to the relay", func() bool {
		err := b.pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE application_name = 'frozen-reader' AND wait_event = 'ClientWrite' AND query LIKE '-- The ordered claim%'`).Scan(&pid)
		return err == nil
	})
	blocked := time.Now()
	testenv.WaitFor(t, 2*cfg.LockTimeout+20*time.Second, "the blocked backend ended by the server", func() bool {
		return !b.backendAlive(t, pid)
	})
	took := time.Since(blocked)
	t.Logf("the claim's backend, blocked writing to a relay that stopped reading, ended after %v", took.Round(10*time.Millisecond))
	if bound := 2*cfg.LockTimeout + 2*time.Second; took > bound {
		t.Errorf("the blocked claim lived %v: the bound is 2 × LockTimeout = %v (and a little)", took, 2*cfg.LockTimeout)
	}
	var free int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM outbox_event
		WHERE published_at IS NULL AND (lease_until IS NULL OR lease_until <= now()) FOR UPDATE SKIP LOCKED) s`).Scan(&free); err != nil {
		t.Fatal(err)
	}
	if free != events {
		t.Errorf("%d of %d events free to claim once the blocked claim ended", free, events)
	}

	unfreeze()
	testenv.WaitFor(t, time.Minute, "all published once the relay reads again", func() bool {
		return b.count(t, "published_at IS NOT NULL") == events
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b.checkOrder(t, events)
}

// readFreezer dials connections that stop reading after a megabyte, as a
// process stopped in the middle of a large result does, until release is
// closed. Their receive buffer is small and fixed (no autotuning),
// so the server's writes soon block.
type readFreezer struct{ release chan struct{} }

func (f *readFreezer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetReadBuffer(64 << 10); err != nil {
			c.Close()
			return nil, err
		}
	}
	return &freezingConn{Conn: c, f: f}, nil
}

type freezingConn struct {
	net.Conn
	f    *readFreezer
	read int // bytes read so far
}

func (c *freezingConn) Read(p []byte) (int, error) {
	if c.read > 1<<20 {
		<-c.f.release
	}
	n, err := c.Conn.Read(p)
	c.read += n
	return n, err
}
