package console

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// TestDetailReadsTheRecordBackOnce: the detail of a published event shows its
// record read back from Kafka (and one deleted from the topic as missing), read
// when the detail opens and not again on refreshes.
func TestDetailReadsTheRecordBackOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.Order")
	topic := k.Prefix + "outbox.Order"
	var clients atomic.Int32
	b := setup(t, Options{Kafka: func(opts ...kgo.Opt) (*kgo.Client, error) {
		clients.Add(1)
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Brokers...)}, opts...)...)
	}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// ord-1001's record, then ord-1002's; the rows point at them.
	for _, id := range []string{seed.ID('e', 1), seed.ID('e', 2)} {
		var agg string
		if err := b.pool.QueryRow(ctx, `SELECT aggregate_id FROM outbox_event WHERE event_id = $1`, id).Scan(&agg); err != nil {
			t.Fatal(err)
		}
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(agg), Value: []byte(`{}`),
			Headers: []kgo.RecordHeader{{Key: "event_id", Value: []byte(id)}}})
		r, err := res.First()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.pool.Exec(ctx, `UPDATE outbox_event SET kafka_topic = $2, kafka_partition = $3, kafka_offset = $4 WHERE event_id = $1`,
			id, topic, r.Partition, r.Offset); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1}) // ord-1001's record goes
	if resp, err := kadm.NewClient(cl).DeleteRecords(ctx, offs); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}

	open := func(id string) string {
		t.Helper()
		b.keys("esc", "5")
		for i, r := range b.m.tables[viewPublished].rows {
			if r.id == id {
				b.m.tables[viewPublished].cursor = i
			}
		}
		b.keys("enter")
		b.m.detail.vp.GotoBottom()
		return b.text()
	}
	s := open(seed.ID('e', 2))
	for _, want := range []string{"KAFKA RECORD", "found at " + topic + " [0] @1 · key ord-1002 · value 2 bytes", "the value is not the payload's 32 bytes as JSON text", "event_id"} {
		if !strings.Contains(s, want) {
			t.Errorf("detail lacks %q:\n%s", want, s)
		}
	}
	for range 3 {
		b.run(b.m.startLoad())
	}
	if n := clients.Load(); n != 1 {
		t.Fatalf("%d Kafka reads for one detail over three refreshes, want 1", n)
	}
	s = open(seed.ID('e', 1))
	if !strings.Contains(s, "MISSING at "+topic+" [0] @0: deleted") {
		t.Errorf("the deleted record is not reported missing:\n%s", s)
	}
}
