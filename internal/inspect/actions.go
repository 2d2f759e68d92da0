package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/wire"
)

// Action is one of the triage actions (see the package doc for what each does).
type Action string

// The actions. Their string forms are the CLI's command names.
const (
	Retry      Action = "retry"
	ResetLease Action = "reset-lease"
	Park       Action = "park"
	Skip       Action = "skip"
	Archive    Action = "archive"
	Replay     Action = "replay"
)

// Actions lists every action.
var Actions = []Action{Retry, ResetLease, Park, Skip, Archive, Replay}

// Sources are the states an action applies to; a row in any other state is left
// alone. Skip applies to failed or scheduled events that head their aggregate; replay
// to published events and to archived ones.
func (a Action) Sources() []wire.State {
	switch a {
	case Retry, Skip:
		return []wire.State{wire.Failed, wire.Scheduled}
	case ResetLease:
		return []wire.State{wire.Leased}
	case Park:
		return []wire.State{wire.Ready, wire.Scheduled, wire.Leased}
	case Archive:
		return []wire.State{wire.Published}
	case Replay:
		return []wire.State{wire.Published, Archived}
	}
	return nil
}

// ParseAction turns a command name into an Action.
func ParseAction(s string) (Action, error) {
	a := Action(s)
	if a.Sources() == nil {
		return "", fmt.Errorf("unknown action %q", s)
	}
	return a, nil
}

// Request is one action on a target: the events named by IDs and matching Filter
// (both narrow; at least one must be given unless Filter.All or the action is
// Archive), and only those still in From when it is set.
type Request struct {
	Action Action
	IDs    []string
	Filter Filter
	// From is the state the operator saw (one of Action.Sources(), or Pending for
	// ready + scheduled); rows that have left it since are not touched. Empty means
	// any of Action.Sources().
	From wire.State
	// Reason is recorded in the audit row; park and skip require one and write it
	// into last_error.
	Reason string
	// Actor is recorded in the audit row; DefaultActor(nil) when empty.
	Actor string
	// NewID makes replay insert new events with fresh ids (see the package doc).
	NewID bool
	// BatchSize bounds each archive transaction (default 1000).
	BatchSize int
}

// Plan is a dry run: how many events the action would touch now.
type Plan struct {
	Action Action `json:"action"`
	Count  int64  `json:"count"`
	// Sample holds up to SampleSize of the ids, in seq order.
	Sample []string `json:"sample"`
}

// SampleSize bounds Plan.Sample.
const SampleSize = 10

// Result is what Do did.
type Result struct {
	Action Action `json:"action"`
	// Rows is the number of events changed (moved, for archive, skip and same-id
	// replay from the archive; inserted, for replay with NewID).
	Rows int64 `json:"rows"`
	// EventIDs are the ids acted on (for replay with NewID, the new ids), at most
	// AuditIDLimit of them.
	EventIDs []string `json:"event_ids"`
	AuditID  int64    `json:"audit_id"`
	Actor    string   `json:"actor"`
	// Refused counts the events archive left in the outbox because the archive
	// holds their id already (a new event was given an archived event's id):
	// the archived row is history and is never replaced.
	Refused int64 `json:"refused,omitempty"`
}

// AuditIDLimit bounds the ids kept in Result.EventIDs and in the audit row's
// event_ids; the audit row's rows column always has the full count.
const AuditIDLimit = 1000

func (r Request) validate() error {
	if r.Action.Sources() == nil {
		return invalidf("unknown action %q", r.Action)
	}
	if err := checkActor(r.Actor); err != nil {
		return err
	}
	if err := r.Filter.Validate(); err != nil {
		return invalidRequest{err}
	}
	for _, id := range r.IDs {
		if f := (Filter{IDPrefix: id}); f.Validate() != nil || len(id) != 36 {
			return invalidf("%q is not an event id", id)
		}
	}
	if len(r.IDs) == 0 && r.Filter.IsZero() && !r.Filter.All && r.Action != Archive {
		return ErrNoTarget
	}
	if (r.Action == Park || r.Action == Skip) && strings.TrimSpace(r.Reason) == "" {
		return fmt.Errorf("%s: %w", r.Action, ErrReasonRequired)
	}
	if r.From != "" {
		ok := slices.Contains(r.Action.Sources(), r.From) ||
			r.From == wire.Pending && (r.Action == Park)
		if !ok {
			return invalidf("%s applies to %v events, not %s", r.Action, r.Action.Sources(), r.From)
		}
	}
	if r.NewID && r.Action != Replay {
		return invalidf("new id applies to replay only")
	}
	return nil
}

