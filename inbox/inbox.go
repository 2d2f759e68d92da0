package inbox

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/wire"
)

// Sentinel errors for records that cannot be deduplicated. Handle returns them
// (wrapped) without applying anything; the caller decides whether to skip the
// record or stop.
var (
	ErrNoEventID        = errors.New("record has no event_id header")
	ErrMalformedEventID = errors.New("record's event_id header is not a UUID")
)

// DB begins the transaction Handle runs in. *pgxpool.Pool and *pgx.Conn
// satisfy it, and so does pgx.Tx (Handle then runs in a savepoint).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// PruneDB is what Prune deletes through: *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type PruneDB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ApplyFunc makes a record's effect with tx, the transaction that also holds
// the record's inbox row. It must not commit or roll back tx.
type ApplyFunc func(ctx context.Context, tx pgx.Tx) error

// Store is the consumed_event table of one schema. The zero value uses
// wire.DefaultSchema (public).
type Store struct {
	// Schema holds consumed_event; empty means wire.DefaultSchema.
	Schema string
	// PruneBatch is how many rows one DELETE of Prune removes; 0 means 1000.
	PruneBatch int
}

var defaultStore Store

// Handle applies rec's effect at most once for consumer, using the default
// schema. See Store.Handle.
func Handle(ctx context.Context, db DB, consumer string, rec *kgo.Record, apply ApplyFunc) (bool, error) {
	return defaultStore.Handle(ctx, db, consumer, rec, apply)
}

// Prune deletes consumer's inbox rows older than olderThan, using the default
// schema. See Store.Prune.
func Prune(ctx context.Context, db PruneDB, consumer string, olderThan time.Duration) (int64, error) {
	return defaultStore.Prune(ctx, db, consumer, olderThan)
}

func (s Store) schema() string { return cmp.Or(s.Schema, wire.DefaultSchema) }

// statements are the package's SQL (sql/*.sql), one file a statement.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = pgsql.PerSchema{FS: sqlFiles, Pattern: "sql/*.sql"}

func (s Store) sql(name string) string { return statements.For(s.schema()).SQL(name) }

// EventID returns the event id carried in rec's event_id header. A record
// without one, with one that is not a UUID (or is the nil UUID), or with two
// that disagree is an error wrapping ErrNoEventID or ErrMalformedEventID.
func EventID(rec *kgo.Record) (uuid.UUID, error) {
	var (
		id    uuid.UUID
		found bool
	)
	for _, h := range rec.Headers {
		if h.Key != wire.HeaderEventID {
			continue
		}
		v, err := uuid.Parse(string(h.Value))
		if err != nil || v == uuid.Nil {
			return uuid.Nil, fmt.Errorf("%w: %.64q", ErrMalformedEventID, h.Value)
		}
		if found && v != id {
			return uuid.Nil, fmt.Errorf("%w: two event_id headers, %s and %s", ErrMalformedEventID, id, v)
		}
		id, found = v, true
	}
	if !found {
		return uuid.Nil, ErrNoEventID
	}
	return id, nil
}

// Handle runs apply for rec in one transaction with the insert of
// (consumer, event_id) into consumed_event, and only when that insert
// happened: a record seen before by this consumer is skipped and Handle
// returns false, nil. When apply or the commit fails, the inbox row goes with
// the effect, so a redelivery applies the record.
//
// Commit the record's Kafka offset after Handle returns without error, never
// before: a crash in between then means a redelivery, which Handle absorbs.
//
// Two deliveries of one record at the same time are safe: the second insert
// waits on the first's primary-key lock and, once the first commits, finds the
// conflict and skips (or, if the first rolled back, applies).
func (s Store) Handle(ctx context.Context, db DB, consumer string, rec *kgo.Record, apply ApplyFunc) (bool, error) {
	id, err := EventID(rec)
	if err != nil {
		return false, fmt.Errorf("inbox %s: %s/%d@%d: %w", consumer, rec.Topic, rec.Partition, rec.Offset, err)
	}
	return s.HandleID(ctx, db, consumer, id, apply)
}

// HandleID is Handle for an event id obtained some other way.
func (s Store) HandleID(ctx context.Context, db DB, consumer string, eventID uuid.UUID, apply ApplyFunc) (applied bool, err error) {
	if err := checkConsumer(consumer); err != nil {
		return false, err
	}
	if eventID == uuid.Nil {
		return false, fmt.Errorf("%w: nil UUID", ErrMalformedEventID)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("inbox %s: beginning transaction: %w", consumer, err)
	}
	// Also on a panic in apply.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	tag, err := tx.Exec(ctx, s.sql("record"), consumer, eventID)
	if err != nil {
		return false, fmt.Errorf("inbox %s: recording event %s: %w", consumer, eventID, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil // seen before; the deferred rollback ends the empty transaction
	}
	if err := apply(ctx, tx); err != nil {
		return false, fmt.Errorf("inbox %s: applying event %s: %w", consumer, eventID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("inbox %s: committing event %s: %w", consumer, eventID, err)
	}
	return true, nil
}

// Prune deletes consumer's consumed_event rows recorded more than olderThan
// ago (by the database's clock), in batches of PruneBatch so no statement
// holds many locks or runs long, and returns how many it deleted.
//
// Keep olderThan well past the longest time a record can be redelivered
// (topic retention, a consumer group reset to an old offset): an event whose
// inbox row was pruned is applied again if it arrives again.
func (s Store) Prune(ctx context.Context, db PruneDB, consumer string, olderThan time.Duration) (int64, error) {
	if err := checkConsumer(consumer); err != nil {
		return 0, err
	}
	if olderThan < 0 {
		return 0, fmt.Errorf("inbox prune: negative age %v", olderThan)
	}
	batch := s.PruneBatch
	if batch <= 0 {
		batch = 1000
	}
	// One cutoff for every batch, so a prune that runs while events are being
	// consumed ends.
	var cutoff time.Time
	if err := db.QueryRow(ctx, s.sql("prune_cutoff"), olderThan.Seconds()).Scan(&cutoff); err != nil {
		return 0, fmt.Errorf("inbox %s: prune cutoff: %w", consumer, err)
	}
	// Through the schema's function where it has one (sql/prune.sql says why).
	var hasFunction bool
	if err := db.QueryRow(ctx, s.sql("prune_function"),
		pgx.Identifier{s.schema(), "outboxtop_inbox_prune"}.Sanitize()+"(text, timestamptz, integer)").Scan(&hasFunction); err != nil {
		return 0, fmt.Errorf("inbox %s: pruning: %w", consumer, err)
	}
	var total int64
	for {
		var n int64
		var err error
		if hasFunction {
			err = db.QueryRow(ctx, s.sql("prune"), consumer, cutoff, batch).Scan(&n)
		} else {
			var tag pgconn.CommandTag
			tag, err = db.Exec(ctx, s.sql("prune_direct"), consumer, cutoff, batch)
			n = tag.RowsAffected()
		}
		if err != nil {
			return total, fmt.Errorf("inbox %s: pruning: %w", consumer, err)
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}

func checkConsumer(name string) error {
	if name == "" {
		return errors.New("inbox: empty consumer name")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return errors.New("inbox: consumer name contains a NUL byte")
	}
	return nil
}

// HandleID is Handle for an event id obtained some other way, using the
// default schema.
func HandleID(ctx context.Context, db DB, consumer string, eventID uuid.UUID, apply ApplyFunc) (bool, error) {
	return defaultStore.HandleID(ctx, db, consumer, eventID, apply)
}
