package inspect_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/wire"
)

// state reads one event's state (or "archived", or "" when gone).
func (b *bundle) state(t *testing.T, id string) wire.State {
	t.Helper()
	d, err := b.in.Detail(b.ctx, id)
	if errors.Is(err, inspect.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return d.State
}

// states maps every event in the outbox and the archive to its state.
func (b *bundle) states(t *testing.T) map[string]wire.State {
	t.Helper()
	out := map[string]wire.State{}
	for _, s := range []wire.State{wire.Ready, wire.Scheduled, wire.Leased, wire.Failed, wire.Published, inspect.Archived} {
		p, err := b.in.List(b.ctx, inspect.ListOptions{State: s, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Events {
			out[e.EventID] = s
		}
	}
	return out
}

// changed returns the ids whose state differs between two states() maps.
func changed(before, after map[string]wire.State) map[string]wire.State {
	d := map[string]wire.State{}
	for id, s := range after {
		if before[id] != s {
			d[id] = s
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			d[id] = ""
		}
	}
	return d
}

type auditRow struct {
	actor, action, reason string
	rows                  int
	ids                   []string
	filter                string
}

func (b *bundle) audits(t *testing.T) []auditRow {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT actor, action, coalesce(reason, ''), rows, coalesce(event_ids::text[], '{}'), filter::text FROM outbox_audit ORDER BY audit_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var a auditRow
		if err := rows.Scan(&a.actor, &a.action, &a.reason, &a.rows, &a.ids, &a.filter); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

func TestRetryTouchesOnlyRowsStillInTheStateSeen(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	// The operator lists the failed events...
	p, err := b.in.List(b.ctx, inspect.ListOptions{State: wire.Failed})
	if err != nil || len(p.Events) != 2 {
		t.Fatalf("%v %v", p, err)
	}
	plan, err := b.in.DryRun(b.ctx, inspect.Request{Action: inspect.Retry, IDs: ids(p), From: wire.Failed})
	if err != nil || plan.Count != 2 {
		t.Fatalf("dry run %+v %v", plan, err)
	}
	// ...meanwhile someone else retried idFailed2 and a relay claimed it.
	if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_event SET failed_at = NULL, lease_token = gen_random_uuid(),
		lease_until = now() + interval '30 seconds' WHERE event_id = $1`, idFailed2); err != nil {
		t.Fatal(err)
	}
	before := b.states(t)
	res, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Retry, IDs: ids(p), From: wire.Failed, Actor: "alice", Reason: "fixed the topic"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 1 || !same(res.EventIDs, []string{idFailed}) {
		t.Fatalf("result %+v", res)
	}
	if d := changed(before, b.states(t)); len(d) != 1 || d[idFailed] != wire.Ready {
		t.Fatalf("changed %v", d)
	}
	var attempts int
	var failed *time.Time
	if err := b.pool.QueryRow(b.ctx, `SELECT attempts, failed_at FROM outbox_event WHERE event_id = $1`, idFailed).Scan(&attempts, &failed); err != nil || attempts != 0 || failed != nil {
		t.Fatalf("retried row: attempts %d failed_at %v %v", attempts, failed, err)
	}
	a := b.audits(t)
	if len(a) != 1 || a[0].actor != "alice" || a[0].action != "retry" || a[0].rows != 1 || !same(a[0].ids, []string{idFailed}) || a[0].reason != "fixed the topic" {
		t.Fatalf("audit %+v", a)
	}
	// Retry by filter also takes scheduled events, and keeps their attempts.
	res, err = b.in.Do(b.ctx, inspect.Request{Action: inspect.Retry, Filter: inspect.Filter{AggregateID: "sch"}, Actor: "alice"})
	if err != nil || res.Rows != 1 || b.state(t, idSched) != wire.Ready {
		t.Fatalf("retry scheduled: %+v %v", res, err)
	}
}

func TestResetLeaseAndPark(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	before := b.states(t)
	// reset-lease on everything leased by filter: the expired lease is not leased.
	res, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.ResetLease, Filter: inspect.Filter{All: true}, Actor: "bob"})
	if err != nil || res.Rows != 1 || res.EventIDs[0] != idLeased {
		t.Fatalf("reset-lease %+v %v", res, err)
	}
	d, _ := b.in.Detail(b.ctx, idLeased)
	if d.State != wire.Ready || !d.LeaseExpired || d.LeaseToken != lease {
		t.Fatalf("after reset-lease: %+v", d)
	}
	if c := changed(before, b.states(t)); len(c) != 1 {
		t.Fatalf("changed %v", c)
	}

	if _, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Park, IDs: []string{idReady1}}); !errors.Is(err, inspect.ErrReasonRequired) {
		t.Fatalf("park without reason: %v", err)
	}
	before = b.states(t)
	// A published id among the targets is left alone.
	res, err = b.in.Do(b.ctx, inspect.Request{Action: inspect.Park, IDs: []string{idReady1, idPub30s}, Reason: "poison payload", Actor: "bob"})
	if err != nil || res.Rows != 1 {
		t.Fatalf("park %+v %v", res, err)
	}
	if c := changed(before, b.states(t)); len(c) != 1 || c[idReady1] != wire.Failed {
		t.Fatalf("changed %v", c)
	}
	d, _ = b.in.Detail(b.ctx, idReady1)
	if d.LastError != "parked by bob: poison payload" {
		t.Fatalf("last_error %q", d.LastError)
	}
	if a := b.audits(t); len(a) != 2 || a[1].action != "park" || a[1].reason != "poison payload" {
		t.Fatalf("audit %+v", a)
	}
}

func TestSkipUnblocksTheAggregate(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	plan, err := b.in.DryRun(b.ctx, inspect.Request{Action: inspect.Skip, Filter: inspect.Filter{AggregateID: "dead"}, Reason: "x"})
	if err != nil || plan.Count != 1 || plan.Sample[0] != idFailed {
		t.Fatalf("dry run %+v %v", plan, err)
	}
	// Naming an event that does not head its aggregate skips nothing.
	res, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Skip, IDs: []string{idBehindF1}, Reason: "x", Actor: "carol"})
	if err != nil || res.Rows != 0 {
		t.Fatalf("skip non-head %+v %v", res, err)
	}
	before := b.states(t)
	res, err = b.in.Do(b.ctx, inspect.Request{Action: inspect.Skip, Filter: inspect.Filter{AggregateID: "dead"}, Reason: "customer deleted", Actor: "carol"})
	if err != nil || res.Rows != 1 {
		t.Fatalf("skip %+v %v", res, err)
	}
	if c := changed(before, b.states(t)); len(c) != 1 || c[idFailed] != inspect.Archived {
		t.Fatalf("changed %v", c)
	}
	d, _ := b.in.Detail(b.ctx, idFailed)
	if d.PublishedAt != nil || d.FailedAt == nil || d.LastError != "skipped by carol: customer deleted (last error: MESSAGE_TOO_LARGE: record too big)" {
		t.Fatalf("skipped row %+v", d)
	}
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Blocked.Aggregates {
		if a.AggregateID == "dead" {
			t.Fatalf("still blocked: %+v", a)
		}
	}
	if s.Counts.Skipped != 1 {
		t.Fatalf("skipped count %d", s.Counts.Skipped)
	}
	if a := b.audits(t); len(a) != 2 || a[1].rows != 1 || a[1].action != "skip" {
		t.Fatalf("audit %+v", a)
	}
}

func TestArchiveInBatchesAndRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	before := b.states(t)
	res, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Archive, Filter: inspect.Filter{OlderThan: time.Minute}, BatchSize: 1, Actor: "dave"})
	if err != nil || res.Rows != 2 {
		t.Fatalf("archive %+v %v", res, err)
	}
	if c := changed(before, b.states(t)); len(c) != 2 || c[idPub3m] != inspect.Archived || c[idPub2h] != inspect.Archived {
		t.Fatalf("changed %v", c)
	}
	if a := b.audits(t); len(a) != 1 || a[0].rows != 2 || a[0].action != "archive" {
		t.Fatalf("one audit row for all batches: %+v", a)
	}
	// Retention: the relay's helpers (no audit rows).
	n, err := b.in.ArchiveOlderThan(b.ctx, time.Second, 1)
	if err != nil || n != 1 || b.state(t, idPub30s) != inspect.Archived {
		t.Fatalf("ArchiveOlderThan %d %v", n, err)
	}
	if _, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Skip, IDs: []string{idFailed2}, Reason: "gone", Actor: "dave"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_event_archive SET archived_at = now() - interval '2 days'`); err != nil {
		t.Fatal(err)
	}
	n, err = b.in.DeleteArchivedOlderThan(b.ctx, 24*time.Hour, 2)
	if err != nil || n != 3 {
		t.Fatalf("DeleteArchivedOlderThan %d %v", n, err)
	}
	if b.state(t, idFailed2) != inspect.Archived {
		t.Fatal("retention deleted a skipped event")
	}
	if a := b.audits(t); len(a) != 2 {
		t.Fatalf("retention wrote audit rows: %+v", a)
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	seqOf := func(id string) int64 {
		d, err := b.in.Detail(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return d.Seq
	}
	maxSeq := seqOf(idPub2h)
	// Same id, in place: both published events of order/p1 come back ready, in their
	// original order, at the end of the outbox.
	res, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Replay, Filter: inspect.Filter{AggregateID: "p1"}, From: wire.Published, Actor: "erin"})
	if err != nil || res.Rows != 2 {
		t.Fatalf("replay %+v %v", res, err)
	}
	// (idPub30s was inserted first, so it comes first again)
	s30, s3m := seqOf(idPub30s), seqOf(idPub3m)
	if !(s30 > maxSeq && s3m > s30) {
		t.Fatalf("seqs %d %d after %d: original order lost", s3m, s30, maxSeq)
	}
	d, _ := b.in.Detail(b.ctx, idPub30s)
	if d.State != wire.Ready || d.ReplayOf != idPub30s || d.Attempts != 0 || d.KafkaTopic != "" {
		t.Fatalf("replayed %+v", d)
	}
	// Same id, from the archive.
	if _, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Archive, IDs: []string{idPub2h}, Actor: "erin"}); err != nil {
		t.Fatal(err)
	}
	res, err = b.in.Do(b.ctx, inspect.Request{Action: inspect.Replay, IDs: []string{idPub2h}, Actor: "erin"})
	if err != nil || res.Rows != 1 || b.state(t, idPub2h) != wire.Ready {
		t.Fatalf("replay from archive %+v %v", res, err)
	}
	// New id: a new event linked to the original, which stays published.
	if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_event SET published_at = now() WHERE event_id = $1`, idPub2h); err != nil {
		t.Fatal(err)
	}
	res, err = b.in.Do(b.ctx, inspect.Request{Action: inspect.Replay, IDs: []string{idPub2h}, NewID: true, Actor: "erin"})
	if err != nil || res.Rows != 1 || res.EventIDs[0] == idPub2h {
		t.Fatalf("replay new id %+v %v", res, err)
	}
	nd, _ := b.in.Detail(b.ctx, res.EventIDs[0])
	if nd.ReplayOf != idPub2h || nd.State != wire.Ready || b.state(t, idPub2h) != wire.Published {
		t.Fatalf("new-id replay %+v", nd)
	}
	od, _ := b.in.Detail(b.ctx, idPub2h)
	if len(od.Replays) != 1 || od.Replays[0] != nd.EventID {
		t.Fatalf("original's replays %v", od.Replays)
	}
	if a := b.audits(t); len(a) != 4 {
		t.Fatalf("audit rows %d", len(a))
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	ro, err := inspect.New(b.pool, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	before := b.states(t)
	for _, a := range inspect.Actions {
		r := inspect.Request{Action: a, Filter: inspect.Filter{All: true}, Reason: "r"}
		if _, err := ro.Do(b.ctx, r); !errors.Is(err, inspect.ErrReadOnly) {
			t.Errorf("%s read-only: %v", a, err)
		}
		if _, err := ro.DryRun(b.ctx, r); err != nil {
			t.Errorf("%s dry run in read-only: %v", a, err)
		}
	}
	if _, err := ro.ArchiveOlderThan(b.ctx, time.Second, 10); !errors.Is(err, inspect.ErrReadOnly) {
		t.Errorf("retention in read-only: %v", err)
	}
	if c := changed(before, b.states(t)); len(c) != 0 || len(b.audits(t)) != 0 {
		t.Fatalf("read-only changed %v", c)
	}
	if _, err := b.in.Do(b.ctx, inspect.Request{Action: inspect.Retry}); !errors.Is(err, inspect.ErrNoTarget) {
		t.Errorf("empty target: %v", err)
	}
	// What cannot be carried out as asked is ErrInvalidRequest, and says why.
	for _, c := range []struct {
		req  inspect.Request
		says string
	}{
		{inspect.Request{Action: inspect.Retry, From: wire.Published, IDs: []string{idPub2h}}, "applies to"},
		{inspect.Request{Action: inspect.Retry, IDs: []string{"1; DROP TABLE x"}}, "is not an event id"},
		{inspect.Request{Action: inspect.Retry, IDs: []string{idPub2h}, NewID: true}, "replay only"},
		{inspect.Request{Action: inspect.Retry, Filter: inspect.Filter{IDPrefix: "x'"}}, "only hex digits"},
		{inspect.Request{Action: "explode", Filter: inspect.Filter{All: true}}, "unknown action"},
	} {
		_, err := b.in.Do(b.ctx, c.req)
		if !errors.Is(err, inspect.ErrInvalidRequest) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want ErrInvalidRequest saying %q", c.req, err, c.says)
		}
		if _, err := b.in.DryRun(b.ctx, c.req); !errors.Is(err, inspect.ErrInvalidRequest) {
			t.Errorf("dry run %+v: %v", c.req, err)
		}
	}
	if c := changed(before, b.states(t)); len(c) != 0 || len(b.audits(t)) != 0 {
		t.Fatalf("refused requests changed %v", c)
	}
}

func TestDefaultActor(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SSH_CONNECTION": "203.0.113.7 51234 10.0.0.1 22"}
	a := inspect.DefaultActor(func(k string) string { return env[k] })
	if len(a) < len(" via ssh from 203.0.113.7") || a[len(a)-len(" via ssh from 203.0.113.7"):] != " via ssh from 203.0.113.7" {
		t.Fatalf("actor %q", a)
	}
}

// A session outside outboxtop that takes the same rows in another order can still
// deadlock with an action. PostgreSQL then rolls the action's transaction back,
// audit row and all, and Do does it again: the operator sees it done once.
func TestActionDoneAgainAfterADeadlock(t *testing.T) {
	t.Parallel()
	const first, second = "c0000000-0000-0000-0000-0000000000a1", "c0000000-0000-0000-0000-0000000000a2"
	b := setup(t,
		row{id: first, aggID: "x1", leaseToken: lease, leaseUntil: in(time.Minute)},
		row{id: second, aggID: "x2", leaseToken: lease, leaseUntil: in(time.Minute)})
	other, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(b.ctx)
	// The other session waits long before looking for a deadlock, so the
	// action's is the statement PostgreSQL ends.
	b.execIn(t, other, `SET LOCAL deadlock_timeout = '60s'`,
		`SELECT 1 FROM outbox_event WHERE event_id = '`+second+`' FOR UPDATE`)
	done := make(chan error, 1)
	var res inspect.Result
	go func() {
		var err error
		res, err = b.in.Do(b.ctx, inspect.Request{Action: inspect.ResetLease, IDs: []string{first, second}, Actor: "op"})
		done <- err
	}()
	// The action holds the first row and waits for the second; the other
	// session now wants the first.
	testenv.WaitFor(t, 10*time.Second, "the action waiting", func() bool { return testenv.LockWaiters(t, b.pool) == 1 })
	b.execIn(t, other, `SELECT 1 FROM outbox_event WHERE event_id = '`+first+`' FOR UPDATE`)
	// The action's first transaction was ended; its second waits for the
	// other session, which now ends.
	testenv.WaitFor(t, 10*time.Second, "the action waiting again", func() bool { return testenv.LockWaiters(t, b.pool) == 1 })
	if err := other.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || res.Rows != 2 {
		t.Fatalf("reset-lease after a deadlock: %+v, %v", res, err)
	}
	var audits, deadlocks int
	if err := b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM outbox_audit WHERE action = 'reset-lease'),
		(SELECT deadlocks FROM pg_stat_database WHERE datname = current_database())`).Scan(&audits, &deadlocks); err != nil {
		t.Fatal(err)
	}
	// One deadlock, or a second if the retry still came before the other
	// session took the row it won (see Do): the action is done once either way.
	if audits != 1 || deadlocks < 1 || deadlocks > 2 {
		t.Fatalf("%d audit rows, %d deadlocks; want 1 and 1 (or 2)", audits, deadlocks)
	}
}

// execIn runs statements in tx, failing the test on the first error.
func (b *bundle) execIn(t *testing.T, tx pgx.Tx, statements ...string) {
	t.Helper()
	for _, q := range statements {
		if _, err := tx.Exec(b.ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}
