package testenv

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PlanBuffers runs query with args under EXPLAIN (ANALYZE, BUFFERS) with q and
// returns the shared buffers it hit or read: a statement's cost in pages, the
// same on every run of the same table, where a timing is not. The statement
// runs: give q a transaction to roll back when it writes.
func PlanBuffers(t testing.TB, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, query string, args ...any) int {
	t.Helper()
	var raw []byte
	if err := q.QueryRow(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	var plan []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("EXPLAIN: %d plans, %v", len(plan), err)
	}
	return plan[0].Plan.Hit + plan[0].Plan.Read
}