// fromStates is the set of states the request may touch.
func (r Request) fromStates() []wire.State {
	if r.From != "" {
		return []wire.State{r.From}
	}
	return r.Action.Sources()
}

// target builds the WHERE clause over outbox_event (or, archived, the archive) that
// selects the request's rows still in an allowed state.
func (i *Inspector) target(r Request, archived bool) where {
	var w where
	ageCol := "created_at"
	if archived {
		ageCol = "coalesce(published_at, created_at)"
	} else {
		var conds []string
		for _, s := range r.fromStates() {
			if s == Archived {
				continue
			}
			c, _ := wire.SQL(s)
			conds = append(conds, "("+c+")")
		}
		w.add(strings.Join(conds, " OR "))
		if r.Action == Skip {
			w.add(i.q.SQL("blocker", map[string]any{"row": "e"}))
		}
		if slices.Equal(r.fromStates(), []wire.State{wire.Published}) {
			ageCol = "published_at"
		}
	}
	w.addFilter(r.Filter, ageCol)
	w.addIDs(r.IDs)
	return w
}

// touches reports whether the request reads outbox_event and the archive.
func (r Request) touches() (outbox, archive bool) {
	for _, s := range r.fromStates() {
		if s == Archived {
			archive = true
		} else {
			outbox = true
		}
	}
	return
}

// DryRun counts the events r would touch if done now. It works in read-only mode.
func (i *Inspector) DryRun(ctx context.Context, r Request) (Plan, error) {
	if err := r.validate(); err != nil {
		return Plan{}, err
	}
	p := Plan{Action: r.Action, Sample: []string{}}
	err := i.eachTable(r, func(table string, archived bool) error {
		w := i.target(r, archived)
		var n int64
		var sample []string
		q := i.q.SQL("action_dry_run", map[string]any{"table": table, "where": w.sql(), "sample": SampleSize})
		if err := i.pool.QueryRow(ctx, q, w.args...).Scan(&n, &sample); err != nil {
			return fmt.Errorf("%s dry run: %w", r.Action, err)
		}
		p.Count += n
		p.Sample = append(p.Sample, sample...)
		return nil
	})
	if err != nil {
		return Plan{}, err
	}
	if len(p.Sample) > SampleSize {
		p.Sample = p.Sample[:SampleSize]
	}
	return p, nil
}

