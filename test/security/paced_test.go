package security

import (
	"errors"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// TestPacedRunsUnderEveryRole: a paced retry needs nothing beyond the
// operator's grants (its chunks go through outboxtop_retry, its window and
// its resume are reads, its lock an advisory lock), and every other role is
// refused by the database before anything changes.
func TestPacedRunsUnderEveryRole(t *testing.T) {
	t.Parallel()
	for _, role := range roles {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			b := setup(t, role)
			ids := b.insert(t, "order", "paced", 30)
			if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), attempts = 5, last_error = 'boom'`); err != nil {
				t.Fatal(err)
			}
			in, err := inspect.New(b.as, b.schema)
			if err != nil {
				t.Fatal(err)
			}
			req := inspect.PacedRequest{Request: inspect.Request{Action: inspect.Retry, Filter: inspect.Filter{All: true},
				From: wire.Failed, Actor: "pat"}, Chunk: 7, Max: 14}
			run, err := in.NewRun(b.ctx, req)
			if err == nil {
				_, err = run.Do(b.ctx, nil)
				run.Close()
			}
			if role != "operator" {
				assertDenied(t, role+" may not run a paced retry", errors.Unwrap(err))
				if n := b.count(t, "failed_at IS NULL"); n != 0 {
					t.Fatalf("%d events retried under %s", n, role)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Resumed under the same login, to the end.
			run, err = in.ResumeRun(b.ctx, run.ID(), inspect.ResumeOptions{Actor: "pat", Max: 0, SetMax: true})
			if err != nil {
				t.Fatal(err)
			}
			res, err := run.Do(b.ctx, nil)
			run.Close()
			if err != nil || !res.Complete || res.Changed != int64(len(ids)) {
				t.Fatalf("resumed: %+v %v", res, err)
			}
			var rows, logins int
			if err := b.admin.QueryRow(b.ctx, `SELECT count(*), count(DISTINCT db_user) FILTER (WHERE db_user = $2)
				FROM outbox_audit WHERE filter->'run'->>'id' = $1`, run.ID(), b.role).Scan(&rows, &logins); err != nil {
				t.Fatal(err)
			}
			if rows != 5 || logins != 1 {
				t.Fatalf("%d chunk rows, by %d matching logins", rows, logins)
			}
		})
	}
}

// TestAForgedRunRowSteersOnlyItsOwnLogin: another operator login writes a
// chunk row naming a run of the first with a cursor past every event (the
// filter column is the caller's to write). The first login's resume ignores
// it; only the second login's own resume of that id reads it.
func TestAForgedRunRowSteersOnlyItsOwnLogin(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	other, _ := b.login(t, "operator")
	b.insert(t, "order", "forged", 20)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), attempts = 5, last_error = 'boom'`); err != nil {
		t.Fatal(err)
	}
	in, _ := inspect.New(b.as, b.schema)
	run, err := in.NewRun(b.ctx, inspect.PacedRequest{Request: inspect.Request{Action: inspect.Retry,
		Filter: inspect.Filter{All: true}, From: wire.Failed, Actor: "pat"}, Chunk: 5, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Do(b.ctx, nil); err != nil {
		t.Fatal(err)
	}
	run.Close()
	id := run.ID()
	if _, err := other.Exec(b.ctx, `SELECT outboxtop_retry('mallory', NULL, '{}'::uuid[], ARRAY['failed'],
		jsonb_build_object('all', true, 'from', 'failed', 'states', ARRAY['failed'],
			'run', jsonb_build_object('id', $1::text, 'cursor', 9223372036854775807, 'upto', 9223372036854775807, 'n', 1000000, 'chunk', 5)))`, id); err != nil {
		t.Fatal(err)
	}
	// The other login's resume reads its own row only: the run it sees is
	// past every event, and does nothing.
	theirs, _ := inspect.New(other, b.schema)
	orun, err := theirs.ResumeRun(b.ctx, id, inspect.ResumeOptions{Actor: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	ores, err := orun.Do(b.ctx, nil)
	orun.Close()
	if err != nil || ores.Chunks != 0 || orun.DoneBefore() != 1000000 {
		t.Fatalf("the other login's resume: %+v %v", ores, err)
	}
	run, err = in.ResumeRun(b.ctx, id, inspect.ResumeOptions{Actor: "pat", SetMax: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Do(b.ctx, nil)
	run.Close()
	if err != nil || !res.Complete || res.Done != 20 || res.Changed != 20 {
		t.Fatalf("the run after a forged row: %+v %v", res, err)
	}
}
