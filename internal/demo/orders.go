package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/outbox"
)

// The demo's event types. Order events have aggregate type "order" (topic
// outbox.order by default); a paid order also captures a payment, aggregate
// type "payment".
const (
	OrderPlaced     = "OrderPlaced"
	OrderItemAdded  = "OrderItemAdded"
	OrderPaid       = "OrderPaid"
	OrderShipped    = "OrderShipped"
	OrderDelivered  = "OrderDelivered"
	OrderCancelled  = "OrderCancelled"
	PaymentCaptured = "PaymentCaptured"
	// OrderPoisoned is the type of an injected poison event.
	OrderPoisoned = "OrderPoisoned"
)

// Aggregate types written by the order service.
const (
	AggregateOrder   = "order"
	AggregatePayment = "payment"
)

// OrderConfig configures the order service.
type OrderConfig struct {
	// Schema holds the demo's tables; empty means DefaultSchema.
	Schema string
	// Outbox writes the events (its Schema names outboxtop's schema).
	Outbox outbox.Writer
	// Rate is the target number of events per second; 0 pauses. SetRate
	// changes it while running.
	Rate float64
	// Workers is the number of transactions in flight at once; 0 means 4.
	Workers int
	// OpenOrders is how many orders are kept in progress at once; 0 means 500.
	OpenOrders int
	// HotOrders is the number of long-lived orders that receive a large share
	// of the traffic (items keep being added); 0 means 3, negative none.
	HotOrders int
	// PoisonBytes is the payload size of an injected poison event, meant to be
	// larger than the relay accepts; 0 means 2 MiB.
	PoisonBytes int
	// Logger receives failed transactions; nil discards.
	Logger *slog.Logger
}

// Orders simulates an order service: each order change (an INSERT or UPDATE
// on orders) and its events are one transaction, written with package outbox.
type Orders struct {
	pool     *pgxpool.Pool
	cfg      OrderConfig
	counters *Counters
	table    string
	rate     atomic.Uint64 // float64 bits
	hot      []string

	mu   sync.Mutex
	open []string // orders not yet delivered or cancelled
	idx  map[string]int
}

// NewOrders returns an order service writing through pool and counting into
// counters (which may be shared with a Consumer).
func NewOrders(pool *pgxpool.Pool, counters *Counters, cfg OrderConfig) (*Orders, error) {
	if cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0) {
		return nil, fmt.Errorf("rate must be a number of events per second ≥ 0, not %v", cfg.Rate)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.OpenOrders <= 0 {
		cfg.OpenOrders = 500
	}
	if cfg.HotOrders == 0 {
		cfg.HotOrders = 3
	}
	if cfg.PoisonBytes <= 0 {
		cfg.PoisonBytes = 2 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	o := &Orders{pool: pool, cfg: cfg, counters: counters, table: ident(cfg.Schema) + ".orders", idx: map[string]int{}}
	o.SetRate(cfg.Rate)
	for i := 1; i <= cfg.HotOrders; i++ {
		o.hot = append(o.hot, fmt.Sprintf("hot-%d", i))
	}
	return o, nil
}

// SetRate changes the target number of events per second; 0 pauses.
func (o *Orders) SetRate(perSecond float64) {
	if perSecond < 0 || math.IsNaN(perSecond) {
		perSecond = 0
	}
	o.rate.Store(math.Float64bits(perSecond))
}

// Rate returns the target number of events per second.
func (o *Orders) Rate() float64 { return math.Float64frombits(o.rate.Load()) }

// HotOrders returns the ids of the hot orders.
func (o *Orders) HotOrders() []string { return append([]string(nil), o.hot...) }

// Run creates the hot orders, then writes order changes at the configured
// rate until ctx ends. It returns nil when ctx ends, and an error only when
// the hot orders cannot be created.
func (o *Orders) Run(ctx context.Context) error {
	if err := o.Prepare(ctx); err != nil {
		return err
	}
	tokens := make(chan struct{}, o.cfg.Workers)
	var inflight atomic.Int64
	var wg sync.WaitGroup
	// A transaction under way when ctx ends is finished, not cancelled, so
	// the counters match what was committed.
	stepCtx := context.WithoutCancel(ctx)
	for range o.cfg.Workers {
		wg.Go(func() {
			for range tokens {
				if err := o.Step(stepCtx); err != nil {
					o.cfg.Logger.Warn("order service: transaction failed", "err", err)
				}
				inflight.Add(-1)
			}
		})
	}
	defer wg.Wait()
	defer close(tokens)

	// Pace by what was committed: due = rate × elapsed − committed − in flight,
	// so events that take two rows (a payment) or fail are accounted for.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	rate := o.Rate()
	start, base := time.Now(), o.counters.Snapshot().Committed
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			if r := o.Rate(); r != rate {
				rate, start, base = r, now, o.counters.Snapshot().Committed
			}
			s := o.counters.Snapshot()
			target := int64(rate * now.Sub(start).Seconds())
			due := target - (s.Committed - base) - inflight.Load()
			// Fell far behind (a slow database)? Do not burst to catch up.
			if lag := int64(rate / 2); due > lag+int64(o.cfg.Workers) {
				start, base = now, s.Committed
			}
			for ; due > 0; due-- {
				select {
				case tokens <- struct{}{}:
					inflight.Add(1)
				default:
					due = 0
				}
			}
		}
	}
}

