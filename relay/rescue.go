package relay

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// rescueLimit is the most expired leases one rescue pass gives back; the next
// pass, one rescueEvery later, takes the rest.
const rescueLimit = 10_000

// rescueLoop runs rescue every rescueEvery, beside the claims, from the first
// claim on (before it there is no position to be behind). A pass that took
// long (a held horizon: its read grows with the dead entries kept) is followed
// by a wait of sweepPace times its length, so the rescue never takes more than
// a tenth of a database core however long the horizon is held.
func (r *Relay) rescueLoop(ctx context.Context) {
	every := r.cfg.rescueEvery()
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		n, err := r.rescue(ctx)
		took := time.Since(start)
		switch {
		case err != nil && ctx.Err() == nil:
			r.noteError("giving back expired leases behind the claim position", err)
		case n > 0:
			r.log.Warn("rescue: gave back expired leases no claim would meet (a relay that died or froze holding them)",
				"events", n, "took", took.Round(time.Millisecond))
		}
		t.Reset(max(every, sweepPace*took))
	}
}

// rescue ends the leases that ran out behind the claim position
// (sql/rescue.sql) and returns how many.
func (r *Relay) rescue(ctx context.Context) (int64, error) {
	at, seq, ok := r.cursor.rescuePosition()
	if !ok {
		return 0, nil
	}
	tx, err := r.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	tag, err := tx.Exec(ctx, r.sql.rescue, pgx.StrictNamedArgs{"from_at": at, "from_seq": seq, "limit": rescueLimit})
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