// Do performs r through the schema's action function for r.Action (migrations/functions/),
// which re-checks each event's state, changes only those rows and writes exactly
// one outbox_audit row in the same transaction; the caller needs EXECUTE on the
// function and no write privilege on any table. Do reads the ids r selects (a plain
// read, as DryRun) and hands them to the function. Archive runs in batches of
// r.BatchSize, one transaction each; its audit row, written with the first batch,
// counts every row moved so far, also when a later batch fails.
func (i *Inspector) Do(ctx context.Context, r Request) (Result, error) {
	if i.readOnly {
		return Result{}, ErrReadOnly
	}
	if err := r.validate(); err != nil {
		return Result{}, err
	}
	if r.Actor == "" {
		r.Actor = DefaultActor(nil)
	}
	filter, err := r.auditFilter()
	if err != nil {
		return Result{}, err
	}
	if r.Action == Archive {
		res := Result{Action: r.Action, Actor: r.Actor, EventIDs: []string{}}
		if err := i.archiveBatches(ctx, r, filter, &res); err != nil {
			return res, fmt.Errorf("archive: %w", lockedRows(err))
		}
		return res, nil
	}
	// A deadlock rolls the whole transaction back, audit row included, so the
	// action is simply done again (re-reading its events). The actions lock
	// their events in seq order (outboxtop_lock_events), as the relay's unblock does,
	// so none of those deadlock each other; the relay's mark and settle, or
	// someone else's session, may take the same rows in another order. The
	// pause before trying again lets the other side take the rows it won:
	// without it the next attempt could lock one of them first (PostgreSQL
	// hands a row freed by an abort to whoever asks first) and deadlock again.
	var res Result
	for attempt := 1; ; attempt++ {
		res, err = i.do(ctx, r, filter)
		if !isDeadlock(err) || attempt == deadlockRetries {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", r.Action, lockedRows(err))
	}
	return res, nil
}

// deadlockRetries bounds how often Do runs an action that deadlocked.
const deadlockRetries = 3

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// do is one transaction of Do (every action but archive).
func (i *Inspector) do(ctx context.Context, r Request, filter []byte) (Result, error) {
	res := Result{Action: r.Action, Actor: r.Actor, EventIDs: []string{}}
	err := pgx.BeginFunc(ctx, i.pool, func(tx pgx.Tx) error {
		// Raw 16-byte ids: an action on a million events holds 16 MB here.
		var ids [][16]byte
		err := i.eachTable(r, func(table string, archived bool) error {
			w := i.target(r, archived)
			rows, err := tx.Query(ctx, i.q.SQL("action_targets", map[string]any{"table": table, "where": w.sql()}), w.args...)
			if err != nil {
				return err
			}
			more, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
			ids = append(ids, more...)
			return err
		})
		if err != nil {
			return err
		}
		states := r.stateNames()
		args := []any{r.Actor, r.Reason, ids, states, filter}
		if r.Action == Replay {
			args = append(args, r.NewID)
		}
		return i.call(ctx, tx, actionFunctions[r.Action], args, &res)
	})
	return res, err
}

// ActionLockTimeout is the lock_timeout of every session that runs operator
// actions (the CLI and the consoles, fleet or not): no action waits for a lock
// without end, and a session holding one (an open transaction, a frozen
// process) turns into ErrRowsLocked. It outlasts a relay frozen inside its
// claim, which PostgreSQL ends after twice the relay's --lock-timeout (10 s by
// default), so an action on a frozen relay's events waits for that and
// succeeds.
const ActionLockTimeout = 15 * time.Second

// ErrRowsLocked: an action gave up waiting for rows another session holds
// (lock_timeout); nothing was changed.
var ErrRowsLocked = errors.New("the events are locked by another session (a transaction left open, or a process frozen inside one); nothing was changed: try again")

// lockedRows turns a lock timeout, or a deadlock that outlasted Do's retries,
// into ErrRowsLocked, keeping PostgreSQL's error.
func lockedRows(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "40P01") {
		return fmt.Errorf("%w (%v)", ErrRowsLocked, err)
	}
	return err
}

// actionFunctions name each action's function (migrations/functions/<name>.sql). All take (actor,
// reason, event ids, states, filter); replay adds new_id, and archive takes the
// audit row to add to instead of states.
var actionFunctions = map[Action]string{
	Retry: "outboxtop_retry", ResetLease: "outboxtop_reset_lease", Park: "outboxtop_park",
	Skip: "outboxtop_skip", Archive: "outboxtop_archive", Replay: "outboxtop_replay",
}

// call runs one action function; each returns (audit id, rows, event ids).
func (i *Inspector) call(ctx context.Context, q querier, fn string, args []any, res *Result) error {
	marks := make([]string, len(args))
	for k := range args {
		marks[k] = fmt.Sprintf("$%d", k+1)
	}
	var n int64
	var ids []string
	stmt := i.q.SQL("action", map[string]any{"fn": fn, "params": strings.Join(marks, ", ")})
	err := q.QueryRow(ctx, stmt, args...).Scan(&res.AuditID, &n, &ids)
	if err != nil {
		return err
	}
	res.Rows += n
	for _, id := range ids {
		if len(res.EventIDs) < AuditIDLimit {
			res.EventIDs = append(res.EventIDs, id)
		}
	}
	return nil
}

