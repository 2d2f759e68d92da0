package migrations

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/wire"
)

// CommitOrder is how outbox_event keeps each aggregate's seq order its commit
// order (functions/outbox_event_commit_order.sql says how each mode works).
type CommitOrder string

const (
	// OrderKeep, in Options, leaves the mode as it is. A table that has none
	// yet gets OrderEnforce when this migrate creates it and OrderDetect when
	// it existed already: turning the guarantee on for writers that already
	// run could make some of their transactions wait, or deadlock, where they
	// did not before, and that is the operator's call (migrate --commit-order).
	OrderKeep CommitOrder = ""
	// OrderEnforce: every insert takes its aggregate's order lock and then
	// its seq, so seq order is commit order per aggregate, whatever the
	// writers do.
	OrderEnforce CommitOrder = "enforce"
	// OrderDetect: inserts try the locks without waiting and mark the rows
	// that another open transaction of their aggregate was ahead of
	// (unserialized); the console and status count them.
	OrderDetect CommitOrder = "detect"
	// OrderOff: no trigger. seq is insertion order, and nothing checks it.
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
// that a later migrate keeps it (OrderOff has no trigger to show it).
const orderComment = "outboxtop commit order "

// CommitOrderOf reads the mode schema's outbox_event is in, from its trigger:
// OrderOff when it has none (or outboxtop's migrations never ran there).
func CommitOrderOf(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (CommitOrder, error) {
	var args *string
	err := q.QueryRow(ctx, `SELECT pg_catalog.split_part(pg_catalog.encode(t.tgargs, 'escape'), '\000', 1)
		FROM pg_catalog.pg_trigger t
		WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgname = 'outbox_event_commit_order'`,
		pgx.Identifier{schema, "outbox_event"}.Sanitize()).Scan(&args)
	if errors.Is(err, pgx.ErrNoRows) {
		return OrderOff, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the commit order: %w", err)
	}
	return ParseCommitOrder(*args)
}

// setCommitOrder puts outbox_event in mode want (OrderKeep: the one recorded,
// or, when none is, OrderEnforce for a table created by this migrate and
// OrderDetect for one that existed). A change takes a SHARE ROW EXCLUSIVE
// lock on outbox_event, which waits for the open transactions that write it
// and holds off new ones until it commits, a moment; nothing is rewritten.
// Switching into or out of OrderEnforce moves the sequence seq will come from
// past the other, so seq keeps increasing. It returns the mode set.
func setCommitOrder(ctx context.Context, conn *pgx.Conn, schema string, want CommitOrder, created bool) (CommitOrder, error) {
	table := pgx.Identifier{schema, "outbox_event"}.Sanitize()
	orderSeq := pgx.Identifier{schema, "outbox_event_order_seq"}.Sanitize()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp"); err != nil {
		return "", err
	}
	var recorded *string
	if err := tx.QueryRow(ctx, "SELECT pg_catalog.obj_description($1::regclass, 'pg_class')", orderSeq).Scan(&recorded); err != nil {
		return "", fmt.Errorf("reading the commit order: %w", err)
	}
	mode := want
	if mode == OrderKeep {
		switch {
		case recorded != nil && strings.HasPrefix(*recorded, orderComment):
			if mode, err = ParseCommitOrder(strings.TrimPrefix(*recorded, orderComment)); err != nil {
				return "", err
			}
		case created:
			mode = OrderEnforce
		default:
			mode = OrderDetect
		}
	}
	now, err := CommitOrderOf(ctx, tx, schema)
	if err != nil {
		return "", err
	}
	if now == mode && recorded != nil && *recorded == orderComment+string(mode) {
		return mode, nil
	}
	// Bounded: while the lock waits for an open transaction that wrote the
	// table (one idle in transaction, say), every new insert waits behind it.
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+orderLockTimeout+"'"); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return "", fmt.Errorf("setting commit order %s: a transaction that wrote outbox_event stayed open for %s (new inserts waited behind this migrate meanwhile); nothing was changed: end it, or migrate again", mode, orderLockTimeout)
		}
		return "", fmt.Errorf("locking outbox_event to change its commit order: %w", err)
	}
	if (now == OrderEnforce) != (mode == OrderEnforce) {
		// The sequence seq comes from next starts past both (their last values,
		// not max(seq), which would read the whole table under the lock).
		var identity string
		if err := tx.QueryRow(ctx, "SELECT pg_get_serial_sequence($1, 'seq')", table).Scan(&identity); err != nil {
			return "", fmt.Errorf("finding the identity of seq: %w", err)
		}
		next := identity
		if mode == OrderEnforce {
			next = orderSeq
		}
		nextOf := func(seq string) string {
			return "(SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM " + seq + ")"
		}
		if _, err := tx.Exec(ctx, `SELECT setval($1::regclass, GREATEST(`+nextOf(identity)+`, `+nextOf(orderSeq)+`), false)`, next); err != nil {
			return "", fmt.Errorf("moving the sequence of seq: %w", err)
		}
	}
	stmts := []string{"DROP TRIGGER IF EXISTS outbox_event_commit_order ON " + table}
	if mode != OrderOff {
		stmts = append(stmts, "CREATE TRIGGER outbox_event_commit_order BEFORE INSERT ON "+table+
			" FOR EACH ROW EXECUTE FUNCTION "+pgx.Identifier{schema, "outbox_event_commit_order"}.Sanitize()+
			"('"+string(mode)+"')")
	}
	stmts = append(stmts, "COMMENT ON SEQUENCE "+orderSeq+" IS '"+orderComment+string(mode)+"'")
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return "", fmt.Errorf("setting commit order %s: %w", mode, err)
		}
	}
	return mode, tx.Commit(ctx)
}

// orderLockTimeout bounds the wait for the table lock a change of mode takes.
const orderLockTimeout = "5s"

// orderWait is how long a detecting insert waits for a lock it found held
// before it marks its row: long enough for a transaction that has committed
// to release its advisory locks, which PostgreSQL does just after its row
// locks, even on a loaded machine; short against a writer that stays open.
const orderWait = "10ms"

// orderTemplateData is what the commit-order functions' templates see.
func orderTemplateData(schema string) map[string]any {
	return map[string]any{"order_key": OrderLockKey(schema), "order_lock_rows": wire.OrderLockRows, "order_lock_held": wire.OrderLockRows + 1, "order_wait": orderWait}
}
