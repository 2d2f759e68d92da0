package relay

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// With a snapshot held from the start, every event published after it leaves a
// dead entry in outbox_claim_idx and outbox_aggregate_idx that nothing can
// remove. A claim's cost must not grow with them: the buffers that one claim
// of the same fresh events, its next position and the idle relay's wake-up
// read (sql/next_scheduled.sql) take (EXPLAIN ANALYZE, BUFFERS) stay within a
// small margin whether 1,000 or 12,000 events were published behind the held
// snapshot, in both orderings, while the same claim read from the start of the
// index (as the first claim does, and every claim did before) reads several times more at
// 12,000 (the proof that the table does hold the dead entries). No timing: the
// figures are counts of pages.
func TestClaimCostDoesNotGrowWithAHeldHorizon(t *testing.T) {
	for _, ordering := range []Ordering{OrderAggregate, OrderNone} {
		t.Run(string(ordering), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			cfg := b.config()
			cfg.Ordering = ordering
			cfg.BatchSize = 200
			r := b.relay(t, cfg)
			ctx := context.Background()

			holder, err := b.pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Release()
			if _, err := holder.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
				t.Fatal(err)
			}
			defer holder.Exec(context.WithoutCancel(ctx), "ROLLBACK")
			if _, err := holder.Exec(ctx, "SELECT count(*) FROM outbox_event"); err != nil {
				t.Fatal(err)
			}

			sent := 0
			var marks [][2]int // markCost after 1,000 and after 12,000 published
			// publish claims and marks n events of 20 aggregates as the relay
			// does, with made-up Kafka coordinates.
			publish := func(n int) {
				b.insertSeed(t, n, 20, "h-")
				for left := n; left > 0; {
					token := uuid.New()
					evs, err := r.claim(ctx, token, cfg.BatchSize)
					if err != nil {
						t.Fatal(err)
					}
					if len(evs) == 0 {
						t.Fatalf("%d events left unclaimed", left)
					}
					acked := make([]published, len(evs))
					for i, e := range evs {
						acked[i] = published{id: e.id, topic: "t", offset: int64(sent + i)}
					}
					res, err := r.mark(ctx, token, acked)
					if err != nil || res.marked != len(evs) {
						t.Fatalf("marked %d of %d: %v", res.marked, len(evs), err)
					}
					sent += len(evs)
					left -= len(evs)
				}
				// Statistics as autovacuum leaves a live outbox's: nearly
				// every row published, the partial indexes of unpublished
				// rows nearly empty (the planner's trap).
				if _, err := b.pool.Exec(ctx, "ANALYZE outbox_event"); err != nil {
					t.Fatal(err)
				}
			}
			// cost is the buffers one claim of 100 fresh events reads, run and
			// rolled back; deep reads from the start of the index.
			cost := func(deep bool) int {
				b.insertSeed(t, 100, 20, "h-")
				tx, err := b.pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				// The claim transaction's first statement, as the relay runs
				// it: its plans are the ones measured.
				if _, err := tx.Exec(ctx, r.sql.claimTimeouts, "5000ms", "10000ms"); err != nil {
					t.Fatal(err)
				}
				args := r.claimArgs(uuid.New(), cfg.BatchSize, time.Now())
				if deep {
					var fresh Relay
					fresh.cfg = r.cfg
					args = fresh.claimArgs(uuid.New(), cfg.BatchSize, time.Now())
				}
				stmt := r.sql.claimOrdered
				if ordering == OrderNone {
					stmt = r.sql.claimUnordered
				}
				total := 0
				for _, s := range []struct {
					sql  string
					args pgx.StrictNamedArgs
				}{{stmt, args}, {r.sql.claimPosition, pgx.StrictNamedArgs{
					"from_at": args["from_at"], "from_seq": args["from_seq"], "xmax": args["xmax"], "xip": args["xip"]}},
				} {
					if os.Getenv("OUTBOXTOP_TEST_PLAN") != "" && !deep {
						rows, _ := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+s.sql, s.args)
						lines, _ := pgx.CollectRows(rows, pgx.RowTo[string])
						t.Log("\n" + strings.Join(lines, "\n"))
					}
					total += testenv.PlanBuffers(t, tx, s.sql, s.args)
				}
				if !deep {
					marks = append(marks, markCost(t, r, tx, args["token"].(uuid.UUID)))
				}
				// The idle relay's wake-up read, in its own transaction's
				// settings, after the claims (they are set for the rest of tx).
				if _, err := tx.Exec(ctx, nextScheduledSettings); err != nil {
					t.Fatal(err)
				}
				return total + testenv.PlanBuffers(t, tx, r.sql.nextScheduled)
			}
			drain := func() {
				for {
					token := uuid.New()
					evs, err := r.claim(ctx, token, cfg.BatchSize)
					if err != nil {
						t.Fatal(err)
					}
					if len(evs) == 0 {
						return
					}
					acked := make([]published, len(evs))
					for i, e := range evs {
						acked[i] = published{id: e.id, topic: "t", offset: int64(sent + i)}
					}
					if _, err := r.mark(ctx, token, acked); err != nil {
						t.Fatal(err)
					}
					sent += len(evs)
				}
			}

			publish(1000)
			small, smallDeep := cost(false), cost(true)
			drain()
			publish(11000)
			large, largeDeep := cost(false), cost(true)
			drain()
			t.Logf("buffers per claim: %d after 1,000 published, %d after 12,000 (from the start: %d, %d)",
				small, large, smallDeep, largeDeep)
			t.Logf("buffers per mark of the claim's events (as sent, generic plan): %v after 1,000 published, %v after 12,000",
				marks[0], marks[1])
			for i, what := range []string{"as sent", "as a generic plan"} {
				if s, l := marks[0][i], marks[1][i]; l > s+s/2+20 {
					t.Errorf("the mark %s read %d buffers after 12,000 events published behind a held snapshot, %d after 1,000: its cost grows with the dead rows", what, l, s)
				}
			}
			if largeDeep < 2*smallDeep {
				t.Fatalf("a claim from the start read %d buffers after 12,000 dead rows, %d after 1,000: the held snapshot keeps no dead entries", largeDeep, smallDeep)
			}
			if large > small+small/2+20 {
				t.Errorf("a claim read %d buffers after 12,000 events published behind a held snapshot, %d after 1,000: its cost grows with the dead rows", large, small)
			}
			if n := b.count(t, "published_at IS NULL"); n != 0 {
				t.Errorf("%d events left unpublished", n)
			}
		})
	}
}