// stateNames are the states the action function may touch (see fromStates).
func (r Request) stateNames() []string {
	var out []string
	for _, s := range r.fromStates() {
		out = append(out, string(s))
	}
	return out
}

// archiveBatches moves published rows to the archive, BatchSize per transaction,
// oldest published first, until none match. The first batch writes the audit row,
// the later ones, on the same connection, add to it.
func (i *Inspector) archiveBatches(ctx context.Context, r Request, filter []byte, res *Result) error {
	batch := r.BatchSize
	if batch <= 0 {
		batch = 1000
	}
	w := i.target(r, false)
	// The events the function refused stay published in the outbox: passed
	// over, so the batches end.
	refused := [][16]byte{} // never NULL: NOT (id = ANY (NULL)) matches nothing
	w.add(`NOT (event_id = ANY (` + w.arg(&refused) + `::uuid[]))`)
	q := i.q.SQL("archive_targets", map[string]any{"where": w.sql(), "limit": w.arg(batch)})
	// Every batch on one connection: only the session that wrote the audit row
	// may add to it.
	conn, err := i.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var audit *int64
	for {
		var seen int
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, q, w.args...)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
			if err != nil {
				return err
			}
			seen = len(ids)
			var n, nRefused int64
			var moved []string
			var refusedIDs [][16]byte
			if err := tx.QueryRow(ctx, i.q.SQL("archive_batch"), r.Actor, r.Reason, ids, filter, audit).
				Scan(&res.AuditID, &n, &moved, &nRefused, &refusedIDs); err != nil {
				return err
			}
			res.Rows += n
			res.Refused += nRefused
			refused = append(refused, refusedIDs...)
			for _, id := range moved {
				if len(res.EventIDs) < AuditIDLimit {
					res.EventIDs = append(res.EventIDs, id)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		audit = &res.AuditID
		if seen < batch {
			return nil
		}
	}
}

type auditFilter struct {
	Filter
	IDs    []string   `json:"ids,omitempty"`
	From   wire.State `json:"from,omitempty"`
	NewID  bool       `json:"new_id,omitempty"`
	States []string   `json:"states"`
	// Run is set on the rows of a paced run's chunks (paced.go).
	Run *runMark `json:"run,omitempty"`
}

// auditFilter is what the audit row's filter column records of r.
func (r Request) auditFilter() ([]byte, error) { return r.auditFilterWith(nil) }

// auditFilterWith is auditFilter with a paced run's mark.
func (r Request) auditFilterWith(run *runMark) ([]byte, error) {
	af := auditFilter{Filter: r.Filter, IDs: r.IDs, From: r.From, NewID: r.NewID, States: r.stateNames(), Run: run}
	return json.Marshal(af)
}

// AuditRelay records that actor paused (paused true) or resumed a relay, through
// the schema's audit function: the relay's paused flag lives in its process, so the
// row is the only trace the decision leaves.
func (i *Inspector) AuditRelay(ctx context.Context, actor string, paused bool) (int64, error) {
	if i.readOnly {
		return 0, ErrReadOnly
	}
	if err := checkActor(actor); err != nil {
		return 0, err
	}
	if actor == "" {
		actor = DefaultActor(nil)
	}
	action := "resume"
	if paused {
		action = "pause"
	}
	var id int64
	err := i.pool.QueryRow(ctx, i.q.SQL("audit_relay"), actor, action).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("auditing %s: %w", action, err)
	}
	return id, nil
}

// IsRefusal reports whether err is a refusal a caller should show as such (read-only,
// no target, missing reason) rather than as a failure.
func IsRefusal(err error) bool {
	return errors.Is(err, ErrReadOnly) || errors.Is(err, ErrNoTarget) || errors.Is(err, ErrReasonRequired)
}

// eachTable calls f for each table r's action reads or moves: the outbox, then
// the archive.
func (i *Inspector) eachTable(r Request, f func(table string, archived bool) error) error {
	inOutbox, inArchive := r.touches()
	if inOutbox {
		if err := f("outbox_event", false); err != nil {
			return err
		}
	}
	if inArchive {
		return f("outbox_event_archive", true)
	}
	return nil
}
