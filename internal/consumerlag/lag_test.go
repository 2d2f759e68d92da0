package consumerlag

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.MainLeakChecked(m) }

type testBundle struct {
	kafka *testenv.Kafka
	dial  Dial
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	k := testenv.NewKafka(t)
	return &testBundle{kafka: k, dial: func(opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Brokers...)}, opts...)...)
	}}
}

func (b *testBundle) checker(t *testing.T, opts Options) *Checker {
	t.Helper()
	c, err := New(b.dial, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// produce writes n records to topic, stamped at, spread over its partitions.
func (b *testBundle) produce(t *testing.T, topic string, n int, at time.Time) {
	t.Helper()
	cl, err := b.dial(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", i), Timestamp: at}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// consume joins group on topic, commits the first n records it reads, and
// leaves: a consumer that stopped there.
func (b *testBundle) consume(t *testing.T, group, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	cl, err := b.dial(append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollRecords(ctx, n-len(got))
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s as %s: read %d of %d records: %v", topic, group, len(got), n, err)
		}
		got = append(got, fs.Records()...)
	}
	// A KIP-848 member's commit can meet STALE_MEMBER_EPOCH while its epoch
	// settles (brokers before 4.3); the member then has the new epoch.
	err = cl.CommitRecords(ctx, got[:n]...)
	for tries := 0; errors.Is(err, kerr.StaleMemberEpoch) && tries < 5; tries++ {
		wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cl.PollRecords(wait, 1) // the heartbeat brings the new epoch; nothing read here is committed
		cancel()
		err = cl.CommitRecords(ctx, got[:n]...)
	}
	if err != nil {
		t.Fatalf("committing: %v", err)
	}
}

func group(t *testing.T, r Report, name string) Group {
	t.Helper()
	for _, g := range r.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("group %s not in report %+v", name, r)
	return Group{}
}

func TestLagOfGroupStoppedHalfway(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.kafka.Prefix
	b.kafka.CreateTopics(t, 3, "outbox.order", "outbox.invoice", "other")
	orders, invoices, other := p+"outbox.order", p+"outbox.invoice", p+"other"
	const n = 40
	written := time.Now().Add(-time.Minute)
	b.produce(t, orders, n, written)
	b.produce(t, invoices, n, written)
	b.produce(t, other, n, written)

	b.consume(t, p+"billing", orders, n/2)    // stopped halfway
	b.consume(t, p+"shipping", orders, n)     // up to date
	b.consume(t, p+"analytics", other, n/2)   // reads no outbox topic
	b.consume(t, p+"audit-tail", invoices, 1) // excluded by pattern

	c := b.checker(t, Options{Groups: []string{p + "*"}, Exclude: []string{p + "audit-*"}})
	r := c.Check(context.Background(), []string{orders, invoices})
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	var names []string
	for _, g := range r.Groups {
		names = append(names, g.Name)
	}
	if want := []string{p + "billing", p + "shipping"}; !slices.Equal(names, want) {
		t.Fatalf("groups %v, want %v (analytics reads no outbox topic, audit-tail is excluded)", names, want)
	}

	billing := group(t, r, p+"billing")
	if billing.Lag != n/2 || len(billing.Topics) != 1 || billing.Topics[0].Topic != orders || billing.Topics[0].Lag != n/2 {
		t.Fatalf("billing: lag %d on %+v, want %d on %s alone", billing.Lag, billing.Topics, n/2, orders)
	}
	var perPartition int64
	for _, pl := range billing.Topics[0].Partitions {
		if pl.Error != "" {
			t.Fatalf("partition %d: %s", pl.Partition, pl.Error)
		}
		perPartition += pl.Lag
		if pl.Lag > 0 && pl.OldestAt == nil {
			t.Errorf("partition %d has lag %d but no oldest record read", pl.Partition, pl.Lag)
		}
	}
	if perPartition != n/2 || len(billing.Topics[0].Partitions) != 3 {
		t.Errorf("partitions %+v: lag sums to %d over %d partitions, want %d over 3", billing.Topics[0].Partitions, perPartition, len(billing.Topics[0].Partitions), n/2)
	}
	// The records were stamped a minute ago; the age is now minus that stamp.
	age := billing.OldestAge
	if age == nil || age.Duration() < time.Minute || age.Duration() > time.Minute+time.Until(r.TakenAt.Add(time.Minute)) {
		t.Errorf("billing's oldest unconsumed age %v, want about a minute", age)
	}
	if billing.State != "Empty" || billing.Members != 0 {
		t.Errorf("billing: state %q with %d members, want Empty with 0 (its consumer left)", billing.State, billing.Members)
	}

	shipping := group(t, r, p+"shipping")
	if shipping.Lag != 0 || shipping.OldestAge != nil {
		t.Errorf("shipping: lag %d, oldest age %v; want 0 and none", shipping.Lag, shipping.OldestAge)
	}
	if lag, name := r.MaxLag(); lag != n/2 || name != p+"billing" {
		t.Errorf("MaxLag = %d (%s), want %d (billing)", lag, name, n/2)
	}

	// Without the exclusion, audit-tail shows: one of n invoices consumed.
	all := b.checker(t, Options{Groups: []string{p + "*"}, AgeTimeout: -1})
	r = all.Check(context.Background(), []string{orders, invoices})
	if g := group(t, r, p+"audit-tail"); g.Lag != n-1 || g.OldestAge != nil {
		t.Errorf("audit-tail: lag %d, age %v; want %d and no age (ages off)", g.Lag, g.OldestAge, n-1)
	}
}

// A group on KIP-848's protocol (the broker assigns partitions): classic
// DescribeGroups does not know it; its lag is measured all the same.
func TestLagOfNextGenGroup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.kafka.Prefix
	b.kafka.CreateTopics(t, 3, "outbox.order")
	topic := p + "outbox.order"
	b.produce(t, topic, 12, time.Now().Add(-time.Minute))
	b.consume(t, p+"nextgen", topic, 4, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))

	r := b.checker(t, Options{Groups: []string{p + "*"}}).Check(context.Background(), []string{topic})
	g := group(t, r, p+"nextgen")
	if len(r.Errors) > 0 || g.Error != "" || g.Lag != 8 || g.OldestAge == nil || g.State == "" {
		t.Fatalf("errors %v; nextgen %+v: want lag 8 with an age", r.Errors, g)
	}
}

// A group at two offsets of one partition: every group gets its own record read.
func TestAgesOfGroupsAtDifferentOffsets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.kafka.Prefix
	b.kafka.CreateTopics(t, 1, "outbox.order")
	topic := p + "outbox.order"
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	recent := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	b.produce(t, topic, 5, old)
	b.produce(t, topic, 5, recent)
	b.consume(t, p+"slow", topic, 2)
	b.consume(t, p+"fast", topic, 7)

	r := b.checker(t, Options{Groups: []string{p + "*"}}).Check(context.Background(), []string{topic})
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	for _, tc := range []struct {
		group string
		lag   int64
		at    time.Time
	}{{p + "slow", 8, old}, {p + "fast", 3, recent}} {
		g := group(t, r, tc.group)
		pl := g.Topics[0].Partitions[0]
		if g.Lag != tc.lag || pl.OldestAt == nil || !pl.OldestAt.Equal(tc.at) {
			t.Errorf("%s: lag %d, oldest record at %v; want %d at %v", tc.group, g.Lag, pl.OldestAt, tc.lag, tc.at)
		}
	}
}

