package relay

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// Defect 4: past ShutdownTimeout, Run used to release the leases and return
// while the batch's goroutine still ran; it later settled on a pool the caller
// had closed. Now Run cancels the batch, waits for its goroutine, then releases.
//
// Not parallel: it looks for the relay's goroutines among all of them.
func TestShutdownTimeoutWaitsForBatchesThenReleases(t *testing.T) {
	b := setup(t)
	cfg := b.config()
	cfg.ShutdownTimeout = 200 * time.Millisecond
	cfg.PublishTimeout = 20 * time.Second
	r, err := New(b.pool, b.client(t, KafkaConfig{DeliveryTimeout: time.Minute}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, r)
	testenv.WaitFor(t, 10*time.Second, "first empty claim", func() bool { return r.stats.lastClaim.Load() > 0 })
	// Kafka goes away after the relay saw it: the batch's records wait for a
	// connection until the publish timeout.
	b.net.cut()
	b.insertSeed(t, 10, 10, "o-")
	testenv.WaitFor(t, 10*time.Second, "a batch in flight", func() bool { return r.Status().InFlight == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "(*Relay).publish") {
		t.Fatalf("Run returned with a batch still running:\n%s", stacks)
	}
	if e := r.Status().LastError; strings.Contains(e, "context canceled") {
		t.Fatalf("the batch tried to settle on a cancelled context: %s", e)
	}
	if got := b.count(t, "lease_token IS NULL AND attempts = 0 AND published_at IS NULL"); got != 10 {
		t.Fatalf("%d of 10 events released with their attempt refunded", got)
	}
}
