package migrations_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/migrations"
)

// TestMigrateInterruptedBetweenOnlineStepsEndsTheSame: the steps migrate runs
// outside the numbered files' transactions on an adopted seed table (the
// numbering of the rows present, each index built concurrently) are each
// interrupted as they start, the backend terminated, and a second migrate
// ends with exactly the schema and rows of an uninterrupted one, every index
// valid. One build is also killed half-way (it waits for a writer's open
// transaction), which leaves an INVALID index the next migrate builds again.
func TestMigrateInterruptedBetweenOnlineStepsEndsTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const events, consumed, batch = 2500, 100, 1000
	_, ref := seedDB(t, events, consumed)
	var mu sync.Mutex
	var online []string
	opts := migrations.WithAdoptBatch(migrations.Options{LockWait: time.Minute, OnStart: func(_ int32, name string) {
		if strings.Contains(name, ": ") {
			mu.Lock()
			online = append(online, name)
			mu.Unlock()
		}
	}}, batch)
	if _, _, err := migrations.MigrateWith(ctx, ref, "public", opts); err != nil {
		t.Fatal(err)
	}
	wantSchema, wantRows := adoptState(t, ref), rowState(t, ref)
	for _, want := range []string{"001_outbox_event.sql: rows 1001 to 2000 of 2500 numbered",
		"001_outbox_event.sql: seq check validated", "007_claim.sql: outbox_claim_idx, concurrently",
		"002_consumed_event.sql: consumed_event_consumed_at_idx, concurrently"} {
		if !strings.Contains(strings.Join(online, "\n"), want) {
			t.Fatalf("the online steps %q lack %q", online, want)
		}
	}
	check := func(t *testing.T, dsn, how string) {
		again := connect(t, dsn)
		if _, to, err := migrations.MigrateWith(ctx, again, "public", migrations.Options{LockWait: time.Minute}); err != nil || int(to) != count(t) {
			t.Fatalf("migrate after %s: version %d, %v", how, to, err)
		}
		if d := diffStates(wantSchema, adoptState(t, again)); d != "" {
			t.Errorf("%s, then migrated: the schema differs from an uninterrupted run's (- uninterrupted, + this):\n%s", how, d)
		}
		if got := rowState(t, again); got != wantRows {
			t.Errorf("%s, then migrated: rows %s, want %s", how, got, wantRows)
		}
		var invalid int
		if err := again.QueryRow(ctx, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE c.relnamespace = 'public'::regnamespace AND NOT i.indisvalid`).Scan(&invalid); err != nil || invalid != 0 {
			t.Errorf("%s, then migrated: %d invalid indexes (%v)", how, invalid, err)
		}
	}
	for _, step := range online {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			dsn, owner := seedDB(t, events, consumed)
			conn := connect(t, dsn)
			pid := conn.PgConn().PID()
			opts := migrations.WithAdoptBatch(migrations.Options{LockWait: time.Minute, OnStart: func(_ int32, name string) {
				if name == step {
					if _, err := owner.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
						t.Error(err)
					}
				}
			}}, batch)
			if _, _, err := migrations.MigrateWith(ctx, conn, "public", opts); err == nil {
				t.Fatalf("migrate terminated at %s reports success", step)
			}
			check(t, dsn, "terminated at "+step)
		})
	}
	t.Run("a build killed half-way", func(t *testing.T) {
		t.Parallel()
		dsn, owner := seedDB(t, events, consumed)
		writer := connect(t, dsn)
		conn := connect(t, dsn)
		pid := conn.PgConn().PID()
		killed := make(chan error, 1)
		opts := migrations.Options{LockWait: time.Minute, OnStart: func(_ int32, name string) {
			if name != "007_claim.sql: outbox_claim_idx, concurrently" {
				return
			}
			// A writer's transaction open on the table: the build waits for
			// it once it has made its index, INVALID; kill it then.
			tx, err := writer.Begin(ctx)
			if err == nil {
				_, err = tx.Exec(ctx, seedInsert, "o-writer")
			}
			if err != nil {
				killed <- err
				return
			}
			go func() {
				err := killHalfWay(ctx, owner, pid)
				// The writer's transaction ends before the test goes on (and its
				// cleanup closes the connection).
				_ = tx.Rollback(ctx)
				killed <- err
			}()
		}}
		if _, _, err := migrations.MigrateWith(ctx, conn, "public", opts); err == nil {
			t.Fatal("migrate killed in a concurrent build reports success")
		}
		if err := <-killed; err != nil {
			t.Fatalf("killing the build half-way: %v", err)
		}
		var valid *bool
		if err := owner.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('outbox_claim_idx')`).Scan(&valid); err != nil || valid == nil || *valid {
			t.Fatalf("the killed build left outbox_claim_idx valid=%v (%v), want an INVALID one", valid, err)
		}
		check(t, dsn, "a build killed half-way")
	})
}

// killHalfWay terminates the backend pid once its build of outbox_claim_idx
// has made the index, INVALID, and waits for a lock.
func killHalfWay(ctx context.Context, owner *pgx.Conn, pid uint32) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var invalid bool
		if err := owner.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_index WHERE indexrelid = to_regclass('outbox_claim_idx') AND NOT indisvalid)
			AND EXISTS (SELECT FROM pg_locks WHERE pid = $1 AND NOT granted)`, pid).Scan(&invalid); err != nil {
			return err
		}
		if invalid {
			_, err := owner.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return context.DeadlineExceeded
}

// TestNoFileDropsAnIndex: migrate builds again any index of an applied file
// that is missing (an interrupted concurrent build), which is right only as
// long as no later file drops an index on purpose.
func TestNoFileDropsAnIndex(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("[0-9]*.sql")
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`(?mi)^\s*DROP INDEX`)
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if drop.Match(body) {
			t.Errorf("%s drops an index: repairIndexes would build it again", f)
		}
	}
}
