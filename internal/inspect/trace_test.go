package inspect_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/inbox"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

// published is a database whose events the real relay published to the test's
// Kafka, and one consumer applied through its inbox.
type published struct {
	*bundle
	kafka  *testenv.Kafka
	topic  string
	client inspect.KafkaClient
}

func publishAll(t *testing.T, rows ...row) *published {
	t.Helper()
	b := setup(t, rows...)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.order")
	p := &published{bundle: b, kafka: k, topic: k.Prefix + "outbox.order",
		client: func(opts ...kgo.Opt) (*kgo.Client, error) {
			return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Brokers...)}, opts...)...)
		}}
	cl, err := relay.NewKafkaClient(relay.KafkaConfig{Brokers: k.Brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cfg := relay.DefaultConfig
	cfg.Drain, cfg.TopicTemplate, cfg.Logger = true, k.Prefix+"outbox.{aggregate_type}", slog.New(slog.DiscardHandler)
	r, err := relay.New(b.pool, cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("relay: %v", err)
	}
	return p
}

// consume applies every record of the topic once as consumer name.
func (p *published) consume(t *testing.T, name string, want int) {
	t.Helper()
	for _, rec := range p.kafka.Consume(t, want, 30*time.Second, p.topic) {
		if _, err := inbox.Handle(p.ctx, p.pool, name, rec, func(context.Context, pgx.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTraceFindsThePublishedRecordAndItsConsumers(t *testing.T) {
	t.Parallel()
	const id2 = "a0000000-0000-0000-0000-0000000000a2"
	p := publishAll(t,
		row{id: idReady1, aggID: "4711", created: -time.Minute, available: -time.Minute},
		row{id: id2, aggID: "4711", created: -time.Minute, available: -time.Minute})
	p.consume(t, "billing", 2)
	p.consume(t, "shipping", 2)
	if _, err := p.in.Do(p.ctx, inspect.Request{Action: inspect.Replay, IDs: []string{idReady1}, Actor: "alice", Reason: "refill"}); err != nil {
		t.Fatal(err)
	}

	tr, err := p.in.Trace(p.ctx, "a0000000-0000-0000-0000-000000000") // a prefix: both match
	var amb *inspect.AmbiguousError
	if !errors.As(err, &amb) || !errors.Is(err, inspect.ErrAmbiguous) || len(amb.Candidates) != 2 ||
		!strings.Contains(err.Error(), idReady1) || !strings.Contains(err.Error(), id2) {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	tr, err = p.in.Trace(p.ctx, "A0000000-0000-0000-0000-0000000000A2") // upper case, full
	if err != nil {
		t.Fatal(err)
	}
	if tr.EventID != id2 || tr.KafkaOffset == nil || tr.KafkaTopic != p.topic {
		t.Fatalf("trace of %s: %+v", id2, tr.Event)
	}
	if len(tr.Consumed) != 2 || tr.Consumed[0].Consumer == tr.Consumed[1].Consumer {
		t.Fatalf("consumers of %s: %+v, want billing and shipping", id2, tr.Consumed)
	}
	rc := inspect.CheckRecord(p.ctx, p.client, tr.Event, 10*time.Second)
	if !rc.OK() || rc.Key != "4711" || rc.Offset != *tr.KafkaOffset || rc.ValueBytes == 0 {
		t.Fatalf("record of %s: %+v", id2, rc)
	}
	var hasID bool
	for _, h := range rc.Headers {
		hasID = hasID || (h.Key == "event_id" && h.Value == id2)
	}
	if !hasID {
		t.Errorf("headers lack event_id %s: %+v", id2, rc.Headers)
	}

	// The replayed one: its audit row names alice.
	tr, err = p.in.Trace(p.ctx, idReady1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Audit) != 1 || tr.Audit[0].Actor != "alice" || tr.Audit[0].Action != "replay" || tr.Audit[0].Reason != "refill" {
		t.Fatalf("audit of %s: %+v", idReady1, tr.Audit)
	}
	if _, err := p.in.Trace(p.ctx, "ffff"); !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("unknown prefix: %v", err)
	}
	// The end of an id, as the console shows UUIDv7 ids.
	if tr, err := p.in.Trace(p.ctx, "0000000000a2"); err != nil || tr.EventID != id2 {
		t.Fatalf("id by its end: %v %s", err, tr.EventID)
	}
}

func TestTraceReportsADeletedRecordMissing(t *testing.T) {
	t.Parallel()
	p := publishAll(t,
		row{id: idReady1, aggID: "4711", created: -time.Minute, available: -time.Minute},
		row{id: idReady2, aggID: "4712", created: -time.Minute, available: -time.Minute})
	tr, err := p.in.Trace(p.ctx, idReady1)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := p.client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: p.topic, Partition: *tr.KafkaPartition, At: *tr.KafkaOffset + 1})
	resp, err := kadm.NewClient(cl).DeleteRecords(p.ctx, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	rc := inspect.CheckRecord(p.ctx, p.client, tr.Event, 10*time.Second)
	if rc.Found || rc.OK() || !strings.Contains(rc.Missing, "deleted") || rc.LogStart != *tr.KafkaOffset+1 {
		t.Fatalf("deleted record: %+v", rc)
	}
	// The other event, still there, is found.
	tr, err = p.in.Trace(p.ctx, idReady2)
	if err != nil {
		t.Fatal(err)
	}
	if rc := inspect.CheckRecord(p.ctx, p.client, tr.Event, 10*time.Second); !rc.OK() {
		t.Fatalf("the record after the deleted one: %+v", rc)
	}
}

func TestTraceReportsARowPointingAtAnotherRecord(t *testing.T) {
	t.Parallel()
	p := publishAll(t,
		row{id: idReady1, aggID: "4711", created: -time.Minute, available: -time.Minute},
		row{id: idReady2, aggID: "4712", created: -time.Minute, available: -time.Minute})
	if _, err := p.pool.Exec(p.ctx, `UPDATE outbox_event SET kafka_offset = (SELECT kafka_offset FROM outbox_event WHERE event_id = $2)
		WHERE event_id = $1`, idReady1, idReady2); err != nil {
		t.Fatal(err)
	}
	tr, err := p.in.Trace(p.ctx, idReady1)
	if err != nil {
		t.Fatal(err)
	}
	rc := inspect.CheckRecord(p.ctx, p.client, tr.Event, 10*time.Second)
	if !rc.Found || rc.OK() || len(rc.Mismatches) != 2 || !strings.Contains(strings.Join(rc.Mismatches, "; "), idReady2) {
		t.Fatalf("mismatched record: %+v", rc)
	}
	// Past the end of the log.
	if _, err := p.pool.Exec(p.ctx, `UPDATE outbox_event SET kafka_offset = 99 WHERE event_id = $1`, idReady1); err != nil {
		t.Fatal(err)
	}
	tr, _ = p.in.Trace(p.ctx, idReady1)
	if rc := inspect.CheckRecord(p.ctx, p.client, tr.Event, 10*time.Second); rc.Found || !strings.Contains(rc.Missing, "past the partition's end") {
		t.Fatalf("offset past the end: %+v", rc)
	}
	// Unpublished: nothing to check.
	b := setup(t, row{id: idSched, aggID: "x", available: time.Hour})
	tr, _ = b.in.Trace(b.ctx, idSched)
	if rc := inspect.CheckRecord(b.ctx, p.client, tr.Event, time.Second); rc != nil {
		t.Fatalf("unpublished event checked: %+v", rc)
	}
}
