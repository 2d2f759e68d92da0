package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/wire"
)

// Archived is not one of the outbox's states: it names the rows in
// outbox_event_archive, which List and Detail read like a state.
const Archived wire.State = "archived"

// Sentinel errors callers branch on.
var (
	// ErrReadOnly: the Inspector was made with ReadOnly and an action was asked for.
	ErrReadOnly = errors.New("read-only mode: actions are refused")
	// ErrNoTarget: an action without ids and without a filter (set Filter.All to
	// mean every eligible event).
	ErrNoTarget = errors.New("no target: name event ids or a filter")
	// ErrReasonRequired: park and skip need a reason.
	ErrReasonRequired = errors.New("a reason is required")
	// ErrNotFound: Detail of an id that is in neither outbox_event nor the archive.
	ErrNotFound = errors.New("event not found")
	// ErrInvalidRequest: a Request, ListOptions or count that cannot be carried
	// out as asked, refused before anything is read — an id that is not an event
	// id, a From state the action does not apply to, an unknown state or sort, a
	// forged page cursor, a filter Filter.Validate refuses. The error's text says
	// which; ErrNoTarget and ErrReasonRequired are reported on their own.
	ErrInvalidRequest = errors.New("invalid request")
)

// invalidRequest is an error that is ErrInvalidRequest and says why.
type invalidRequest struct{ err error }

func (e invalidRequest) Error() string   { return e.err.Error() }
func (e invalidRequest) Unwrap() []error { return []error{ErrInvalidRequest, e.err} }

// invalidf returns an error wrapping ErrInvalidRequest with a message of its own.
func invalidf(format string, args ...any) error {
	return invalidRequest{fmt.Errorf(format, args...)}
}

// Inspector reads the outbox in one schema and performs the triage actions. It is
// safe for concurrent use.
type Inspector struct {
	pool     *pgxpool.Pool
	schema   string
	readOnly bool
	// q are the statements (sql/*.sql), qualified for schema.
	q *pgsql.Templates
	// outbox is outbox_event's qualified, quoted name, for the statements
	// that take the table as a parameter (a regclass).
	outbox string
	// caps bounds what a Snapshot reads (nil: defaultCaps); tests set smaller ones.
	caps *snapCaps
	// pub bounds the published counts (nil: the production caps, pubCaps).
	pub *pubCaps
	// floor: where the next Snapshot's pass starts (floor.go).
	floor floorState
}

// Option configures an Inspector.
type Option func(*Inspector)

// ReadOnly makes Do and the retention helpers return ErrReadOnly.
func ReadOnly() Option { return func(i *Inspector) { i.readOnly = true } }

// New returns an Inspector on schema (outboxtop's tables, migrated).
func New(pool *pgxpool.Pool, schema string, opts ...Option) (*Inspector, error) {
	if err := wire.ValidateSchema(schema); err != nil {
		return nil, err
	}
	i := &Inspector{
		pool:   pool,
		schema: schema,
		q:      parseStatements(schema),
		outbox: pgsql.Name(schema, "outbox_event"),
	}
	for _, o := range opts {
		o(i)
	}
	return i, nil
}

// Schema is the schema the Inspector reads.
func (i *Inspector) Schema() string { return i.schema }

// IsReadOnly reports whether actions are refused.
func (i *Inspector) IsReadOnly() bool { return i.readOnly }

// Count is a number that may be an estimate. Estimate is true when the value comes
// from the planner's statistics or an extrapolation rather than counting rows.
type Count struct {
	Value    int64 `json:"value"`
	Estimate bool  `json:"estimate"`
	// Bound, when set, says Value is a bound of the truth rather than the
	// truth (a count that stopped at its cap): shown "≥" or "≤" before it.
	Bound Bound `json:"bound,omitempty"`
	// AtLeast, on an estimate that has one, is the rows counted: the truth is
	// at least this (PublishedRecent's windows).
	AtLeast int64 `json:"at_least,omitempty"`
}

func (c Count) String() string { return c.Mark() + strconv.FormatInt(c.Value, 10) }

// Mark is what text shows before the value: the bound's "≥" or "≤", "~" before an
// estimate, else nothing.
func (c Count) Mark() string {
	switch {
	case c.Bound != Exact:
		return c.Bound.Mark()
	case c.Estimate:
		return "~"
	}
	return ""
}

// Age is a duration that reads as fractional seconds in JSON.
type Age time.Duration

// Duration returns a as a time.Duration.
func (a Age) Duration() time.Duration { return time.Duration(a) }

// MarshalJSON writes seconds, with millisecond precision.
func (a Age) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(a).Round(time.Millisecond).Seconds(), 'f', -1, 64)), nil
}

// UnmarshalJSON reads seconds.
func (a *Age) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*a = Age(time.Duration(s * float64(time.Second)))
	return nil
}

// String is a in Go's duration notation to the millisecond ("1m30.5s"); an age
// held at AgeLimit reads "285 years or more".
func (a Age) String() string {
	switch {
	case a >= AgeLimit:
		return atLimit
	case a <= -AgeLimit:
		return "-(" + atLimit + ")"
	}
	return time.Duration(a).Round(time.Millisecond).String()
}

// countCapped counts the rows of query (a SELECT of anything, without LIMIT) exactly
// up to limit rows; past that it returns the planner's estimate, marked as such.
func countCapped(ctx context.Context, q querier, query string, limit int64, args ...any) (Count, error) {
	var n int64
	capped := "SELECT count(*) FROM (" + query + " LIMIT " + strconv.FormatInt(limit+1, 10) + ") capped"
	if err := q.QueryRow(ctx, capped, args...).Scan(&n); err != nil {
		return Count{}, err
	}
	if n <= limit {
		return Count{Value: n}, nil
	}
	est, err := pgsql.EstimatedRows(ctx, q, query, args...)
	if err != nil {
		return Count{}, err
	}
	if est < n {
		est = n
	}
	return Count{Value: est, Estimate: true}, nil
}

// querier is what both a pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}
