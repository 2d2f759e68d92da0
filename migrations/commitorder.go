package migrations

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/wire"
)

// CommitOrder is how outbox_event relates each aggregate's seq order, the
// order the relay publishes it in, to its commit order.
type CommitOrder string

const (
	// OrderKeep, in Options, leaves the mode as it is; a table that has none
	// recorded gets OrderDetect, whether this migrate created it or not.
	OrderKeep CommitOrder = ""
	// OrderEnforce, opt-in: an insert trigger takes the aggregate's order
	// lock and then its seq, so seq order is commit order per aggregate,
	// whatever the writers do (functions/outbox_event_commit_order.sql). The
	// price: writers of one aggregate wait for each other, transactions that
	// insert two aggregates in opposite orders can deadlock, and any role can
	// make inserts wait by taking the same advisory locks.
	OrderEnforce CommitOrder = "enforce"
	// OrderDetect, the default: no trigger, nothing on the producer's path but
	// two column defaults (writer_xid, writer_snapshot). Writers that
	// serialize on the aggregate (the seed's UPDATE of the order row before
	// its INSERT) get seq order = commit order; where two events of an
	// aggregate came from overlapping transactions, the relay marks the later
	// one unserialized (order unknown) when it meets both unpublished, and the
	// console and status count those aggregates.
	OrderDetect CommitOrder = "detect"
	// OrderOff: no trigger, and the relay marks nothing.
	OrderOff CommitOrder = "off"
)

// ParseCommitOrder reads a mode's name.
func ParseCommitOrder(s string) (CommitOrder, error) {
	switch o := CommitOrder(s); o {
	case OrderEnforce, OrderDetect, OrderOff:
		return o, nil
	}
	return "", fmt.Errorf("commit order %q: want enforce, detect or off", s)
}

// OrderLockKey is the first key of the two-key advisory locks of schema's
// outbox_event (the trigger's and outbox_lock_aggregates'; pg_locks shows it
// as classid, an oid): one per schema, so two schemas in one database never
// wait for each other.
func OrderLockKey(schema string) int32 {
	h := fnv.New32a()
	h.Write([]byte("outboxtop.order." + schema))
	return int32(h.Sum32())
}

// orderComment marks the order sequence with the mode an operator chose, so
// that a later migrate keeps it (only OrderEnforce has a trigger to show it).
const orderComment = "outboxtop commit order "

