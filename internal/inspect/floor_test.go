package inspect_test

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// TestSnapshotFromItsFloorFollowsTheTable is the property for a long-lived
// Inspector, whose passes start where the previous one found the first
// unpublished row and probe heads from those it found: on a table that
// changes between snapshots — inserts, publishes, failures, retries of failed
// rows (blocked or not), the blocked hint set and cleared, and transactions
// that insert while a snapshot is taken and commit after it, below its
// position — every figure of every snapshot holds its bound against a
// brute-force count, as a fresh Inspector's must. OUTBOXTOP_PROPERTY_SEED sets
// the seed.
func TestSnapshotFromItsFloorFollowsTheTable(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	if v := os.Getenv("OUTBOXTOP_PROPERTY_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (OUTBOXTOP_PROPERTY_SEED)", seed)
	r := rand.New(rand.NewSource(seed))
	b := setup(t)
	testenv.CommitOrder(t, b.pool, migrations.OrderOff) // its late rows commit below others of their aggregate
	ctx := b.ctx
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := b.pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	kinds := []string{"ready", "ready", "ready", "scheduled", "leased", "failed"}
	rows := func(n int) string {
		var vals []string
		for range n {
			avail, until, failed := "now() - interval '1 minute'", "NULL", "NULL"
			switch kinds[r.Intn(len(kinds))] {
			case "scheduled":
				avail = "now() + interval '1 hour'"
			case "leased":
				until = "now() + interval '1 hour'"
			case "failed":
				failed = "now()"
			}
			vals = append(vals, fmt.Sprintf(`(gen_random_uuid(), 'a', 'a-%d', 'E', '{}', %s, %s, %s, %v)`,
				r.Intn(4), avail, until, failed, r.Intn(5) == 0))
		}
		return `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			available_at, lease_until, failed_at, blocked) VALUES ` + strings.Join(vals, ", ")
	}
	type late struct {
		tx    pgx.Tx
		steps int
	}
	var open []late
	var log []string
	for step := range 120 {
		// Change the table.
		switch op := r.Intn(8); op {
		case 0, 1:
			exec(rows(1 + r.Intn(6)))
			log = append(log, "insert")
		case 2:
			// Half the time all of them: the position moves past every row.
			exec(`UPDATE outbox_event SET published_at = now(), kafka_topic = 't', kafka_partition = 0, kafka_offset = 0
				WHERE published_at IS NULL AND failed_at IS NULL AND random() < $1`, []float64{0.5, 1}[r.Intn(2)])
			log = append(log, "publish")
		case 3:
			exec(`UPDATE outbox_event SET failed_at = now(), last_error = 'x'
				WHERE published_at IS NULL AND failed_at IS NULL AND random() < 0.2`)
			log = append(log, "fail")
		case 4:
			exec(`UPDATE outbox_event SET failed_at = NULL, available_at = now() - interval '1 minute', blocked = random() < 0.3
				WHERE published_at IS NULL AND failed_at IS NOT NULL AND random() < 0.5`)
			log = append(log, "retry")
		case 5:
			exec(`UPDATE outbox_event SET blocked = NOT blocked WHERE published_at IS NULL AND random() < 0.3`)
			log = append(log, "flip blocked")
		case 6:
			tx, err := b.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, rows(1+r.Intn(4))); err != nil {
				t.Fatal(err)
			}
			open = append(open, late{tx, 1 + r.Intn(3)})
			log = append(log, "open late")
		case 7:
			// A row of a late transaction, blocked or failed before the next snapshot.
			exec(`UPDATE outbox_event SET blocked = true WHERE seq = (SELECT max(seq) FROM outbox_event WHERE published_at IS NULL)`)
			log = append(log, "block newest")
		}
		for k := 0; k < len(open); k++ {
			if open[k].steps--; open[k].steps > 0 {
				continue
			}
			end := open[k].tx.Commit
			what := "commit late"
			if r.Intn(4) == 0 {
				end, what = open[k].tx.Rollback, "roll back late"
			}
			if err := end(ctx); err != nil {
				t.Fatal(err)
			}
			log = append(log, what)
			open = append(open[:k], open[k+1:]...)
			k--
		}
		inspect.SetTestCaps(b.in, inspect.DefaultTestCaps())
		if r.Intn(3) == 0 {
			inspect.SetTestCaps(b.in, inspect.TestCaps{Scan: 1 + r.Intn(20), Probe: 1 + r.Intn(10), Count: 1 + r.Intn(20),
				Failed: 1 + r.Intn(20), FailedGroups: 1 + r.Intn(5), BlockedProbe: 1 + r.Intn(10)})
		}
		checkAgainstTruth(t, b, fmt.Sprintf("seed %d, step %d, after %s", seed, step, strings.Join(log, ", ")))
	}
	for _, l := range open {
		_ = l.tx.Rollback(ctx)
	}
}

// TestSnapshotHeadBelowARememberedHead: a head remembered for an aggregate is
// lowered by a row committed late below it, also when that aggregate is not
// probed by the pass that finds the row. X (failed) is inserted by a
// transaction open while the first snapshot finds H, failed, heading W; X
// commits, W is published (nothing of the aggregate is left to probe), H is
// retried: the aggregate's head is X, and H waits behind it.
func TestSnapshotHeadBelowARememberedHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testenv.CommitOrder(t, b.pool, migrations.OrderOff) // X commits below H
	ctx := b.ctx
	check := func(what string) inspect.Snapshot { return checkAgainstTruth(t, b, what) }
	const row = `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at)
		VALUES (gen_random_uuid(), 'a', 'g', $1, '{}', $2)`
	late, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback(ctx)
	if _, err := late.Exec(ctx, row, "X", time.Now()); err != nil {
		t.Fatal(err)
	}
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at)
		VALUES (gen_random_uuid(), 'a', 'g', 'H', '{}', now()), (gen_random_uuid(), 'a', 'g', 'W', '{}', NULL)`)
	check("H heads the aggregate, W waits")
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	b.exec(t, `UPDATE outbox_event SET published_at = now(), kafka_topic = 't', kafka_partition = 0, kafka_offset = 0 WHERE event_type = 'W'`)
	check("X committed below H")
	b.exec(t, `UPDATE outbox_event SET failed_at = NULL WHERE event_type = 'H'`)
	s := check("H retried behind X")
	if s.Counts.Waiting != 1 || s.Blocked.Count != 1 {
		t.Errorf("waiting %d, blocked %d: want H waiting behind X, one aggregate blocked", s.Counts.Waiting, s.Blocked.Count)
	}
}

// checkAgainstTruth takes a Snapshot with b's Inspector and fails the test,
// saying what, unless every figure holds its bound against a brute-force count.
func checkAgainstTruth(t *testing.T, b *bundle, what string) inspect.Snapshot {
	t.Helper()
	s, err := b.in.Snapshot(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := bruteForce(b.ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	if bad := checkSnapshot(s, truth, inspect.BlockedLimit); len(bad) > 0 {
		t.Fatalf("%s:\n%s", what, strings.Join(bad, "\n"))
	}
	return s
}