// A broker that refuses to describe a group (an ACL) fails the whole request for
// every group in it; the refused group is reported and the others measured.
func TestDescribeRefusedIsReported(t *testing.T) {
	t.Parallel()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	b := &testBundle{kafka: &testenv.Kafka{Brokers: fake.ListenAddrs(), Fake: fake}, dial: func(opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(fake.ListenAddrs()...)}, opts...)...)
	}}
	b.kafka.CreateTopics(t, 1, "outbox.order")
	b.produce(t, "outbox.order", 4, time.Now())
	b.consume(t, "secret", "outbox.order", 1)
	b.consume(t, "open", "outbox.order", 2)

	fake.ControlKey(int16(kmsg.DescribeGroups), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		req := kr.(*kmsg.DescribeGroupsRequest)
		if !slices.Contains(req.Groups, "secret") {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group = g
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	r := b.checker(t, Options{}).Check(context.Background(), []string{"outbox.order"})
	secret, open := group(t, r, "secret"), group(t, r, "open")
	if !strings.Contains(secret.Error, "GROUP_AUTHORIZATION_FAILED") {
		t.Errorf("secret: error %q, want the refusal", secret.Error)
	}
	if open.Error != "" || open.Lag != 2 {
		t.Errorf("open: error %q, lag %d; want measured with lag 2", open.Error, open.Lag)
	}
	if lag, name := r.MaxLag(); lag != 2 || name != "open" {
		t.Errorf("MaxLag = %d (%s): a refused group has no lag to count", lag, name)
	}
}

// Reading the oldest records refused (no Read ACL on the topic): the lag is
// measured, the ages are missing and the report says why at once, not after
// the timeout.
func TestAgeReadRefusedIsReported(t *testing.T) {
	t.Parallel()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "outbox.order"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	b := &testBundle{dial: func(opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(fake.ListenAddrs()...)}, opts...)...)
	}}
	b.produce(t, "outbox.order", 6, time.Now())
	b.consume(t, "billing", "outbox.order", 2)
	fake.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	c := b.checker(t, Options{AgeTimeout: 5 * time.Second}) // without the refusal seen: "context deadline exceeded"
	r := c.Check(context.Background(), []string{"outbox.order"})
	g := group(t, r, "billing")
	if g.Lag != 4 || g.OldestAge != nil || len(r.Errors) != 0 {
		t.Errorf("billing: lag %d, age %v, errors %v; want lag 4, no age, no check error", g.Lag, g.OldestAge, r.Errors)
	}
	if !strings.Contains(r.AgeError, "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("age error %q, want the refusal", r.AgeError)
	}
}

