package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

// An Inspector on a schema whose name needs quotes reads and acts with nothing
// of outboxtop's on its search_path: every name in its SQL is qualified
// (internal/pgsql), none resolves by chance to public's tables.
func TestQuotedSchemaWithoutSearchPath(t *testing.T) {
	t.Parallel()
	const schema = "Outbox_Q"
	ctx := context.Background()
	dsn := testenv.DB(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, schema, nil); err != nil {
		t.Fatal(err)
	}
	newPool := func(searchPath string) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = searchPath
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	in, err := inspect.New(newPool("pg_catalog"), schema)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's insert names outbox_event bare: its pool finds the schema's.
	b := &bundle{pool: newPool(`"` + schema + `"`), in: in, ctx: ctx}
	b.insert(t, everyState()...)

	s, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts.Failed != 2 || s.Counts.Ready != 6 {
		t.Errorf("snapshot counts %+v, want 2 failed, 6 ready", s.Counts)
	}
	page, err := in.List(ctx, inspect.ListOptions{State: wire.Failed, Limit: 10})
	if err != nil || len(page.Events) != 2 {
		t.Fatalf("failed events: %d, %v", len(page.Events), err)
	}
	if _, err := in.Detail(ctx, idFailed); err != nil {
		t.Fatal(err)
	}
	if c, err := in.CountMatching(ctx, wire.Scheduled, inspect.Filter{}); err != nil || c.Value != 1 {
		t.Errorf("scheduled: %+v, %v", c, err)
	}
	if _, err := in.OldestPublishableAge(ctx); err != nil {
		t.Fatal(err)
	}
	req := inspect.Request{Action: inspect.Retry, IDs: []string{idFailed}, From: wire.Failed, Actor: "alice"}
	if _, err := in.DryRun(ctx, req); err != nil {
		t.Fatal(err)
	}
	if res, err := in.Do(ctx, req); err != nil || res.Rows != 1 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if _, err := in.AuditRelay(ctx, "alice", true); err != nil {
		t.Fatal(err)
	}
	if n, err := in.ArchiveOlderThan(ctx, time.Hour, 0); err != nil || n != 1 {
		t.Errorf("archived %d, %v; want 1", n, err)
	}
	if _, err := in.DeleteArchivedOlderThan(ctx, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
}