// orderEvent is the payload of an order event.
type orderEvent struct {
	OrderID    string `json:"order_id"`
	CustomerID string `json:"customer_id"`
	Status     string `json:"status"`
	Items      int    `json:"items"`
	TotalCents int64  `json:"total_cents"`
	Version    int    `json:"version"`
}

type paymentEvent struct {
	PaymentID   string `json:"payment_id"`
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
}

// Step makes one order change and commits it with its events: a new order, an
// item added to a hot or placed order, a payment, a shipment, a delivery or a
// cancellation.
func (o *Orders) Step(ctx context.Context) error {
	var events int
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		var err error
		events, err = o.change(ctx, tx)
		return err
	})
	if err != nil {
		o.counters.add(func(s *Stats) { s.WriteErrors++ })
		return err
	}
	o.counters.add(func(s *Stats) { s.Committed += int64(events) })
	return nil
}

func (o *Orders) change(ctx context.Context, tx pgx.Tx) (int, error) {
	if len(o.hot) > 0 && mrand.IntN(5) == 0 {
		return o.advance(ctx, tx, o.hot[mrand.IntN(len(o.hot))])
	}
	o.mu.Lock()
	n := len(o.open)
	var id string
	if n > 0 {
		id = o.open[mrand.IntN(n)]
	}
	o.mu.Unlock()
	if n == 0 || n < o.cfg.OpenOrders && mrand.IntN(4) == 0 {
		return o.place(ctx, tx, "o-"+randomHex(6), false)
	}
	return o.advance(ctx, tx, id)
}