// Brokers that do not answer: the report says so; Check returns.
func TestUnreachableBrokersAreReported(t *testing.T) {
	t.Parallel()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	addrs := fake.ListenAddrs()
	fake.Close()
	c, err := New(func(opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := c.Check(ctx, []string{"outbox.order"})
	if len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0], "listing groups: ") || len(r.Groups) != 0 {
		t.Fatalf("report %+v, want one listing error and no groups", r)
	}
}

func TestGroupPatternsAreChecked(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, Options{Exclude: []string{"["}}); err == nil || !strings.Contains(err.Error(), `"["`) {
		t.Fatalf("New with a bad pattern: %v", err)
	}
}

func TestOutboxTopicsFromRecentEvents(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	insert := func(table, topic string, published bool) {
		t.Helper()
		cols, vals := "event_id, aggregate_type, aggregate_id, event_type, payload, kafka_topic", "$1, 'order', '1', 'created', '{}', $2"
		if published {
			cols, vals = cols+", published_at", vals+", now()"
		}
		if table == "outbox_event_archive" {
			cols, vals = cols+", archived_at, created_at, available_at, attempts, seq", vals+", now(), now(), now(), 1, 1"
		}
		if _, err := pool.Exec(ctx, "INSERT INTO "+table+" ("+cols+") VALUES ("+vals+")", uuid.New(), topic); err != nil {
			t.Fatal(err)
		}
	}
	insert("outbox_event", "outbox.order", true)
	insert("outbox_event", "outbox.order", true)
	insert("outbox_event", "never.published", false) // a topic on a row not yet published is not one yet
	insert("outbox_event_archive", "outbox.archived", true)
	got, err := OutboxTopics(pool, "public", []string{"named.topic", "outbox.order"})(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"named.topic", "outbox.archived", "outbox.order"}; !slices.Equal(got, want) {
		t.Fatalf("topics %v, want %v", got, want)
	}
}

func TestCacheThrottlesAndCollectorExports(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.kafka.Prefix
	b.kafka.CreateTopics(t, 1, "outbox.order")
	topic := p + "outbox.order"
	b.produce(t, topic, 6, time.Now().Add(-time.Minute))
	b.consume(t, p+"billing", topic, 2)

	// The first check is held at its start: a scrape meanwhile must not wait for it.
	var calls atomic.Int32
	release := make(chan struct{})
	cache := NewCache(b.checker(t, Options{Groups: []string{p + "*"}}), func(context.Context) ([]string, error) {
		calls.Add(1)
		<-release
		return []string{topic}, nil
	}, time.Hour)
	t.Cleanup(cache.Close)
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(cache))
	for range 3 {
		if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
			t.Fatalf("scrape during the first check: %d series (%v), want none yet", n, err)
		}
	}
	close(release)
	testenv.WaitFor(t, 30*time.Second, "the first check's gauges", func() bool {
		n, _ := testutil.GatherAndCount(reg, "outboxtop_consumer_lag_up")
		return n == 1
	})
	for range 3 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("scrapes checked %d times, want 1 (throttled)", n)
	}
	want := fmt.Sprintf(`
# HELP outboxtop_consumer_lag_records Records of the outbox's topic not yet consumed by the group (end offset - committed offset, summed over partitions).
# TYPE outboxtop_consumer_lag_records gauge
outboxtop_consumer_lag_records{group="%sbilling",topic="%s"} 4
# HELP outboxtop_consumer_lag_up 1 when the last consumer lag check met no error.
# TYPE outboxtop_consumer_lag_up gauge
outboxtop_consumer_lag_up 1
`, p, topic)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "outboxtop_consumer_lag_records", "outboxtop_consumer_lag_up"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "outboxtop_consumer_oldest_unconsumed_age_seconds"); err != nil || n != 1 {
		t.Errorf("age gauges: %d (%v), want 1", n, err)
	}
}
