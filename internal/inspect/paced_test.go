package inspect_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// fakeClock moves only when a run sleeps: a paced run is checked by the waits
// it asks for, never by how fast it went.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// failedEvents inserts n failed events, one aggregate each.
func (b *bundle) failedEvents(t *testing.T, n int) {
	t.Helper()
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
		attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'o' || g, 'OrderPlaced', '{}', 7, now(), 'MESSAGE_TOO_LARGE'
		FROM generate_series(1, $1) g`, n); err != nil {
		t.Fatal(err)
	}
}

type runAudit struct {
	rows   int
	ids    []string
	cursor int64
	n      int64
}

// runAudits are the audit rows of run id, oldest first.
func (b *bundle) runAudits(t *testing.T, id string) []runAudit {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT rows, coalesce(event_ids::text[], '{}'), (filter->'run'->>'cursor')::bigint,
		(filter->'run'->>'n')::bigint FROM outbox_audit WHERE filter->'run'->>'id' = $1 ORDER BY audit_id`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []runAudit
	for rows.Next() {
		var a runAudit
		if err := rows.Scan(&a.rows, &a.ids, &a.cursor, &a.n); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// TestPacedRetryResumesWithoutRepeating: a paced retry over thousands of
// failed events stops at its maximum, is cancelled mid-run, and resumed twice;
// every event is retried exactly once over the three sessions, including the
// ones that failed again after the run had retried them.
func TestPacedRetryResumesWithoutRepeating(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const total = 3000
	b.failedEvents(t, total)
	clock := newFakeClock()
	req := inspect.PacedRequest{
		Request: inspect.Request{Action: inspect.Retry, Filter: inspect.Filter{All: true}, From: wire.Failed,
			Actor: "alice", Reason: "topic fixed"},
		Rate: 500, Max: 1200, Chunk: 250, Clock: clock,
	}
	run, err := b.in.NewRun(b.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID()
	if run.Total() != 1200 {
		t.Fatalf("total %d, want the maximum 1200", run.Total())
	}
	// After the first chunk, its first 10 events fail again (the relay tried
	// them and the broker still refused): the run must not retry them again.
	var refailed []string
	res, err := run.Do(b.ctx, func(p inspect.Progress) {
		if p.Chunks == 1 && refailed == nil {
			a := b.runAudits(t, id)
			refailed = a[0].ids[:10]
			if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), attempts = 7 WHERE event_id = ANY($1::uuid[])`, refailed); err != nil {
				t.Error(err)
			}
		}
	})
	run.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 1200 || res.Changed != 1200 || res.Chunks != 5 || !res.AtMax || res.Complete {
		t.Fatalf("first session %+v", res)
	}
	// Paced at 500/s in chunks of 250: half a second between chunk starts.
	for k, d := range clock.sleeps {
		if want := time.Duration(0); k > 0 {
			want = 500 * time.Millisecond
			if d != want {
				t.Fatalf("sleep %d: %v, want %v (all %v)", k, d, want, clock.sleeps)
			}
		} else if d != want {
			t.Fatalf("the first chunk waited %v", d)
		}
	}
	if res.Rate != 500 {
		t.Fatalf("measured rate %v, want 500 on the fake clock", res.Rate)
	}

	// Resumed with a new maximum, then cancelled after two chunks.
	ctx, cancel := context.WithCancel(b.ctx)
	run2, err := b.in.ResumeRun(ctx, id, inspect.ResumeOptions{Actor: "bob", Max: 0, SetMax: true, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	if got := run2.Request(); got.Action != inspect.Retry || got.From != wire.Failed || !got.Filter.All || got.Reason != "topic fixed" || got.Chunk != 250 {
		t.Fatalf("resumed request %+v", got)
	}
	if run2.DoneBefore() != 1200 || run2.Total() != total {
		t.Fatalf("resumed: done before %d, total %d", run2.DoneBefore(), run2.Total())
	}
	// A second session cannot do the same run meanwhile.
	if _, err := b.in.ResumeRun(b.ctx, id, inspect.ResumeOptions{}); !errors.Is(err, inspect.ErrRunBusy) {
		t.Fatalf("a second resume while one runs: %v", err)
	}
	res2, err := run2.Do(ctx, func(p inspect.Progress) {
		if p.Chunks == 2 {
			cancel()
		}
	})
	run2.Close()
	if !errors.Is(err, context.Canceled) || res2.Done != 1700 || res2.Chunks != 2 {
		t.Fatalf("cancelled session: %+v %v", res2, err)
	}

	// And resumed to the end.
	run3, err := b.in.ResumeRun(b.ctx, id, inspect.ResumeOptions{Actor: "carol", Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	res3, err := run3.Do(b.ctx, nil)
	run3.Close()
	if err != nil || !res3.Complete || res3.Done != total || res3.Changed != total {
		t.Fatalf("last session %+v %v", res3, err)
	}

	audits := b.runAudits(t, id)
	// 5 chunks up to the maximum (the fifth of 200), 2 before the cancel, 6
	// for the last 1,300 (the sixth of 50).
	if len(audits) != 13 {
		t.Fatalf("%d audit rows, want 13", len(audits))
	}
	seen := map[string]int{}
	var rows int
	var last, covered int64
	for _, a := range audits {
		rows += a.rows
		covered += a.n
		if a.cursor <= last || a.n > 250 || len(a.ids) != a.rows {
			t.Fatalf("audit row %+v after cursor %d", a, last)
		}
		last = a.cursor
		for _, id := range a.ids {
			seen[id]++
		}
	}
	if rows != total || len(seen) != total || covered != total {
		t.Fatalf("%d rows over %d distinct events, want %d", rows, len(seen), total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s retried %d times", id, n)
		}
	}
	// The events that failed again are still failed, their attempts not reset
	// a second time; every other one was retried (attempts 0, not failed).
	var stillFailed, reset int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FILTER (WHERE failed_at IS NOT NULL AND attempts = 7),
		count(*) FILTER (WHERE failed_at IS NULL AND attempts = 0) FROM outbox_event`).Scan(&stillFailed, &reset); err != nil {
		t.Fatal(err)
	}
	if stillFailed != len(refailed) || reset != total-len(refailed) {
		t.Fatalf("%d still failed (want %d), %d retried", stillFailed, len(refailed), reset)
	}
	// Resuming a finished run does nothing.
	run4, err := b.in.ResumeRun(b.ctx, id, inspect.ResumeOptions{Actor: "dave"})
	if err != nil {
		t.Fatal(err)
	}
	res4, err := run4.Do(b.ctx, nil)
	run4.Close()
	if err != nil || !res4.Complete || res4.Chunks != 0 || res4.Done != total {
		t.Fatalf("resuming a finished run: %+v %v", res4, err)
	}
	if n := len(b.runAudits(t, id)); n != len(audits) {
		t.Fatalf("resuming a finished run wrote %d rows", n-len(audits))
	}
}

// TestPacedReplayCoversBothTablesOnce: replay's window spans the outbox and
// the archive in one seq order; a replayed event gets a new seq past the
// window, so publishing it again during the run does not bring it back in.
func TestPacedReplayCoversBothTablesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at, kafka_topic)
		SELECT gen_random_uuid(), 'order', 'p' || g, 'OrderPlaced', '{}', now() - interval '1 hour', 'outbox.order'
		FROM generate_series(1, 40) g`)
	// Half of them to the archive (they keep their seq).
	if _, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Archive, Filter: inspect.Filter{AggregateID: ""}, Actor: "t", BatchSize: 20}); err != nil {
		t.Fatal(err)
	}
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at, kafka_topic)
		SELECT gen_random_uuid(), 'order', 'q' || g, 'OrderPlaced', '{}', now() - interval '1 hour', 'outbox.order'
		FROM generate_series(1, 20) g`)
	run, err := b.in.NewRun(b.ctx, inspect.PacedRequest{
		Request: inspect.Request{Action: inspect.Replay, Filter: inspect.Filter{All: true}, Actor: "alice"},
		Rate:    0, Chunk: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.Total() != 60 {
		t.Fatalf("total %d, want 40 archived + 20 published", run.Total())
	}
	res, err := run.Do(b.ctx, func(p inspect.Progress) {
		// The relay publishes every replayed event at once.
		if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_event SET published_at = now(), kafka_topic = 'outbox.order' WHERE published_at IS NULL`); err != nil {
			t.Error(err)
		}
	})
	run.Close()
	if err != nil || !res.Complete || res.Done != 60 || res.Changed != 60 || res.Chunks != 9 {
		t.Fatalf("%+v %v", res, err)
	}
	seen := map[string]int{}
	for _, a := range b.runAudits(t, run.ID()) {
		for _, id := range a.ids {
			seen[id]++
		}
	}
	if len(seen) != 60 {
		t.Fatalf("%d events replayed, want 60", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s replayed %d times", id, n)
		}
	}
	var archived int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM outbox_event_archive`).Scan(&archived); err != nil || archived != 0 {
		t.Fatalf("%d left in the archive %v", archived, err)
	}
}

func TestPacedRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	all := inspect.Filter{All: true}
	for _, c := range []struct {
		name string
		req  inspect.PacedRequest
		want string
	}{
		{"park", inspect.PacedRequest{Request: inspect.Request{Action: inspect.Park, Filter: all, Reason: "x"}, Rate: 10}, "cannot be paced"},
		{"no target", inspect.PacedRequest{Request: inspect.Request{Action: inspect.Retry}, Rate: 10}, "name"},
		{"negative rate", inspect.PacedRequest{Request: inspect.Request{Action: inspect.Retry, Filter: all}, Rate: -1}, "rate"},
		{"big chunk", inspect.PacedRequest{Request: inspect.Request{Action: inspect.Retry, Filter: all}, Chunk: 5000}, "chunk"},
	} {
		if _, err := b.in.NewRun(b.ctx, c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := b.in.ResumeRun(b.ctx, "6930a1b2-3f9a2c", inspect.ResumeOptions{}); !errors.Is(err, inspect.ErrUnknownRun) {
		t.Errorf("an unknown run: %v", err)
	}
	if _, err := b.in.ResumeRun(b.ctx, "nope", inspect.ResumeOptions{}); !errors.Is(err, inspect.ErrInvalidRequest) {
		t.Errorf("a malformed run id: %v", err)
	}
	ro, _ := inspect.New(b.pool, "public", inspect.ReadOnly())
	if _, err := ro.NewRun(b.ctx, inspect.PacedRequest{Request: inspect.Request{Action: inspect.Retry, Filter: all}}); !errors.Is(err, inspect.ErrReadOnly) {
		t.Errorf("read-only: %v", err)
	}
}
