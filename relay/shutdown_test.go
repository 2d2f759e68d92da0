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

// A batch whose records wait for a topic that does not exist cannot finish
// promptly: franz-go would wait for the topic's metadata until the delivery
// timeout (20 s by default, and the relay's shutdown with it). A shutdown ends
// that wait at once: the events are released, their attempt refunded, and Run
// returns well within the shutdown timeout.
func TestShutdownReleasesBatchesWaitingForAMissingTopic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if b.kafka.Fake == nil {
		t.Skip("the real broker auto-creates topics; the missing-topic case runs against kfake")
	}
	cfg := b.config()
	cfg.TopicTemplate = b.kafka.Prefix + "gone.{aggregate_type}"
	cfg.PublishTimeout = 20 * time.Second
	cfg.ShutdownTimeout = 30 * time.Second
	r, err := New(b.pool, b.client(t, KafkaConfig{DeliveryTimeout: 20 * time.Second}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.insertSeed(t, 10, 10, "o-")
	stop := start(t, r)
	// The first batch finds the topic missing; the next ones wait for it.
	testenv.WaitFor(t, 30*time.Second, "the topic found missing", func() bool { return len(r.Status().MissingTopics) == 1 })
	testenv.WaitFor(t, 30*time.Second, "a batch waiting for it", func() bool {
		return r.Status().InFlight > 0 && b.count(t, "lease_until > now()") > 0
	})
	time.Sleep(200 * time.Millisecond) // into franz-go's wait for the topic
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Logf("Run returned %v after the cancel", took)
	if took > shutdownMissingTopicBound {
		t.Fatalf("Run returned %v after the cancel, want within %v", took, shutdownMissingTopicBound)
	}
	if got := b.count(t, "lease_until IS NULL AND attempts = 0 AND failed_at IS NULL AND published_at IS NULL AND starts_with(last_error, '"+MissingTopicError+"')"); got != 10 {
		t.Fatalf("%d of 10 events released with their attempt refunded and the missing-topic error", got)
	}
}

// shutdownMissingTopicBound is what docs/relay.md promises for a shutdown with batches
// waiting for a missing topic, with the test's margin for a loaded machine.
const shutdownMissingTopicBound = 3 * time.Second
