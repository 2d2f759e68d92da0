package pgsql

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier is what a pool, a connection and a transaction offer.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// EstimatedRows is the planner's row estimate for query (EXPLAIN, not run).
func EstimatedRows(ctx context.Context, q Querier, query string, args ...any) (int64, error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := q.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
		return 0, fmt.Errorf("estimating: %w", err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) == 0 {
		return 0, fmt.Errorf("reading plan estimate: %v", err)
	}
	return int64(plan[0].Plan.Rows), nil
}
