// Package seed fills an outbox with a fixed set of events in every state, with
// fixed ids and times relative to a base time, for the console's golden tests and
// its tmux smoke script: the same screen every run.
package seed

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LeaseToken is the holder of the seeded leases.
const LeaseToken = "c0ffee00-0000-4000-8000-000000000001"

// ID returns the fixed event id for a state letter (a ready, b scheduled, c leased,
// d failed, e published) and a number.
func ID(state byte, n int) string {
	return fmt.Sprintf("%c%07d-0000-4000-8000-%012d", state, n, n)
}

type ev struct {
	id, aggType, aggID, typ, payload string
	created, available               time.Duration // relative to base
	attempts                         int
	leaseUntil, failed, published    *time.Duration
	lastError                        string
	holder                           string // lease_holder: the relay that claimed it last
	partition                        int
	offset                           int64
}

func d(x time.Duration) *time.Duration { return &x }

// Events are the seeded events, in insertion (seq) order.
func events() []ev {
	m := time.Minute
	return []ev{
		{id: ID('e', 1), aggType: "Order", aggID: "ord-1001", typ: "OrderPlaced", payload: `{"order":1001,"total":"42.00"}`, created: -2 * time.Hour, published: d(-119 * m), partition: 0, offset: 17, holder: "relay-a:4242"},
		{id: ID('e', 2), aggType: "Order", aggID: "ord-1002", typ: "OrderPlaced", payload: `{"order":1002,"total":"9.90"}`, created: -50 * time.Second, published: d(-40 * time.Second), partition: 1, offset: 8, holder: "relay-a:4242"},
		{id: ID('e', 3), aggType: "Order", aggID: "ord-1002", typ: "OrderPaid", payload: `{"order":1002}`, created: -40 * time.Second, published: d(-30 * time.Second), partition: 1, offset: 9, holder: "relay-a:4242"},
		{id: ID('e', 4), aggType: "Customer", aggID: "cus-7", typ: "CustomerRenamed", payload: `{"customer":7,"name":"Ada"}`, created: -25 * time.Second, published: d(-20 * time.Second), partition: 2, offset: 3, holder: "relay-a:4242"},
		{id: ID('d', 1), aggType: "Order", aggID: "ord-1003", typ: "OrderPlaced", payload: `{"order":1003,"note":"too big"}`, created: -90 * m, attempts: 1, failed: d(-89 * m), lastError: "record too large: 1048577 bytes > max.message.bytes"},
		{id: ID('d', 2), aggType: "Order", aggID: "ord-1004", typ: "OrderShipped", payload: `{"order":1004}`, created: -30 * m, attempts: 10, failed: d(-5 * m), lastError: "NOT_LEADER_FOR_PARTITION after 10 attempts", holder: "relay-b:77"},
		{id: ID('a', 1), aggType: "Order", aggID: "ord-1004", typ: "OrderDelivered", payload: `{"order":1004}`, created: -4 * m},
		{id: ID('b', 1), aggType: "Payment", aggID: "pay-55", typ: "PaymentCaptured", payload: `{"payment":55,"amount":"19.99"}`, created: -12 * m, available: 3 * m, attempts: 3, lastError: "kafka: broker not available"},
		{id: ID('a', 2), aggType: "Payment", aggID: "pay-55", typ: "PaymentRefunded", payload: `{"payment":55}`, created: -10 * m},
		{id: ID('c', 1), aggType: "Order", aggID: "ord-1005", typ: "OrderPlaced", payload: `{"order":1005}`, created: -20 * time.Second, attempts: 1, leaseUntil: d(25 * time.Second), holder: "relay-a:4242"},
		{id: ID('c', 2), aggType: "Customer", aggID: "cus-8", typ: "CustomerCreated", payload: `{"customer":8}`, created: -15 * time.Second, attempts: 1, leaseUntil: d(50 * time.Second), holder: "outboxtop-relay-5d8f7b9c4-x2kqz:1"},
		{id: ID('a', 3), aggType: "Order", aggID: "ord-1006", typ: "OrderPlaced", payload: `{"order":1006}`, created: -3 * m, attempts: 1, leaseUntil: d(-30 * time.Second), holder: "relay-b:77"},
		{id: ID('a', 4), aggType: "Customer", aggID: "cus-9", typ: "CustomerCreated", payload: `{"customer":9,"email":"nine@example.com"}`, created: -1 * m},
		{id: ID('b', 2), aggType: "Invoice", aggID: "inv-3", typ: "InvoiceIssued", payload: `{"invoice":3}`, created: -2 * m, available: 10 * m},
		{id: ID('d', 3), aggType: "Invoice", aggID: "inv-4", typ: "InvoiceIssued", payload: `{"invoice":4}`, created: -8 * m, attempts: 0, failed: d(-7 * m), lastError: "parked by alice: waiting for finance"},
	}
}

