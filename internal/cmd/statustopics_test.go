package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

// Events waiting for a topic that does not exist are scheduled again between
// attempts and never failed, so no threshold sees them (nothing is publishable:
// the oldest publishable age stays 0). status reads them from their last_error
// and says WARNING naming the topic; failed and published rows with that error
// do not count.
func TestStatusWarnsOfEventsWaitingForAMissingTopic(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	ctx := context.Background()
	msg := relay.MissingTopicError + "outbox.order (create it …): UNKNOWN_TOPIC_OR_PARTITION"
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, last_error, failed_at, published_at)
		SELECT gen_random_uuid(), 'order', 'm' || g, 'OrderPlaced', '{}', now() + interval '20 seconds', $1,
		       CASE WHEN g = 3 THEN now() END, CASE WHEN g = 4 THEN now() END
		FROM generate_series(1, 4) g`, msg); err != nil {
		t.Fatal(err)
	}
	// The fixture's failed event and the scheduled heads block their aggregates:
	// those checks are off here, the missing topic alone makes the WARNING.
	args := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1"}
	r := run(t, env, args...)
	want := `topic "outbox.order" does not exist: 2 events wait for it`
	if r.code != ExitWarning || !strings.HasPrefix(r.out, "OUTBOXTOP WARNING - "+want) || !strings.Contains(r.out, "\n       2  outbox.order (their last_error says so)\n") {
		t.Fatalf("status: %+v; want WARNING: %s", r, want)
	}
	r = run(t, env, append(args, "--json")...)
	var got struct {
		MissingTopics []relay.TopicWait `json:"missing_topics"`
		Check         struct {
			Level   string   `json:"level"`
			Crossed []string `json:"crossed"`
		} `json:"check"`
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || len(got.MissingTopics) != 1 || got.MissingTopics[0].Topic != "outbox.order" ||
		got.MissingTopics[0].Events != 2 || got.Check.Level != "WARNING" || len(got.Check.Crossed) != 1 || got.Check.Crossed[0] != want {
		t.Fatalf("status --json: %v %+v\n%s", err, got, r.out)
	}

	// The topic created and the events published: OK again.
	if _, err := pool.Exec(ctx, `UPDATE outbox_event SET published_at = now(), last_error = NULL WHERE starts_with(last_error, $1)`, relay.MissingTopicError); err != nil {
		t.Fatal(err)
	}
	if r := run(t, env, args...); r.code != ExitOK || strings.Contains(r.out, "does not exist") {
		t.Fatalf("status once the topic exists: %+v", r)
	}
}

// missingTopicsJSON is the part of `status --json` these tests read.
type missingTopicsJSON struct {
	MissingTopics      []relay.TopicWait `json:"missing_topics"`
	MissingTopicsError string            `json:"missing_topics_error"`
	Check              struct {
		Level   string   `json:"level"`
		Crossed []string `json:"crossed"`
	} `json:"check"`
}

// The incident: a storm of older retries (12,000 scheduled events, before
// them in seq order, with other errors) and 2,000 events of a new service to a
// topic that does not exist, which a running relay tries again within its
// capped backoff (here 20 to 44 s from now: scheduled for as long as the
// test runs, under -race too). status read only the oldest 10,000 pending events in seq
// order and said "missing_topics": [] and OK; the soonest scheduled ones are
// read too now, and it says WARNING naming the topic, in the text, the JSON,
// the monitoring line and the exit code.
func TestStatusFindsAMissingTopicBehindAStormOfRetries(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, attempts, last_error)
		SELECT gen_random_uuid(), 'account', 'a' || g, 'AccountOpened', '{}', now() + interval '10 minutes', 3, 'kafka: broker not available'
		FROM generate_series(1, 12000) g`); err != nil {
		t.Fatal(err)
	}
	msg := relay.MissingTopicError + "orders.v2 (create it …): UNKNOWN_TOPIC_OR_PARTITION"
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, topic, available_at, last_error)
		SELECT gen_random_uuid(), 'order', 'java-' || g, 'OrderPlaced', '{}', 'orders.v2', now() + (20 + g % 25) * interval '1 second', $1
		FROM generate_series(1, 2000) g`, msg); err != nil {
		t.Fatal(err)
	}
	args := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1"}
	want := `topic "orders.v2" does not exist: 2000 events wait for it`
	r := run(t, env, args...)
	if r.code != ExitWarning || !strings.HasPrefix(r.out, "OUTBOXTOP WARNING - "+want) ||
		!strings.Contains(r.out, "\n    2000  orders.v2 (their last_error says so)\n") {
		t.Fatalf("status: exit %d, want WARNING: %s\n%s", r.code, want, r.out)
	}
	r = run(t, env, append(args, "--json")...)
	var got missingTopicsJSON
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || r.code != ExitWarning || len(got.MissingTopics) != 1 ||
		got.MissingTopics[0].Topic != "orders.v2" || got.MissingTopics[0].Events != 2000 || got.MissingTopics[0].FoundBy != relay.FoundByLastError ||
		got.Check.Level != "WARNING" || len(got.Check.Crossed) != 1 || got.Check.Crossed[0] != want {
		t.Fatalf("status --json: exit %d, %v %+v\n%s", r.code, err, got, r.out)
	}
}

// With brokers, status asks them whether the topics of the pending events
// exist: events no relay has tried yet (no last_error) to a topic that does
// not exist — by its row's topic or by the relay's template — make the
// WARNING; a topic that exists does not, and asking creates none, though the
// brokers create topics on request.
func TestStatusAsksTheBrokersForThePendingEventsTopics(t *testing.T) {
	t.Parallel()
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.order")
	p := k.Prefix
	env, pool := outboxDB(t) // order events: outbox.order exists
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, topic)
		SELECT gen_random_uuid(), CASE WHEN g <= 30 THEN 'payment' ELSE 'order' END, 'p' || g, 'Paid', '{}',
		       CASE WHEN g > 30 THEN $1 END
		FROM generate_series(1, 50) g`, p+"orders.v2"); err != nil {
		t.Fatal(err)
	}
	env["KAFKA_BROKERS"] = strings.Join(k.Brokers, ",")
	args := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1", "--warn-oldest", "0", "--crit-oldest", "0",
		"--warn-lag-age", "0", "--crit-lag-age", "0", "--topic-template", p + "outbox.{aggregate_type}"}
	r := run(t, env, append(args, "--json")...)
	var got missingTopicsJSON
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.out, r.err)
	}
	byTopic := map[string]relay.TopicWait{}
	for _, w := range got.MissingTopics {
		byTopic[w.Topic] = w
	}
	if r.code != ExitWarning || len(got.MissingTopics) != 2 || byTopic[p+"outbox.payment"].Events != 30 || byTopic[p+"orders.v2"].Events != 20 ||
		byTopic[p+"orders.v2"].FoundBy != relay.FoundByBrokers || got.MissingTopicsError != "" || len(got.Check.Crossed) != 2 {
		t.Fatalf("status --json with brokers: exit %d, %+v\n%s", r.code, got, r.out)
	}
	r = run(t, env, args...)
	if r.code != ExitWarning || !strings.Contains(firstLine(r.out), `topic "`+p+`outbox.payment" does not exist: 30 events wait for it`) ||
		!strings.Contains(r.out, "      20  "+p+"orders.v2 (the brokers say so)\n") {
		t.Fatalf("status with brokers: exit %d\n%s", r.code, r.out)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, p+"outbox.payment", p+"orders.v2")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range details {
		if d.Err == nil {
			t.Errorf("asking made topic %s", d.Topic)
		}
	}
	// Without brokers nothing is asked: these events never found their topic
	// missing, and their rows do not say it.
	delete(env, "KAFKA_BROKERS")
	if r := run(t, env, args...); r.code != ExitOK || strings.Contains(r.out, "does not exist") {
		t.Errorf("status without brokers: exit %d\n%s", r.code, r.out)
	}
}
