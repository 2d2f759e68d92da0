package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
	if r.code != ExitWarning || !strings.HasPrefix(r.out, "OUTBOXTOP WARNING - "+want) || !strings.Contains(r.out, "\n       2  outbox.order\n") {
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
