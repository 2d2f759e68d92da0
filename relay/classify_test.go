package relay

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// An event is failed at once only for an error that is its record's own; a
// missing topic is said as such; everything else is retried. kerr.IsRetriable
// would classify several of these the other way (see permanentKafkaErrors):
// the cases marked so pin the difference.
func TestClassify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want errorClass
	}{
		{kerr.MessageTooLarge, classPermanent},
		{kerr.RecordListTooLarge, classPermanent},
		{kerr.InvalidTopicException, classPermanent},
		{kerr.TopicAuthorizationFailed, classPermanent},
		{kerr.ClusterAuthorizationFailed, classPermanent},
		{kerr.InvalidRecord, classPermanent},
		{kerr.PolicyViolation, classPermanent},
		{kerr.CorruptMessage, classPermanent}, // retriable to kerr
		{fmt.Errorf("producing: %w", kerr.MessageTooLarge), classPermanent},
		{kerr.UnknownTopicOrPartition, classNoTopic}, // retriable to kerr
		{kerr.UnknownTopicID, classNoTopic},          // retriable to kerr
		{kerr.NotLeaderForPartition, classTransient},
		{kerr.RequestTimedOut, classTransient},
		{kerr.SaslAuthenticationFailed, classTransient}, // not retriable to kerr: the client's trouble
		{kerr.UnsupportedVersion, classTransient},       // not retriable to kerr
		{kerr.OutOfOrderSequenceNumber, classTransient}, // not retriable to kerr
		{kerr.UnknownServerError, classTransient},       // not retriable to kerr
		{kgo.ErrRecordTimeout, classTransient},
		{context.DeadlineExceeded, classTransient},
		{errors.New("connection reset by peer"), classTransient},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
