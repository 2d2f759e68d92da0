package inspect

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/migrations"
)

// Order is how each aggregate's seq order, the order the relay publishes it
// in, relates to its commit order (migrations.CommitOrder says what each mode
// does to the writers).
type Order struct {
	// Mode is the table's: "enforce" (seq order is commit order, the database
	// makes writers of one aggregate wait for each other), "detect" (they wait
	// for each other a moment at most; unserialized rows are marked) or "off"
	// (nothing is checked).
	Mode string `json:"mode"`
	// Unserialized counts the aggregates with an event marked unserialized
	// among the rows still in outbox_event (archiving removes the marks with
	// the rows): events of one aggregate inserted by transactions that did not
	// wait for each other, so that their seq order may not be their commit
	// order. It is an estimate of the aggregates committed out of seq order,
	// and an upper bound: every such aggregate is among them, and writers that
	// serialize on the aggregate before inserting mark none. Bound is
	// LowerBound when more than orderCap marked rows exist (it then counts the
	// aggregates found).
	Unserialized int64 `json:"unserialized_aggregates"`
	Bound        Bound `json:"unserialized_bound,omitempty"`
	// Aggregates lists at most OrderLimit of them, most marked events first.
	Aggregates []UnserializedAggregate `json:"aggregates"`
	// Waiting counts the inserts now waiting for an order lock (enforced: a
	// writer of the same aggregate is still open; detecting, for at most a
	// moment), and Holders the sessions that hold what they wait for, the
	// longest-open transaction first (at most OrderLimit; outside the
	// writers' own, any role may hold such a lock): a writer frozen
	// mid-transaction holds up its aggregate's other writers until it ends.
	Waiting int64         `json:"waiting_inserts"`
	Holders []OrderHolder `json:"lock_holders,omitempty"`
}

// OrderHolder is a session holding an order lock that inserts wait for.
type OrderHolder struct {
	PID         int32  `json:"pid"`
	Role        string `json:"role"`
	Application string `json:"application"`
	State       string `json:"state"`
	// Open is how long its transaction has been open.
	Open Age `json:"open_seconds"`
}

// UnserializedAggregate is one aggregate with unserialized events.
type UnserializedAggregate struct {
	AggregateType string `json:"aggregate_type"`
	AggregateID   string `json:"aggregate_id"`
	// Events is how many of its rows are marked (of those read, see Order.Bound).
	Events int64 `json:"events"`
	// LastAt is the newest marked event's created_at.
	LastAt time.Time `json:"last_at"`
}

// OrderLimit bounds Order.Aggregates; orderCap bounds the marked rows read.
const (
	OrderLimit = 20
	orderCap   = 10_000
)

// snapOrder reads the mode, the inserts waiting for an order lock and the
// unserialized aggregates (in any mode: a table can hold marks from a time it
// was detecting).
func (i *Inspector) snapOrder(ctx context.Context, tx pgx.Tx, o *Order, list bool) error {
	mode, err := migrations.CommitOrderOf(ctx, tx, i.schema)
	if err != nil {
		return err
	}
	o.Mode = string(mode)
	if err := i.snapOrderWaiters(ctx, tx, o); err != nil {
		return err
	}
	limit := OrderLimit
	if !list {
		limit = 1
	}
	rows, err := tx.Query(ctx, i.q.SQL("unserialized"), orderCap+1, limit)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a UnserializedAggregate
		var read int64
		if err := rows.Scan(&a.AggregateType, &a.AggregateID, &a.Events, &a.LastAt, &o.Unserialized, &read); err != nil {
			return err
		}
		if read > orderCap {
			o.Bound = LowerBound
		}
		if list {
			o.Aggregates = append(o.Aggregates, a)
		}
	}
	return rows.Err()
}

// snapOrderWaiters reads the inserts waiting for this outbox's order locks
// and who holds those locks.
func (i *Inspector) snapOrderWaiters(ctx context.Context, tx pgx.Tx, o *Order) error {
	rows, err := tx.Query(ctx, i.q.SQL("order_waiters"), int64(uint32(migrations.OrderLockKey(i.schema))), OrderLimit)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var h OrderHolder
		var pid *int32
		var open float64
		if err := rows.Scan(&o.Waiting, &pid, &h.Role, &h.Application, &h.State, &open); err != nil {
			return err
		}
		if pid != nil {
			h.PID, h.Open = *pid, seconds(open)
			o.Holders = append(o.Holders, h)
		}
	}
	return rows.Err()
}