// CommitOrderOf reads the mode schema's outbox_event is in: OrderEnforce
// while its trigger is there, else the mode recorded on the order sequence
// (OrderDetect when none is, or outboxtop's migrations never ran there).
func CommitOrderOf(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (CommitOrder, error) {
	trigger, recorded, err := readOrder(ctx, q, schema)
	if err != nil {
		return "", err
	}
	return orderFrom(trigger, recorded)
}

// readOrder reads what the mode is made of: the commit-order trigger's
// argument (nil: no trigger) and the comment recorded on the order sequence.
func readOrder(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (trigger, recorded *string, err error) {
	err = q.QueryRow(ctx, `SELECT
		(SELECT pg_catalog.split_part(pg_catalog.encode(t.tgargs, 'escape'), '\000', 1)
		 FROM pg_catalog.pg_trigger t
		 WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgname = 'outbox_event_commit_order'),
		pg_catalog.obj_description(pg_catalog.to_regclass($2), 'pg_class')`,
		pgx.Identifier{schema, "outbox_event"}.Sanitize(), pgx.Identifier{schema, "outbox_event_order_seq"}.Sanitize()).
		Scan(&trigger, &recorded)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the commit order: %w", err)
	}
	return trigger, recorded, nil
}

// orderFrom is the mode that a trigger's argument (nil: no trigger) and the
// recorded comment say. A trigger that is not enforce's is an older
// outboxtop's detecting trigger, which the next migrate removes.
func orderFrom(trigger, recorded *string) (CommitOrder, error) {
	if trigger != nil {
		return ParseCommitOrder(*trigger)
	}
	if recorded != nil && strings.HasPrefix(*recorded, orderComment) {
		if o, err := ParseCommitOrder(strings.TrimPrefix(*recorded, orderComment)); err == nil && o != OrderEnforce {
			return o, nil
		}
	}
	return OrderDetect, nil
}

// setCommitOrder puts outbox_event in mode want (OrderKeep: the one recorded,
// else OrderDetect) and returns the mode set. Only a change to or from
// OrderEnforce (or away from an older outboxtop's detecting trigger) touches
// the table: creating or dropping the trigger takes a SHARE ROW EXCLUSIVE lock
// on outbox_event, which waits for open transactions that write it while new
// inserts queue behind it. So the lock is the transaction's first statement,
// waited for orderLockTry at a time, and tried again until orderLockTimeout:
// inserts never queue behind this for longer than a try, and it never holds
// another lock a writer or a relay could be waiting for (a deadlock with a
// relay's claim ends the try like a timeout, before PostgreSQL's deadlock
// check would pick a victim). Nothing is rewritten. Switching into or out of
// OrderEnforce moves the sequence seq will come from past the other, so seq
// keeps increasing.
func setCommitOrder(ctx context.Context, conn *pgx.Conn, schema string, want CommitOrder) (CommitOrder, error) {
	trigger, recorded, err := readOrder(ctx, conn, schema)
	if err != nil {
		return "", err
	}
	now, err := orderFrom(trigger, recorded)
	if err != nil {
		return "", err
	}
	mode := want
	if mode == OrderKeep {
		mode = now
		if recorded != nil && *recorded == orderComment+string(OrderEnforce) {
			mode = OrderEnforce
		}
	}
	wantTrigger := mode == OrderEnforce
	if (trigger != nil) == wantTrigger && (trigger == nil || *trigger == string(mode)) &&
		recorded != nil && *recorded == orderComment+string(mode) {
		return mode, nil
	}
	deadline := time.Now().Add(orderLockTimeout)
	for try := 1; ; try++ {
		err := changeCommitOrder(ctx, conn, schema, trigger != nil && *trigger == string(OrderEnforce), mode)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || (pgErr.Code != "55P03" && pgErr.Code != "40P01") {
			return mode, err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("setting commit order %s: a transaction that wrote outbox_event stayed open for %s (inserts waited at most %s at a time behind this migrate); nothing was changed: end it, or migrate again", mode, orderLockTimeout, orderLockTry)
		}
		sleepCtx(ctx, min(time.Duration(try)*50*time.Millisecond, 500*time.Millisecond))
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
}

// changeCommitOrder is one try of setCommitOrder's change, in one transaction
// whose first statement takes the table's lock.
func changeCommitOrder(ctx context.Context, conn *pgx.Conn, schema string, enforced bool, mode CommitOrder) error {
	table := pgx.Identifier{schema, "outbox_event"}.Sanitize()
	orderSeq := pgx.Identifier{schema, "outbox_event_order_seq"}.Sanitize()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp; SET LOCAL lock_timeout = '"+orderLockTry.String()+"'"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		return err
	}
	if enforced != (mode == OrderEnforce) {
		// The sequence seq comes from next starts past both (their last values,
		// not max(seq), which would read the whole table under the lock).
		var identity string
		if err := tx.QueryRow(ctx, "SELECT pg_get_serial_sequence($1, 'seq')", table).Scan(&identity); err != nil {
			return fmt.Errorf("finding the identity of seq: %w", err)
		}
		next := identity
		if mode == OrderEnforce {
			next = orderSeq
		}
		nextOf := func(seq string) string {
			return "(SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM " + seq + ")"
		}
		if _, err := tx.Exec(ctx, `SELECT setval($1::regclass, GREATEST(`+nextOf(identity)+`, `+nextOf(orderSeq)+`), false)`, next); err != nil {
			return fmt.Errorf("moving the sequence of seq: %w", err)
		}
	}
	stmts := []string{"DROP TRIGGER IF EXISTS outbox_event_commit_order ON " + table}
	if mode == OrderEnforce {
		stmts = append(stmts, "CREATE TRIGGER outbox_event_commit_order BEFORE INSERT ON "+table+
			" FOR EACH ROW EXECUTE FUNCTION "+pgx.Identifier{schema, "outbox_event_commit_order"}.Sanitize()+"('enforce')")
	}
	stmts = append(stmts, "COMMENT ON SEQUENCE "+orderSeq+" IS '"+orderComment+string(mode)+"'")
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("setting commit order %s: %w", mode, err)
		}
	}
	return tx.Commit(ctx)
}

// orderLockTimeout bounds how long a change of mode keeps trying for the
// table's lock; orderLockTry, how long one try waits (every insert that
// arrives meanwhile waits behind it, so it is short).
const (
	orderLockTimeout = 5 * time.Second
	orderLockTry     = 200 * time.Millisecond
)

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// orderTemplateData is what the commit-order functions' templates see.
func orderTemplateData(schema string) map[string]any {
	return map[string]any{"order_key": OrderLockKey(schema), "order_lock_rows": wire.OrderLockRows, "order_lock_held": wire.OrderLockRows + 1}
}
