package testenv

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvKafkaBrokers names a real Kafka cluster (comma-separated host:port) for the
// integration tests; without it they run against kfake.
const EnvKafkaBrokers = "OUTBOXTOP_TEST_KAFKA_BROKERS"

// Kafka is the Kafka a test talks to.
type Kafka struct {
	// Brokers are the seed brokers.
	Brokers []string
	// Prefix is unique to the test: put it in front of every topic name so tests
	// sharing a real cluster never see each other's records.
	Prefix string
	// Fake is the in-process cluster, or nil against a real one.
	Fake *kfake.Cluster
}

// Real reports whether the tests run against a real Kafka cluster.
func Real() bool { return os.Getenv(EnvKafkaBrokers) != "" }

// NewKafka returns the Kafka for this test: a fresh kfake cluster (closed when the
// test ends) or the real cluster from OUTBOXTOP_TEST_KAFKA_BROKERS. Extra kfake
// options apply only to the fake.
func NewKafka(t testing.TB, opts ...kfake.Opt) *Kafka {
	t.Helper()
	k := &Kafka{Prefix: "t" + randomHex(5) + "."}
	if env := os.Getenv(EnvKafkaBrokers); env != "" {
		k.Brokers = strings.Split(env, ",")
		return k
	}
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation()}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	k.Fake = c
	k.Brokers = c.ListenAddrs()
	return k
}

// CreateTopics creates topics (names without the prefix; it is added) with the
// given partition count.
func (k *Kafka) CreateTopics(t testing.TB, partitions int32, names ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	full := make([]string, len(names))
	for i, n := range names {
		full[i] = k.Prefix + n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, full...)
	if err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	for _, r := range resp {
		if r.Err != nil {
			t.Fatalf("creating topic %s: %v", r.Topic, r.Err)
		}
	}
	// A real broker answers CreateTopics before every partition has a leader in
	// its metadata; producing then fails with UNKNOWN_TOPIC_OR_PARTITION. Wait
	// until the metadata shows every partition led.
	adm := kadm.NewClient(cl)
	for {
		details, err := adm.ListTopics(ctx, full...)
		if err == nil && topicsReady(details, full, partitions) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("topics %v not ready within 30 s (%v)", full, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func topicsReady(details kadm.TopicDetails, topics []string, partitions int32) bool {
	for _, name := range topics {
		d, ok := details[name]
		if !ok || d.Err != nil || int32(len(d.Partitions)) != partitions {
			return false
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

// Consume reads topics (full names) from the start until it has read at least
// want records and everything that was in them when it began (their end offsets
// then), or until the timeout, and returns what it read in partition order.
// Reading to the end matters: with duplicates, want records can be reached
// before every event was seen.
func (k *Kafka) Consume(t testing.TB, want int, timeout time.Duration, topics ...string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, topics...)
	admin.Close()
	if err != nil {
		t.Fatalf("listing end offsets: %v", err)
	}
	remaining := map[string]map[int32]int64{} // topic → partition → end offset not yet reached
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			if remaining[o.Topic] == nil {
				remaining[o.Topic] = map[int32]int64{}
			}
			remaining[o.Topic][o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	left := func() int {
		n := 0
		for _, ps := range remaining {
			n += len(ps)
		}
		return n
	}
	for (len(out) < want || left() > 0) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if end, ok := remaining[r.Topic][r.Partition]; ok && r.Offset >= end-1 {
				delete(remaining[r.Topic], r.Partition)
			}
		})
	}
	return out
}
