package demo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultSchema holds the demo's tables, apart from outboxtop's own so the demo
// can run against an existing database without touching its tables.
const DefaultSchema = "outboxtop_demo"

// Execer runs statements: *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Migrate creates the demo's tables in schema (DefaultSchema when empty): the
// order service's orders, and the consumer's projections of them.
func Migrate(ctx context.Context, db Execer, schema string) error {
	s := ident(schema)
	_, err := db.Exec(ctx, `
CREATE SCHEMA IF NOT EXISTS `+s+`;

-- The order service's own table. version counts the order's changes: each
-- change writes exactly one order event carrying the new version.
CREATE TABLE IF NOT EXISTS `+s+`.orders (
    order_id    text PRIMARY KEY,
    customer_id text NOT NULL,
    status      text NOT NULL,
    items       integer NOT NULL,
    total_cents bigint NOT NULL,
    hot         boolean NOT NULL DEFAULT false,
    version     integer NOT NULL,
    payment_id  text, -- set when paid: one PaymentCaptured event
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The consumer's projection, written only through the inbox.
CREATE TABLE IF NOT EXISTS `+s+`.order_projection (
    order_id        text PRIMARY KEY,
    status          text NOT NULL,
    version         integer NOT NULL,
    events_applied  integer NOT NULL,
    out_of_order    integer NOT NULL DEFAULT 0,
    last_event_type text NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- One row per captured payment: a second apply of an event would fail on the key.
CREATE TABLE IF NOT EXISTS `+s+`.payment_projection (
    payment_id  text PRIMARY KEY,
    order_id    text NOT NULL,
    amount_cents bigint NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);`)
	if err != nil {
		return fmt.Errorf("creating demo tables: %w", err)
	}
	return nil
}

func ident(schema string) string {
	if schema == "" {
		schema = DefaultSchema
	}
	return pgx.Identifier{schema}.Sanitize()
}
