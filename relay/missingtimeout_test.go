package relay

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A record to a topic the relay already found missing that ends without an
// answer from Kafka, by franz-go's own record timeout as well as by a
// context's, waits for its topic, its attempt not counted. Counted (as it was
// for the record timeout, whose last error need not name the topic), such
// tries failed TestDrainEndsWhenOnlyAMissingTopicIsLeft on a loaded machine,
// and would in time fail an event that only waits for its topic.
func TestTimeoutToAMissingTopicWaits(t *testing.T) {
	t.Parallel()
	r := &Relay{missing: newMissingTopics(NewMetrics(prometheus.NewRegistry())), missingWait: time.Second}
	r.missing.saw("absent", []uuid.UUID{uuid.New()}, time.Now())
	for _, err := range []error{kgo.ErrRecordTimeout, context.DeadlineExceeded, context.Canceled,
		errors.Join(kgo.ErrRecordTimeout, errors.New("last err: NOT_LEADER_FOR_PARTITION"))} {
		if got := r.kafkaResult(&kgo.Record{Topic: "absent"}, err, false); got.kind != noTopic {
			t.Errorf("%v to a topic found missing: %v, want %v", err, got.kind, noTopic)
		}
		if got := r.kafkaResult(&kgo.Record{Topic: "present"}, err, false); got.kind != cancelled {
			t.Errorf("%v to another topic: %v, want %v", err, got.kind, cancelled)
		}
	}
}
