package relay

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// Defect 5: an idle relay noticed an outage only when a batch failed, and after
// one it probed with pauses growing to 15 s. Readiness (Status and the
// broker_reachable gauge) now follows Kafka both ways within a few seconds.
func TestReadinessFollowsKafkaWhileIdle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.relay(t, b.config())
	start(t, r)
	reachable := func(want bool) func() bool {
		return func() bool {
			g := testutil.ToFloat64(r.m.BrokerReachable) == 1
			return r.Status().BrokerReachable == want && g == want
		}
	}
	testenv.WaitFor(t, 10*time.Second, "reachable at start", reachable(true))
	for round := 0; round < 2; round++ {
		b.net.cut()
		began := time.Now()
		testenv.WaitFor(t, 5*time.Second, "an idle relay notices the outage", reachable(false))
		t.Logf("down noticed after %v", time.Since(began))
		b.net.restore()
		began = time.Now()
		testenv.WaitFor(t, 5*time.Second, "ready again once Kafka answers", reachable(true))
		t.Logf("up noticed after %v", time.Since(began))
	}
	// And it relays again.
	b.insertSeed(t, 5, 5, "o-")
	testenv.WaitFor(t, 30*time.Second, "published after the outages", func() bool { return b.count(t, "published_at IS NOT NULL") == 5 })
}