// markCost is the buffers the mark of the events tx leased with token takes,
// outside the claim's settings, as the relay sends it (planned for its
// parameters) and as the generic plan PostgreSQL switches a prepared statement
// to after five runs. Each runs and is rolled back to a savepoint.
func markCost(t *testing.T, r *Relay, tx pgx.Tx, token uuid.UUID) [2]int {
	t.Helper()
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("SET LOCAL enable_sort TO DEFAULT")
	exec("SET LOCAL jit TO DEFAULT")
	rows, _ := tx.Query(ctx, "SELECT event_id FROM outbox_event WHERE lease_token = $1", token)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(ids) == 0 {
		t.Fatalf("the claim leased %d events: %v", len(ids), err)
	}
	topics, parts, offs := make([]string, len(ids)), make([]int32, len(ids)), make([]int64, len(ids))
	for i := range ids {
		topics[i], offs[i] = "t", int64(i)
	}
	var out [2]int
	exec("SAVEPOINT mark")
	out[0] = testenv.PlanBuffers(t, tx, r.sql.mark, pgx.StrictNamedArgs{
		"token": token, "ids": ids, "topics": topics, "partitions": parts, "offsets": offs})
	exec("ROLLBACK TO SAVEPOINT mark")
	positional := strings.NewReplacer("@ids", "$1", "@topics", "$2", "@partitions", "$3", "@offsets", "$4", "@token", "$5").Replace(r.sql.mark)
	exec("PREPARE outboxtop_mark(uuid[], text[], int[], bigint[], uuid) AS " + positional)
	exec("SET LOCAL plan_cache_mode = force_generic_plan")
	// EXECUTE takes no parameters of its own: the values as literals (ids and
	// numbers only).
	list := func(v any) string { return strings.NewReplacer("[", "{", "]", "}", " ", ",").Replace(fmt.Sprint(v)) }
	out[1] = testenv.PlanBuffers(t, tx, fmt.Sprintf("EXECUTE outboxtop_mark('%s'::uuid[], '%s'::text[], '%s'::int[], '%s'::bigint[], '%s'::uuid)",
		list(ids), list(topics), list(parts), list(offs), token))
	exec("DEALLOCATE outboxtop_mark")
	exec("ROLLBACK TO SAVEPOINT mark")
	return out
}

// The claim's transaction runs without JIT (the claim's estimated cost passes
// jit_above_cost beside a storm, and compiling it cost more than running it:
// 305 of 336 ms) and without sorts where an index gives the order (a full read
// of outbox_claim_seq_idx and a sort, where outbox_claim_idx seeks in order).
func TestClaimTransactionSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.relay(t, b.config())
	ctx := context.Background()
	tx, _, err := r.beginClaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, setting := range []string{"jit", "enable_sort"} {
		var v string
		if err := tx.QueryRow(ctx, "SHOW "+setting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "off" {
			t.Errorf("%s is %q in the claim's transaction", setting, v)
		}
	}
}
