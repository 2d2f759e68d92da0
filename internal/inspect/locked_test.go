package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// TestActionOnLockedRowsSaysSo: an action whose rows another session holds (a
// transaction left open, a relay frozen inside its claim) gives up after
// lock_timeout with ErrRowsLocked, changes nothing, and succeeds once the holder
// lets go.
func TestActionOnLockedRowsSaysSo(t *testing.T) {
	t.Parallel()
	b := lockTimeoutBundle(t)
	ctx, in := b.ctx, b.in
	const id = "0196b0c2-0000-7000-8000-0000000000f1"
	b.insert(t, row{id: id, aggID: "o-1", created: -time.Minute, attempts: 3, failed: ago(time.Second), lastError: "boom"})

	release := b.holdRow(t, id)
	_, err := in.Do(ctx, inspect.Request{Action: inspect.Retry, IDs: []string{id}, Actor: "tester"})
	if !errors.Is(err, inspect.ErrRowsLocked) || !strings.Contains(err.Error(), "retry: the events are locked by another session") {
		t.Fatalf("retry of a locked row: %v, want ErrRowsLocked", err)
	}
	if got := b.state(t, id); got != "failed" {
		t.Fatalf("after the refused retry the event is %q, want failed", got)
	}
	release()
	res, err := in.Do(ctx, inspect.Request{Action: inspect.Retry, IDs: []string{id}, Actor: "tester"})
	if err != nil || res.Rows != 1 {
		t.Fatalf("retry once the holder let go: %+v, %v", res, err)
	}
}

// A correction of an event another session holds gives up the same way,
// changing nothing, and goes through once the holder lets go.
func TestCorrectionOfALockedEventSaysSo(t *testing.T) {
	t.Parallel()
	b := lockTimeoutBundle(t)
	ctx, in := b.ctx, b.in
	const id = "0196b0c2-0000-7000-8000-0000000000f2"
	b.insert(t, row{id: id, aggID: "o-2", created: -time.Minute, attempts: 3, failed: ago(time.Second), lastError: "boom"})
	release := b.holdRow(t, id)
	c := inspect.Correction{ID: id, Payload: []byte(`{"fixed": true}`), Reason: "typo", Actor: "tester"}
	if _, err := in.Correct(ctx, c); !errors.Is(err, inspect.ErrRowsLocked) {
		t.Fatalf("correcting a locked event: %v, want ErrRowsLocked", err)
	}
	if got := b.state(t, id); got != "failed" {
		t.Fatalf("after the refused correction the event is %q, want failed", got)
	}
	release()
	if res, err := in.Correct(ctx, c); err != nil || len(res.EventIDs) != 1 {
		t.Fatalf("correct once the holder let go: %+v, %v", res, err)
	}
}

// lockTimeoutBundle is a bundle whose sessions give up waiting for a lock
// after 300 ms, as the CLI's and the consoles' do after ActionLockTimeout.
func lockTimeoutBundle(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	_, dsn := testenv.Pool(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "300ms"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{pool: pool, in: in, ctx: ctx}
}

// holdRow locks event id's row from a transaction of its own, as a session
// left open would, until release (or the test's end) rolls it back.
func (b *bundle) holdRow(t *testing.T, id string) (release func()) {
	t.Helper()
	holder, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Rollback(context.Background()) })
	if _, err := holder.Exec(b.ctx, "SELECT 1 FROM outbox_event WHERE event_id = $1 FOR UPDATE", id); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := holder.Rollback(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
}