// Seed inserts the events and two consumers' inboxes into schema's tables.
func Seed(ctx context.Context, pool *pgxpool.Pool, schema string, base time.Time) error {
	t := func(x time.Duration) time.Time { return base.Add(x) }
	opt := func(x *time.Duration) *time.Time {
		if x == nil {
			return nil
		}
		v := base.Add(*x)
		return &v
	}
	tbl := pgx.Identifier{schema, "outbox_event"}.Sanitize()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, e := range events() {
			var token, lastErr, topic *string
			if e.leaseUntil != nil {
				s := LeaseToken
				token = &s
			}
			if e.lastError != "" {
				lastErr = &e.lastError
			}
			var holder *string
			if e.holder != "" {
				holder = &e.holder
			}
			available := e.available
			if available == 0 {
				available = e.created
			}
			var part *int
			var off *int64
			if e.published != nil {
				s := "outbox." + e.aggType
				topic, part, off = &s, &e.partition, &e.offset
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+tbl+` (event_id, aggregate_type, aggregate_id, event_type, payload,
				created_at, available_at, attempts, lease_token, lease_until, published_at, failed_at, last_error,
				kafka_topic, kafka_partition, kafka_offset, headers, lease_holder)
				VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)`,
				e.id, e.aggType, e.aggID, e.typ, e.payload, t(e.created), t(available), e.attempts, token,
				opt(e.leaseUntil), opt(e.published), opt(e.failed), lastErr, topic, part, off,
				`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, holder)
			if err != nil {
				return fmt.Errorf("seeding %s: %w", e.id, err)
			}
		}
		inbox := pgx.Identifier{schema, "consumed_event"}.Sanitize()
		for i, c := range []struct {
			consumer, id string
			at           time.Duration
		}{
			{"billing", ID('e', 1), -118 * time.Minute},
			{"billing", ID('e', 2), -35 * time.Second},
			{"billing", ID('e', 3), -25 * time.Second},
			{"shipping", ID('e', 2), -38 * time.Second},
		} {
			if _, err := tx.Exec(ctx, `INSERT INTO `+inbox+` (consumer_name, event_id, consumed_at) VALUES ($1,$2,$3)`,
				c.consumer, c.id, t(c.at)); err != nil {
				return fmt.Errorf("seeding inbox row %d: %w", i, err)
			}
		}
		// Heartbeats (migration 010): relay-a beats, relay-c is paused, relay-b
		// stopped beating three minutes ago (gone); the pod holding a lease has
		// no heartbeat row (a relay older than 010: "leasing").
		relays := pgx.Identifier{schema, "outbox_relay"}.Sanitize()
		for i, r := range []struct {
			holder, state string
			seen          time.Duration
			inFlight      int
		}{
			{"relay-a:4242", "running", -2 * time.Second, 1},
			{"relay-c:310", "paused", -time.Second, 0},
			{"relay-b:77", "running", -3 * time.Minute, 0},
		} {
			if _, err := tx.Exec(ctx, `INSERT INTO `+relays+` (holder, db_user, state, started_at, seen_at, interval_ms,
				in_flight, version, ordering, batch_size) VALUES ($1, 'outboxtop_relay', $2, $3, $4, 5000, $5, 'v1.4.0', 'aggregate', 1000)`,
				r.holder, r.state, t(-2*time.Hour), t(r.seen), r.inFlight); err != nil {
				return fmt.Errorf("seeding heartbeat %d: %w", i, err)
			}
		}
		return nil
	})
}
