package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// row is an outbox_event row built by hand; times are offsets from now (negative:
// in the past); nil pointers are NULL.
type row struct {
	id, aggType, aggID, eventType string
	created, available            time.Duration
	attempts                      int
	leaseToken                    string
	leaseUntil                    *time.Duration
	published, failed             *time.Duration
	lastError                     string
}

func ago(d time.Duration) *time.Duration { v := -d; return &v }
func in(d time.Duration) *time.Duration  { return &d }

type bundle struct {
	pool *pgxpool.Pool
	in   *inspect.Inspector
	ctx  context.Context
}

func setup(t *testing.T, rows ...row) *bundle {
	t.Helper()
	pool, _ := testenv.Pool(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{pool: pool, in: in, ctx: context.Background()}
	b.insert(t, rows...)
	return b
}

// exec runs statements in order, failing the test on the first error.
func (b *bundle) exec(t *testing.T, statements ...string) {
	t.Helper()
	for _, q := range statements {
		if _, err := b.pool.Exec(b.ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

func (b *bundle) insert(t *testing.T, rows ...row) {
	t.Helper()
	for _, r := range rows {
		if r.aggType == "" {
			r.aggType = "order"
		}
		if r.eventType == "" {
			r.eventType = "OrderPlaced"
		}
		var token any
		if r.leaseToken != "" {
			token = r.leaseToken
		}
		var lastErr any
		if r.lastError != "" {
			lastErr = r.lastError
		}
		_, err := b.pool.Exec(b.ctx, `INSERT INTO outbox_event
			(event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts,
			 lease_token, lease_until, published_at, failed_at, last_error, kafka_topic)
			VALUES ($1, $2, $3, $4, '{"n": 1}', now() + $5::interval, now() + $6::interval, $7,
			 $8::uuid, now() + $9::interval, now() + $10::interval, now() + $11::interval, $12,
			 CASE WHEN $10::interval IS NOT NULL THEN 'outbox.order' END)`,
			r.id, r.aggType, r.aggID, r.eventType, iv(&r.created), iv(&r.available), r.attempts,
			token, iv(r.leaseUntil), iv(r.published), iv(r.failed), lastErr)
		if err != nil {
			t.Fatalf("inserting %s: %v", r.id, err)
		}
	}
}

func iv(d *time.Duration) any {
	if d == nil {
		return nil
	}
	return d.String()
}

// Ids: a readable prefix per state, so failures name the row.
const (
	idReady1    = "a0000000-0000-0000-0000-000000000001"
	idReady2    = "a0000000-0000-0000-0000-000000000002"
	idExpired   = "a1000000-0000-0000-0000-000000000001"
	idSched     = "b0000000-0000-0000-0000-000000000001"
	idBehindSch = "b1000000-0000-0000-0000-000000000001"
	idLeased    = "c0000000-0000-0000-0000-000000000001"
	idFailed    = "d0000000-0000-0000-0000-000000000001"
	idBehindF1  = "d1000000-0000-0000-0000-000000000001"
	idBehindF2  = "d1000000-0000-0000-0000-000000000002"
	idFailed2   = "d2000000-0000-0000-0000-000000000001"
	idPub30s    = "e0000000-0000-0000-0000-000000000001"
	idPub3m     = "e0000000-0000-0000-0000-000000000002"
	idPub2h     = "e0000000-0000-0000-0000-000000000003"
	lease       = "f0000000-0000-0000-0000-00000000000f"
)

// everyState is one outbox with each state, an expired lease and two blocked
// aggregates (order/sch behind a scheduled event, order/dead behind a failed one).
func everyState() []row {
	return []row{
		{id: idReady1, aggID: "r1", created: -10 * time.Minute, available: -10 * time.Minute},
		{id: idReady2, aggID: "r2", eventType: "OrderPaid", created: -2 * time.Minute, available: -time.Minute},
		{id: idExpired, aggID: "x1", created: -5 * time.Minute, available: -5 * time.Minute, attempts: 1,
			leaseToken: lease, leaseUntil: ago(time.Minute)},
		{id: idSched, aggID: "sch", created: -3 * time.Minute, available: 10 * time.Minute, attempts: 2, lastError: "broker said no"},
		{id: idBehindSch, aggID: "sch", created: -time.Minute, available: -time.Minute},
		{id: idLeased, aggID: "l1", created: -time.Minute, available: -time.Minute, attempts: 1,
			leaseToken: lease, leaseUntil: in(time.Minute)},
		{id: idFailed, aggID: "dead", eventType: "OrderPaid", created: -20 * time.Minute, attempts: 10,
			failed: ago(5 * time.Minute), lastError: "MESSAGE_TOO_LARGE: record too big"},
		{id: idBehindF1, aggID: "dead", created: -19 * time.Minute},
		{id: idBehindF2, aggID: "dead", created: -18 * time.Minute},
		{id: idFailed2, aggType: "invoice", aggID: "i1", eventType: "InvoiceSent", created: -7 * time.Minute,
			attempts: 1, failed: ago(6 * time.Minute), lastError: "MESSAGE_TOO_LARGE: record too big"},
		{id: idPub30s, aggID: "p1", created: -time.Minute, attempts: 1, published: ago(30 * time.Second)},
		{id: idPub3m, aggID: "p1", created: -4 * time.Minute, attempts: 1, published: ago(3 * time.Minute)},
		{id: idPub2h, aggID: "p2", eventType: "OrderPaid", created: -3 * time.Hour, attempts: 1, published: ago(2 * time.Hour)},
	}
}