func (o *Orders) place(ctx context.Context, tx pgx.Tx, id string, hot bool) (int, error) {
	ev := orderEvent{OrderID: id, CustomerID: fmt.Sprintf("c-%04d", mrand.IntN(2000)), Status: "placed",
		Items: 1 + mrand.IntN(4), Version: 1}
	ev.TotalCents = int64(ev.Items) * int64(500+mrand.IntN(5000))
	tag, err := tx.Exec(ctx, `INSERT INTO `+o.table+` (order_id, customer_id, status, items, total_cents, hot, version)
		VALUES ($1, $2, $3, $4, $5, $6, 1) ON CONFLICT (order_id) DO NOTHING`,
		ev.OrderID, ev.CustomerID, ev.Status, ev.Items, ev.TotalCents, hot)
	if err != nil {
		return 0, fmt.Errorf("placing order %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, nil // a hot order that exists already
	}
	if _, err := o.cfg.Outbox.Add(ctx, tx, orderOutboxEvent(OrderPlaced, ev)); err != nil {
		return 0, err
	}
	if !hot {
		o.markOpen(id, true)
	}
	return 1, nil
}

// advance moves an order one step along its life. Locking its row first
// serialises the writers of one order, so its events' seq order is their
// commit order.
func (o *Orders) advance(ctx context.Context, tx pgx.Tx, id string) (int, error) {
	var ev orderEvent
	var hot bool
	err := tx.QueryRow(ctx, `SELECT order_id, customer_id, status, items, total_cents, version, hot
		FROM `+o.table+` WHERE order_id = $1 FOR UPDATE`, id).
		Scan(&ev.OrderID, &ev.CustomerID, &ev.Status, &ev.Items, &ev.TotalCents, &ev.Version, &hot)
	if errors.Is(err, pgx.ErrNoRows) {
		o.markOpen(id, false)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("locking order %s: %w", id, err)
	}
	var eventType string
	r := mrand.IntN(100)
	switch {
	case hot:
		eventType = OrderItemAdded
	case ev.Status == "placed" && r < 25:
		eventType = OrderItemAdded
	case ev.Status == "placed" && r < 90:
		eventType, ev.Status = OrderPaid, "paid"
	case ev.Status == "placed":
		eventType, ev.Status = OrderCancelled, "cancelled"
	case ev.Status == "paid" && r < 92:
		eventType, ev.Status = OrderShipped, "shipped"
	case ev.Status == "paid":
		eventType, ev.Status = OrderCancelled, "cancelled"
	case ev.Status == "shipped":
		eventType, ev.Status = OrderDelivered, "delivered"
	default: // delivered or cancelled by another worker meanwhile
		o.markOpen(id, false)
		return 0, nil
	}
	if eventType == OrderItemAdded {
		ev.Items++
		ev.TotalCents += int64(500 + mrand.IntN(5000))
	}
	ev.Version++
	evs := []outbox.Event{orderOutboxEvent(eventType, ev)}
	var paymentID *string
	if eventType == OrderPaid {
		p := paymentEvent{PaymentID: "p-" + randomHex(6), OrderID: id, AmountCents: ev.TotalCents}
		paymentID = &p.PaymentID
		evs = append(evs, outbox.Event{AggregateType: AggregatePayment, AggregateID: p.PaymentID, EventType: PaymentCaptured, Payload: p})
	}
	if _, err := tx.Exec(ctx, `UPDATE `+o.table+` SET status = $2, items = $3, total_cents = $4, version = $5,
		payment_id = COALESCE($6, payment_id), updated_at = now() WHERE order_id = $1`,
		id, ev.Status, ev.Items, ev.TotalCents, ev.Version, paymentID); err != nil {
		return 0, fmt.Errorf("updating order %s: %w", id, err)
	}
	if _, err := o.cfg.Outbox.AddMany(ctx, tx, evs); err != nil {
		return 0, err
	}
	if ev.Status == "delivered" || ev.Status == "cancelled" {
		o.markOpen(id, false)
	}
	return len(evs), nil
}

func orderOutboxEvent(eventType string, ev orderEvent) outbox.Event {
	return outbox.Event{AggregateType: AggregateOrder, AggregateID: ev.OrderID, EventType: eventType, Payload: ev}
}

// Prepare creates the hot orders that do not exist yet. Run calls it; call it
// yourself before driving Step by hand.
func (o *Orders) Prepare(ctx context.Context) error {
	for _, id := range o.hot {
		var events int
		err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
			var err error
			events, err = o.place(ctx, tx, id, true)
			return err
		})
		if err != nil {
			return fmt.Errorf("creating hot order %s: %w", id, err)
		}
		o.counters.add(func(s *Stats) { s.Committed += int64(events) })
	}
	return nil
}

// InjectPoison adds, to the first hot order (or a new order when there are
// none), an event too large for the relay to publish: the relay marks it
// failed and that order's later events wait behind it until an operator
// retries or parks it. The order's version is not bumped, so Verify ignores
// the poison.
func (o *Orders) InjectPoison(ctx context.Context) (uuid.UUID, error) {
	id := "poison-" + randomHex(4)
	if len(o.hot) > 0 {
		id = o.hot[0]
	}
	payload, err := json.Marshal(map[string]string{"order_id": id, "padding": strings.Repeat("x", o.cfg.PoisonBytes)})
	if err != nil {
		return uuid.Nil, err
	}
	eventID, err := o.cfg.Outbox.Add(ctx, o.pool, outbox.Event{AggregateType: AggregateOrder, AggregateID: id,
		EventType: OrderPoisoned, Payload: json.RawMessage(payload)})
	if err != nil {
		return uuid.Nil, fmt.Errorf("injecting poison event: %w", err)
	}
	o.counters.add(func(s *Stats) { s.Poisoned++ })
	return eventID, nil
}

func (o *Orders) markOpen(id string, open bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i, ok := o.idx[id]
	switch {
	case open && !ok:
		o.idx[id] = len(o.open)
		o.open = append(o.open, id)
	case !open && ok:
		last := o.open[len(o.open)-1]
		o.open[i] = last
		o.idx[last] = i
		o.open = o.open[:len(o.open)-1]
		delete(o.idx, id)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
