package demo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Report compares the order service's tables with the consumer's projections.
// Once every committed event has been published and consumed, a correct run
// has OrdersBehind, OverApplied, OutOfOrder and PaymentsMissing all zero.
type Report struct {
	// Orders is the number of orders.
	Orders int64
	// OrderEvents is the number of order events their changes wrote (the sum
	// of the orders' versions).
	OrderEvents int64
	// AppliedOrderEvents is the number of order events the projection applied.
	AppliedOrderEvents int64
	// OrdersBehind counts orders whose projection lacks events (not yet
	// consumed, or lost).
	OrdersBehind int64
	// OverApplied counts orders whose projection applied more events than
	// were written: an event applied twice.
	OverApplied int64
	// OutOfOrder is the number of order events that arrived after a later
	// event of the same order.
	OutOfOrder int64
	// Payments is the number of orders that were paid (each captured one
	// payment, even if cancelled since).
	Payments int64
	// AppliedPayments is the number of payments in the projection.
	AppliedPayments int64
	// PaymentsMissing counts payments missing from the projection.
	PaymentsMissing int64
}

// Settled reports whether every event written has been applied exactly once
// and in order.
func (r Report) Settled() bool {
	return r.OrdersBehind == 0 && r.OverApplied == 0 && r.OutOfOrder == 0 && r.PaymentsMissing == 0 &&
		r.OrderEvents == r.AppliedOrderEvents && r.Payments == r.AppliedPayments
}

func (r Report) String() string {
	return fmt.Sprintf("orders %d, order events %d written / %d applied, behind %d, over-applied %d, out of order %d, payments %d / %d applied, missing %d",
		r.Orders, r.OrderEvents, r.AppliedOrderEvents, r.OrdersBehind, r.OverApplied, r.OutOfOrder,
		r.Payments, r.AppliedPayments, r.PaymentsMissing)
}

// Querier runs queries: *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Verify compares orders with the projections in schema (DefaultSchema when
// empty).
func Verify(ctx context.Context, db Querier, schema string) (Report, error) {
	s := ident(schema)
	var r Report
	err := db.QueryRow(ctx, `
		SELECT count(*),
		       COALESCE(sum(o.version), 0),
		       COALESCE(sum(p.events_applied), 0),
		       count(*) FILTER (WHERE COALESCE(p.events_applied, 0) < o.version),
		       count(*) FILTER (WHERE p.events_applied > o.version),
		       COALESCE(sum(p.out_of_order), 0),
		       (SELECT count(*) FROM `+s+`.payment_projection)
		FROM `+s+`.orders o LEFT JOIN `+s+`.order_projection p USING (order_id)`).
		Scan(&r.Orders, &r.OrderEvents, &r.AppliedOrderEvents, &r.OrdersBehind, &r.OverApplied, &r.OutOfOrder, &r.AppliedPayments)
	if err != nil {
		return r, fmt.Errorf("verifying demo projection: %w", err)
	}
	err = db.QueryRow(ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM `+s+`.payment_projection pp WHERE pp.payment_id = o.payment_id))
		FROM `+s+`.orders o WHERE o.payment_id IS NOT NULL`).
		Scan(&r.Payments, &r.PaymentsMissing)
	if err != nil {
		return r, fmt.Errorf("verifying demo payments: %w", err)
	}
	return r, nil
}
