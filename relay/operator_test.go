package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// What an operator's action on a leased event does, whatever the relay that
// holds the lease does next (the relay's outcome statements run after the action
// committed):
//
//   - park: sticks. The event stays failed with the operator's reason; mark (Kafka
//     had acknowledged it: a retry publishes it again), settle and release only
//     end the lease; renew leaves it alone.
//   - skip (of an event parked while leased): sticks; the row is in the archive
//     and the relay's statements find nothing (a lost fence).
//   - retry (of an event parked while leased): the event is ready at once, with no
//     lease; the old batch's outcome finds its token gone and changes nothing.
//   - reset-lease: the lease ends but the token stays, so the holder's outcome
//     still applies (a mark saves a duplicate) until another claim takes the event;
//     after that the old holder's outcome changes nothing.
func TestOperatorActionsOnLeasedEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.relay(t, b.config())
	ins := b.inspector(t)
	act := func(a inspect.Action, id string) {
		t.Helper()
		res, err := ins.Do(ctx, inspect.Request{Action: a, IDs: []string{id}, Reason: "test", Actor: "op"})
		if err != nil || res.Rows != 1 {
			t.Fatalf("%s: %+v, %v", a, res, err)
		}
	}
	msg := "kafka: boom"
	outcomes := map[string]func(token uuid.UUID, e *event) int{
		"mark": func(token uuid.UUID, e *event) int {
			mr, err := r.mark(ctx, token, []published{{e.id, "t", 0, 1}})
			if err != nil {
				t.Fatal(err)
			}
			return mr.marked
		},
		"schedule": func(token uuid.UUID, e *event) int {
			return r.mustSettle(t, token, settlement{id: e.id, delay: time.Hour, err: &msg})
		},
		"fail": func(token uuid.UUID, e *event) int {
			return r.mustSettle(t, token, settlement{id: e.id, dead: true, err: &msg})
		},
		"release": func(token uuid.UUID, e *event) int {
			return r.mustSettle(t, token, settlement{id: e.id, refund: true})
		},
		"shutdown-release": func(token uuid.UUID, e *event) int {
			tag, err := b.pool.Exec(ctx, r.sql.release, token)
			if err != nil {
				t.Fatal(err)
			}
			return int(tag.RowsAffected())
		},
		"renew": func(token uuid.UUID, e *event) int {
			n, err := r.renew(ctx, token)
			if err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
	// want: the row's state after action then outcome, as state(); "" for the
	// relay's own outcome (what it does without an action).
	own := map[string]string{
		"mark": "published", "schedule": "scheduled kafka: boom", "fail": "failed kafka: boom",
		"release": "ready", "shutdown-release": "ready", "renew": "leased",
	}
	actions := []struct {
		name   string
		do     func(id string) (otherToken bool)
		result func(outcome string) string
	}{
		{"park", func(id string) bool { act(inspect.Park, id); return false },
			func(o string) string {
				if o == "renew" {
					return "failed parked by op: test (leased)"
				}
				return "failed parked by op: test"
			}},
		{"park+skip", func(id string) bool { act(inspect.Park, id); act(inspect.Skip, id); return false },
			func(string) string { return "archived" }},
		{"park+retry", func(id string) bool { act(inspect.Park, id); act(inspect.Retry, id); return false },
			func(string) string { return "ready parked by op: test" }},
		{"reset-lease", func(id string) bool { act(inspect.ResetLease, id); return false },
			func(o string) string {
				if o == "renew" {
					return "leased" // the holder still holds the token: renewing is its right
				}
				return own[o]
			}},
		{"reset-lease+claim", func(id string) bool {
			act(inspect.ResetLease, id)
			if evs, err := r.claim(ctx, uuid.New(), 1); err != nil || len(evs) != 1 {
				t.Fatalf("reclaim: %d, %v", len(evs), err)
			}
			return true
		}, func(string) string { return "leased" }},
	}
	for _, a := range actions {
		for o, run := range outcomes {
			agg := fmt.Sprintf("op-%s-%s", a.name, o)
			var id string
			if err := b.pool.QueryRow(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
				VALUES (gen_random_uuid(), 'order', $1, 'X', '{}') RETURNING event_id::text`, agg).Scan(&id); err != nil {
				t.Fatal(err)
			}
			token := uuid.New()
			evs, err := r.claim(ctx, token, 1)
			if err != nil || len(evs) != 1 || evs[0].id.String() != id {
				t.Fatalf("claim: %v %v", evs, err)
			}
			a.do(id)
			run(token, evs[0])
			want := a.result(o)
			if got := b.rowState(t, id); got != want {
				t.Errorf("%s then relay's %s: %q, want %q", a.name, o, got, want)
			}
			// Out of the way of the next case's claim.
			if _, err := b.pool.Exec(ctx, `DELETE FROM outbox_event WHERE event_id = $1`, id); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (r *Relay) mustSettle(t *testing.T, token uuid.UUID, s settlement) int {
	t.Helper()
	n, err := r.settle(context.Background(), token, []settlement{s})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rowState describes an event by its state and last_error, "(leased)" when a
// failed row still has a live lease, or "archived".
func (b *bundle) rowState(t *testing.T, id string) string {
	t.Helper()
	var state, lastError string
	var live bool
	err := b.pool.QueryRow(context.Background(), `
		SELECT CASE WHEN published_at IS NOT NULL THEN 'published'
		            WHEN failed_at IS NOT NULL THEN 'failed'
		            WHEN lease_until > now() THEN 'leased'
		            WHEN available_at > now() THEN 'scheduled'
		            ELSE 'ready' END,
		       coalesce(last_error, ''), coalesce(lease_until > now(), false)
		FROM outbox_event WHERE event_id = $1`, id).Scan(&state, &lastError, &live)
	if err != nil {
		var n int
		if b.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_event_archive WHERE event_id = $1`, id).Scan(&n) == nil && n == 1 {
			return "archived"
		}
		t.Fatal(err)
	}
	s := strings.TrimSpace(state + " " + lastError)
	if state == "failed" && live {
		s += " (leased)"
	}
	return s
}
