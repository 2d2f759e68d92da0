package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/outbox"
	"github.com/outboxtop/outboxtop/wire"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The DB interface composes with every pgx handle.
var (
	_ outbox.DB = pgx.Tx(nil)
	_ outbox.DB = (*pgx.Conn)(nil)
	_ outbox.DB = (*pgxpool.Pool)(nil)
)

type testBundle struct {
	pool *pgxpool.Pool
	dsn  string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool, dsn := testenv.Pool(t)
	return &testBundle{pool: pool, dsn: dsn}
}

func count(t *testing.T, pool *pgxpool.Pool, where string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox_event WHERE "+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAdd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	var id uuid.UUID
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		id, err = outbox.Add(ctx, tx, outbox.Event{
			AggregateType: "order",
			AggregateID:   "o-1",
			EventType:     "OrderPaid",
			Payload: struct {
				OrderID string `json:"order_id"`
				Cents   int    `json:"cents"`
			}{"o-1", 1250},
			Topic:   "billing.orders",
			Headers: map[string]string{"traceparent": "00-abc-def-01", "tenant": "acme"},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if id.Version() != 7 {
		t.Errorf("generated event id %s is version %d, want 7", id, id.Version())
	}

	var (
		aggType, aggID, evType string
		payload, headers       map[string]any
		topic                  *string
		createdAt, availableAt time.Time
		attempts               int
		ready                  bool
	)
	err = b.pool.QueryRow(ctx, `SELECT aggregate_type, aggregate_id, event_type, payload, topic, headers,
			created_at, available_at, attempts, `+wire.ReadySQL+`
		FROM outbox_event WHERE event_id = $1`, id).
		Scan(&aggType, &aggID, &evType, &payload, &topic, &headers, &createdAt, &availableAt, &attempts, &ready)
	if err != nil {
		t.Fatal(err)
	}
	if aggType != "order" || aggID != "o-1" || evType != "OrderPaid" {
		t.Errorf("row = %s/%s/%s", aggType, aggID, evType)
	}
	if payload["order_id"] != "o-1" || payload["cents"] != float64(1250) {
		t.Errorf("payload = %v", payload)
	}
	if topic == nil || *topic != "billing.orders" {
		t.Errorf("topic = %v", topic)
	}
	if headers["traceparent"] != "00-abc-def-01" || headers["tenant"] != "acme" || len(headers) != 2 {
		t.Errorf("headers = %v", headers)
	}
	if !availableAt.Equal(createdAt) {
		t.Errorf("available_at %v, want the transaction's now() %v", availableAt, createdAt)
	}
	if attempts != 0 || !ready {
		t.Errorf("attempts = %d, ready = %v; want a fresh ready event", attempts, ready)
	}
}

func TestAddKeepsGivenIDAndRawJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	want := uuid.New()
	raw := json.RawMessage(`{"a": [1, 2, {"b": null}], "s": "x\\u0000y"}`)
	got, err := outbox.Add(ctx, b.pool, outbox.Event{ID: want, AggregateType: "a", AggregateID: "1", EventType: "E", Payload: raw})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Add returned %s, want the given %s", got, want)
	}
	var same bool
	var headersNull bool
	if err := b.pool.QueryRow(ctx, `SELECT payload = $2::jsonb, headers IS NULL FROM outbox_event WHERE event_id = $1`,
		want, string(raw)).Scan(&same, &headersNull); err != nil {
		t.Fatal(err)
	}
	if !same || !headersNull {
		t.Errorf("payload stored as given = %v, headers NULL = %v", same, headersNull)
	}

	// A Go string is a value, not JSON text.
	id, err := outbox.Add(ctx, b.pool, outbox.Event{AggregateType: "a", AggregateID: "1", EventType: "E", Payload: "not json"})
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := b.pool.QueryRow(ctx, `SELECT payload #>> '{}' FROM outbox_event WHERE event_id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s != "not json" {
		t.Errorf("string payload stored as %q", s)
	}
}

func TestAddManyCopiesTenThousand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	const n = 10_000
	evs := make([]outbox.Event, n)
	for i := range evs {
		evs[i] = outbox.Event{
			AggregateType: "order",
			AggregateID:   fmt.Sprintf("o-%d", i%100),
			EventType:     "OrderPlaced",
			Payload:       map[string]int{"i": i},
		}
		if i%10 == 0 {
			evs[i].Headers = map[string]string{"n": fmt.Sprint(i)}
		}
	}
	var ids []uuid.UUID
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		ids, err = outbox.AddMany(ctx, tx, evs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("AddMany returned %d ids, want %d", len(ids), n)
	}

	// Every row is there, in the order given (seq), with its own payload.
	rows, err := b.pool.Query(ctx, `SELECT event_id, (payload->>'i')::int, headers->>'n', available_at = created_at
		FROM outbox_event ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for rows.Next() {
		var (
			id       uuid.UUID
			pi       int
			header   *string
			availNow bool
		)
		if err := rows.Scan(&id, &pi, &header, &availNow); err != nil {
			t.Fatal(err)
		}
		if i < n && (id != ids[i] || pi != i) {
			t.Fatalf("row %d: event %s payload i=%d, want %s i=%d", i, id, pi, ids[i], i)
		}
		if (i%10 == 0) != (header != nil) {
			t.Fatalf("row %d: header n = %v", i, header)
		}
		if !availNow {
			t.Fatalf("row %d: available_at is not the transaction's now()", i)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("%d rows in outbox_event, want %d", i, n)
	}
}

func TestValidationWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	valid := outbox.Event{AggregateType: "order", AggregateID: "o-1", EventType: "OrderPaid", Payload: map[string]int{"x": 1}}
	with := func(f func(*outbox.Event)) outbox.Event {
		ev := valid
		f(&ev)
		return ev
	}
	cases := map[string]outbox.Event{
		"empty aggregate type":  with(func(e *outbox.Event) { e.AggregateType = "" }),
		"empty aggregate id":    with(func(e *outbox.Event) { e.AggregateID = "" }),
		"empty event type":      with(func(e *outbox.Event) { e.EventType = "" }),
		"NUL in aggregate id":   with(func(e *outbox.Event) { e.AggregateID = "o\x001" }),
		"invalid UTF-8":         with(func(e *outbox.Event) { e.EventType = "Order\xff" }),
		"invalid raw JSON":      with(func(e *outbox.Event) { e.Payload = json.RawMessage(`{"x":`) }),
		"empty raw JSON":        with(func(e *outbox.Event) { e.Payload = []byte{} }),
		"nil payload":           with(func(e *outbox.Event) { e.Payload = nil }),
		"unmarshalable payload": with(func(e *outbox.Event) { e.Payload = map[string]any{"f": func() {}} }),
		"jsonb NUL escape":      with(func(e *outbox.Event) { e.Payload = json.RawMessage(`{"x":"a\u0000b"}`) }),
		"NUL in marshaled":      with(func(e *outbox.Event) { e.Payload = map[string]string{"x": "a\x00b"} }),
		"illegal topic":         with(func(e *outbox.Event) { e.Topic = "orders/eu" }),
		"reserved header":       with(func(e *outbox.Event) { e.Headers = map[string]string{"event_id": "x"} }),
		"look-alike header":     with(func(e *outbox.Event) { e.Headers = map[string]string{"EVENT_İD": "x"} }),
		"invisible in header":   with(func(e *outbox.Event) { e.Headers = map[string]string{"event_id\u034f": "x"} }),
		"empty header key":      with(func(e *outbox.Event) { e.Headers = map[string]string{"": "x"} }),
		"NUL in header value":   with(func(e *outbox.Event) { e.Headers = map[string]string{"k": "a\x00"} }),
	}
	for name, ev := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tx, err := b.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := outbox.Add(ctx, tx, ev); !errors.Is(err, outbox.ErrInvalidEvent) {
				t.Errorf("Add: err = %v, want ErrInvalidEvent", err)
			}
			// One bad event among good ones: the whole batch is refused.
			if _, err := outbox.AddMany(ctx, tx, []outbox.Event{valid, ev, valid}); !errors.Is(err, outbox.ErrInvalidEvent) {
				t.Errorf("AddMany: err = %v, want ErrInvalidEvent", err)
			}
			// Nothing reached the server, so the caller's transaction is still usable.
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM outbox_event").Scan(&n); err != nil {
				t.Fatalf("transaction unusable after a refused event: %v", err)
			}
			if n != 0 {
				t.Errorf("%d rows written for an invalid event", n)
			}
		})
	}
}

func TestCallerRollbackWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	errAbandon := errors.New("order cannot be confirmed")
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := outbox.Add(ctx, tx, outbox.Event{AggregateType: "order", AggregateID: "o-1", EventType: "OrderPaid", Payload: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		evs := make([]outbox.Event, 50)
		for i := range evs {
			evs[i] = outbox.Event{AggregateType: "order", AggregateID: "o-2", EventType: "OrderPlaced", Payload: i}
		}
		if _, err := outbox.AddMany(ctx, tx, evs); err != nil {
			return err
		}
		var inTx int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM outbox_event").Scan(&inTx); err != nil {
			return err
		}
		if inTx != 51 {
			t.Errorf("inside the transaction: %d rows, want 51", inTx)
		}
		return errAbandon
	})
	if !errors.Is(err, errAbandon) {
		t.Fatalf("BeginFunc: %v", err)
	}
	if n := count(t, b.pool, "true"); n != 0 {
		t.Errorf("%d rows after the caller rolled back, want 0", n)
	}
}

func TestDelayedAvailableAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	later := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	id, err := outbox.Add(ctx, b.pool, outbox.Event{AggregateType: "order", AggregateID: "o-1", EventType: "Reminder", Payload: 1, AvailableAt: later})
	if err != nil {
		t.Fatal(err)
	}
	// A batch that mixes delayed and immediate events.
	ids, err := outbox.AddMany(ctx, b.pool, []outbox.Event{
		{AggregateType: "order", AggregateID: "o-2", EventType: "Now", Payload: 1},
		{AggregateType: "order", AggregateID: "o-2", EventType: "Later", Payload: 2, AvailableAt: later},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id    uuid.UUID
		state string
	}{{id, wire.ScheduledSQL}, {ids[0], wire.ReadySQL}, {ids[1], wire.ScheduledSQL}} {
		if count(t, b.pool, "event_id = $1 AND "+c.state, c.id) != 1 {
			t.Errorf("event %s not in state %q", c.id, c.state)
		}
	}
	if count(t, b.pool, "available_at = $1", later) != 2 {
		t.Errorf("available_at not stored as given")
	}
}

func TestWriterSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	conn, err := pgx.Connect(ctx, b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, "billing", nil); err != nil {
		t.Fatal(err)
	}
	w := outbox.Writer{Schema: "billing"}
	if _, err := w.Add(ctx, conn, outbox.Event{AggregateType: "invoice", AggregateID: "i-1", EventType: "InvoiceIssued", Payload: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddMany(ctx, conn, []outbox.Event{
		{AggregateType: "invoice", AggregateID: "i-2", EventType: "InvoiceIssued", Payload: 2},
		{AggregateType: "invoice", AggregateID: "i-3", EventType: "InvoiceIssued", Payload: 3},
	}); err != nil {
		t.Fatal(err)
	}
	var inBilling, inPublic int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM billing.outbox_event), (SELECT count(*) FROM public.outbox_event)").
		Scan(&inBilling, &inPublic); err != nil {
		t.Fatal(err)
	}
	if inBilling != 3 || inPublic != 0 {
		t.Errorf("billing has %d events, public %d; want 3 and 0", inBilling, inPublic)
	}
}
