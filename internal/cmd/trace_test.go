package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/inbox"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

const (
	traceOrder   = "c1000000-0000-0000-0000-000000000001"
	traceOrder2  = "c1000000-0000-0000-0000-000000000002"
	traceInvoice = "c2000000-0000-0000-0000-000000000001"
)

// tracedOutbox has three events the relay (outboxtop --headless --drain) published
// to the test's Kafka and the consumer "billing" applied through its inbox.
func tracedOutbox(t *testing.T) (env map[string]string, pool *pgxpool.Pool, k *testenv.Kafka) {
	t.Helper()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	k = testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.order")
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		VALUES ($1, 'order', '4711', 'OrderPlaced', '{"total": 12}'), ($2, 'order', '4711', 'OrderPaid', '{}'),
		       ($3, 'order', '4712', 'OrderPlaced', '{}')`, traceOrder, traceOrder2, traceInvoice); err != nil {
		t.Fatal(err)
	}
	env = map[string]string{"DATABASE_URL": dsn, "KAFKA_BROKERS": strings.Join(k.Brokers, ",")}
	if r := run(t, env, "--headless", "--drain", "--topic-template", k.Prefix+"outbox.{aggregate_type}", "--log-level", "warn"); r.code != ExitOK {
		t.Fatalf("headless drain: %+v", r)
	}
	for _, rec := range k.Consume(t, 3, 30*time.Second, k.Prefix+"outbox.order") {
		if _, err := inbox.Handle(ctx, pool, "billing", rec, func(context.Context, pgx.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return env, pool, k
}

func TestTraceFollowsOneEvent(t *testing.T) {
	t.Parallel()
	env, pool, k := tracedOutbox(t)
	r := run(t, env, "trace", "c1000000-0000-0000-0000-000000000001")
	if r.code != ExitOK {
		t.Fatalf("trace: %+v", r)
	}
	for _, want := range []string{"EVENT " + traceOrder + "  OrderPlaced  order/4711", "state           published", k.Prefix + "outbox.order [partition 0] @ offset",
		"record          found · key 4711", "event_id=" + traceOrder, "CONSUMERS       1 applied it", "billing", "HISTORY         0 tries that did not end published, 0 operator actions",
		// the relay ran in this process: the row names it
		"published by    " + relay.DefaultHolder() + "\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("trace lacks %q:\n%s", want, r.out)
		}
	}

	// A leased event names the relay holding it.
	const leased = "c4000000-0000-0000-0000-000000000001"
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
		attempts, lease_token, lease_until, lease_holder) VALUES ($1, 'order', '4713', 'OrderPlaced', '{}', 1, gen_random_uuid(),
		now() + interval '1 minute', 'relay-z.example:9')`, leased); err != nil {
		t.Fatal(err)
	}
	if r := run(t, env, "trace", leased); r.code != ExitOK || !strings.Contains(r.out, "held by         relay-z.example:9\n") {
		t.Fatalf("trace of a leased event does not name its holder: %+v", r)
	}
	if r := run(t, env, "trace", leased, "--json"); r.code != ExitOK || !strings.Contains(r.out, `"lease_holder": "relay-z.example:9"`) {
		t.Fatalf("trace --json of a leased event does not name its holder: %+v", r)
	}

	// A prefix two events share: exit 2, both named.
	r = run(t, env, "trace", "c1")
	if r.code != ExitUsage || !strings.Contains(r.err, traceOrder) || !strings.Contains(r.err, traceOrder2) || strings.Count(r.err, "\n") != 1 {
		t.Fatalf("ambiguous prefix: %+v", r)
	}
	if r = run(t, env, "trace"); r.code != ExitUsage {
		t.Fatalf("no id: %+v", r)
	}
	if r = run(t, env, "trace", "c3"); r.code != ExitFailure || !strings.Contains(r.err, "no event id starts with") {
		t.Fatalf("unknown id: %+v", r)
	}

	// The record deleted from the topic (DeleteRecords up to the next one): missing,
	// exit 1, in text and in JSON.
	var offset int64
	if err := pool.QueryRow(context.Background(), `SELECT kafka_offset FROM outbox_event WHERE event_id = $1`, traceOrder).Scan(&offset); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: k.Prefix + "outbox.order", Partition: 0, At: offset + 1})
	if resp, err := kadm.NewClient(cl).DeleteRecords(context.Background(), offs); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}
	r = run(t, env, "trace", "c1000000-0000-0000-0000-000000000001")
	if r.code != ExitFailure || !strings.Contains(r.out, "MISSING: deleted") || !strings.Contains(r.err, "record MISSING at") {
		t.Fatalf("deleted record: %+v", r)
	}
	r = run(t, env, "trace", traceOrder, "--json")
	var got struct {
		EventID string `json:"event_id"`
		Kafka   struct {
			Found   bool   `json:"found"`
			Missing string `json:"missing"`
		} `json:"kafka"`
		Consumed []struct {
			Consumer string `json:"consumer"`
		} `json:"consumed"`
	}
	if r.code != ExitFailure || json.Unmarshal([]byte(r.out), &got) != nil || got.EventID != traceOrder || got.Kafka.Found ||
		got.Kafka.Missing == "" || len(got.Consumed) != 1 {
		t.Fatalf("deleted record, JSON: %+v", r)
	}
	// Without brokers the database side still answers; Kafka is not checked.
	delete(env, "KAFKA_BROKERS")
	if r = run(t, env, "trace", traceOrder); r.code != ExitOK || !strings.Contains(r.out, "not checked") {
		t.Fatalf("without brokers: %+v", r)
	}
}

// A published row's last_error is an earlier attempt's (the relay clears it when
// it marks the event; a row published by an older relay kept it): trace shows
// it as history, not as the event's trouble.
func TestTraceShowsAPublishedRowsErrorAsHistory(t *testing.T) {
	t.Parallel()
	now := time.Now()
	published := now.Add(-time.Minute)
	var tr inspect.Trace
	tr.EventID, tr.State, tr.PublishedAt, tr.LastError = traceOrder, "published", &published, "kafka: NOT_LEADER_FOR_PARTITION"
	var b strings.Builder
	printTrace(&b, tr, nil, false, now)
	if !strings.Contains(b.String(), "earlier error   kafka: NOT_LEADER_FOR_PARTITION (before it was published)\n") || strings.Contains(b.String(), "last_error") {
		t.Fatalf("published row's error not shown as history:\n%s", b.String())
	}
	tr.PublishedAt, tr.State = nil, "scheduled"
	b.Reset()
	printTrace(&b, tr, nil, false, now)
	if !strings.Contains(b.String(), "last_error      kafka: NOT_LEADER_FOR_PARTITION\n") {
		t.Fatalf("a pending row's error not shown as its last_error:\n%s", b.String())
	}
}
