package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OldestPublishableAge is how long the longest-waiting publishable event has been
// claimable: now() − max(created_at, available_at) over ready events that do not
// wait behind a failed or scheduled earlier event of their aggregate (0 when
// none). Unlike Snapshot.OldestReadyAge, one poison event does not make it grow:
// it measures the relay, not the events it may not publish yet. With
// --ordering=none nothing waits behind a failed event, so there it can read lower
// than the relay's real lag while failed events exist.
func (i *Inspector) OldestPublishableAge(ctx context.Context) (Age, error) {
	var secs float64
	err := i.pool.QueryRow(ctx, i.q.SQL("oldest_publishable")).Scan(&secs)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("oldest publishable: %w", err)
	}
	return seconds(secs), nil
}
