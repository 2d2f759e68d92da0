package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/eventstate"
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
func (a Action) Sources() []eventstate.State {
	switch a {
	case Retry, Skip:
		return []eventstate.State{eventstate.Failed, eventstate.Scheduled}
	case ResetLease:
		return []eventstate.State{eventstate.Leased}
	case Park:
		return []eventstate.State{eventstate.Ready, eventstate.Scheduled, eventstate.Leased}
	case Archive:
		return []eventstate.State{eventstate.Published}
	case Replay:
		return []eventstate.State{eventstate.Published, Archived}
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
	From eventstate.State
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
}

// AuditIDLimit bounds the ids kept in Result.EventIDs and in the audit row's
// event_ids; the audit row's rows column always has the full count.
const AuditIDLimit = 1000

func (r Request) validate() error {
	if r.Action.Sources() == nil {
		return fmt.Errorf("unknown action %q", r.Action)
	}
	if err := r.Filter.Validate(); err != nil {
		return err
	}
	for _, id := range r.IDs {
		if f := (Filter{IDPrefix: id}); f.Validate() != nil || len(id) != 36 {
			return fmt.Errorf("%q is not an event id", id)
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
			r.From == eventstate.Pending && (r.Action == Park)
		if !ok {
			return fmt.Errorf("%s applies to %v events, not %s", r.Action, r.Action.Sources(), r.From)
		}
	}
	if r.NewID && r.Action != Replay {
		return fmt.Errorf("new id applies to replay only")
	}
	return nil
}

// fromStates is the set of states the request may touch.
func (r Request) fromStates() []eventstate.State {
	if r.From != "" {
		return []eventstate.State{r.From}
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
			c, _ := eventstate.SQL(s)
			conds = append(conds, "("+c+")")
		}
		w.add(strings.Join(conds, " OR "))
		if r.Action == Skip {
			w.add(i.blockerSQL())
		}
		if slices.Equal(r.fromStates(), []eventstate.State{eventstate.Published}) {
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
		if err := i.pool.QueryRow(ctx, `SELECT count(*), coalesce((array_agg(event_id::text ORDER BY seq))[1:`+fmt.Sprint(SampleSize)+`], '{}')
			FROM `+table+` WHERE `+w.sql(), w.args...).Scan(&n, &sample); err != nil {
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

// Do performs r and writes one outbox_audit row (also when no row was left to touch).
// Retry, reset-lease, park, skip and replay run in one transaction with their audit
// row; archive runs in batches of r.BatchSize and writes its audit row after the last
// (or after the batch that failed, with the rows moved so far).
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
	res := Result{Action: r.Action, Actor: r.Actor, EventIDs: []string{}}
	if r.Action == Archive {
		err := i.archiveBatches(ctx, r, &res)
		// The audit row records what happened, even when a later batch failed.
		if aerr := pgx.BeginFunc(context.WithoutCancel(ctx), i.pool, func(tx pgx.Tx) error {
			return i.writeAudit(ctx, tx, r, &res)
		}); aerr != nil && err == nil {
			err = aerr
		}
		if err != nil {
			return res, fmt.Errorf("archive: %w", err)
		}
		return res, nil
	}
	err := pgx.BeginFunc(ctx, i.pool, func(tx pgx.Tx) error {
		var err error
		switch r.Action {
		case Retry, ResetLease, Park:
			err = i.update(ctx, tx, r, &res)
		case Skip:
			err = i.skip(ctx, tx, r, &res)
		case Replay:
			err = i.replay(ctx, tx, r, &res)
		}
		if err != nil {
			return err
		}
		return i.writeAudit(ctx, tx, r, &res)
	})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", r.Action, err)
	}
	return res, nil
}

// update is retry, reset-lease and park: one UPDATE whose WHERE re-checks the state,
// so rows that changed since the operator looked are not touched.
func (i *Inspector) update(ctx context.Context, tx pgx.Tx, r Request, res *Result) error {
	w := i.target(r, false)
	var set string
	switch r.Action {
	case Retry:
		set = `available_at = now(), lease_token = NULL, lease_until = NULL,
			attempts = CASE WHEN failed_at IS NOT NULL THEN 0 ELSE attempts END, failed_at = NULL`
	case ResetLease:
		// The token is kept: the holder can still mark what it published, which saves a
		// duplicate; the next claim replaces it.
		set = `lease_until = now()`
	case Park:
		w.args = append(w.args, "parked by "+r.Actor+": "+r.Reason)
		set = fmt.Sprintf(`failed_at = now(), last_error = $%d`, len(w.args))
	}
	rows, err := tx.Query(ctx, "UPDATE "+i.outbox+" SET "+set+" WHERE "+w.sql()+" RETURNING event_id::text", w.args...)
	if err != nil {
		return err
	}
	return collectIDs(rows, res)
}

func collectIDs(rows pgx.Rows, res *Result) error {
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	res.Rows += int64(len(ids))
	for _, id := range ids {
		if len(res.EventIDs) < AuditIDLimit {
			res.EventIDs = append(res.EventIDs, id)
		}
	}
	return nil
}

// The columns outbox_event and the archive share, in one order.
const (
	sharedColumns = `event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
		attempts, lease_token, lease_until, published_at, seq, topic, headers, last_error, failed_at,
		kafka_topic, kafka_partition, kafka_offset, replay_of`
	// what a replay under the same id inserts: seq is left to the identity (a replay
	// goes to the end of its aggregate), the delivery columns start over.
	replayColumns = `event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
		attempts, topic, headers, replay_of`
	replayValues = `event_id, aggregate_type, aggregate_id, event_type, payload, created_at, now(),
		0, topic, headers, event_id`
)

// skip moves the blocking events to the archive, failed, with the reason.
func (i *Inspector) skip(ctx context.Context, tx pgx.Tx, r Request, res *Result) error {
	w := i.target(r, false)
	w.args = append(w.args, "skipped by "+r.Actor+": "+r.Reason)
	reason := fmt.Sprintf("$%d", len(w.args))
	rows, err := tx.Query(ctx, `WITH moved AS (
			DELETE FROM `+i.outbox+` WHERE `+w.sql()+` RETURNING `+sharedColumns+`
		)
		INSERT INTO `+i.archive+` (`+sharedColumns+`)
		SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
			attempts, lease_token, lease_until, published_at, seq, topic, headers,
			`+reason+` || coalesce(' (last error: ' || last_error || ')', ''), coalesce(failed_at, now()),
			kafka_topic, kafka_partition, kafka_offset, replay_of
		FROM moved
		ON CONFLICT (event_id) DO UPDATE SET `+excludedSet()+`, archived_at = now()
		RETURNING event_id::text`, w.args...)
	if err != nil {
		return err
	}
	return collectIDs(rows, res)
}

// excludedSet overwrites every shared column of an archive row with the new one:
// an event archived again (after a same-id replay) keeps its latest history.
func excludedSet() string {
	var parts []string
	for _, c := range strings.Split(sharedColumns, ",") {
		c = strings.TrimSpace(c)
		if c != "event_id" {
			parts = append(parts, c+" = excluded."+c)
		}
	}
	return strings.Join(parts, ", ")
}

// archiveBatches moves published rows to the archive, BatchSize per transaction,
// oldest published first, until none match.
func (i *Inspector) archiveBatches(ctx context.Context, r Request, res *Result) error {
	batch := r.BatchSize
	if batch <= 0 {
		batch = 1000
	}
	w := i.target(r, false)
	w.args = append(w.args, batch)
	q := `WITH moved AS (
			DELETE FROM ` + i.outbox + ` WHERE event_id IN (
				SELECT event_id FROM ` + i.outbox + ` WHERE ` + w.sql() + `
				ORDER BY published_at LIMIT $` + fmt.Sprint(len(w.args)) + ` FOR UPDATE SKIP LOCKED)
			AND ` + eventstate.PublishedSQL + `
			RETURNING ` + sharedColumns + `
		)
		INSERT INTO ` + i.archive + ` (` + sharedColumns + `) SELECT ` + sharedColumns + ` FROM moved
		ON CONFLICT (event_id) DO UPDATE SET ` + excludedSet() + `, archived_at = now()
		RETURNING event_id::text`
	for {
		before := res.Rows
		err := pgx.BeginFunc(ctx, i.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, q, w.args...)
			if err != nil {
				return err
			}
			return collectIDs(rows, res)
		})
		if err != nil {
			return err
		}
		if res.Rows-before < int64(batch) {
			return nil
		}
	}
}

// replay puts published and archived events back into the outbox.
func (i *Inspector) replay(ctx context.Context, tx pgx.Tx, r Request, res *Result) error {
	return i.eachTable(r, func(table string, archived bool) error {
		w := i.target(r, archived)
		var q string
		switch {
		case r.NewID:
			q = `INSERT INTO ` + i.outbox + ` (event_id, aggregate_type, aggregate_id, event_type, payload, topic, headers, replay_of)
				SELECT gen_random_uuid(), aggregate_type, aggregate_id, event_type, payload, topic, headers, event_id
				FROM ` + table + ` WHERE ` + w.sql() + ` ORDER BY seq
				RETURNING event_id::text`
		case archived:
			// Only events not already back in the outbox (a replay under their id).
			q = `WITH moved AS (
					DELETE FROM ` + i.archive + ` a WHERE ` + w.sql() + `
					AND NOT EXISTS (SELECT 1 FROM ` + i.outbox + ` o WHERE o.event_id = a.event_id)
					RETURNING ` + sharedColumns + `
				)
				INSERT INTO ` + i.outbox + ` (` + replayColumns + `)
				SELECT ` + replayValues + ` FROM moved ORDER BY seq
				RETURNING event_id::text`
		default:
			// In place under the same id: delete and re-insert in seq order, so the
			// replayed events get new seqs in their original order.
			q = `WITH moved AS (
					DELETE FROM ` + i.outbox + ` WHERE ` + w.sql() + ` RETURNING ` + sharedColumns + `
				)
				INSERT INTO ` + i.outbox + ` (` + replayColumns + `)
				SELECT ` + replayValues + ` FROM moved ORDER BY seq
				RETURNING event_id::text`
		}
		rows, err := tx.Query(ctx, q, w.args...)
		if err != nil {
			return err
		}
		return collectIDs(rows, res)
	})
}

// eachTable calls f for each table r's action reads or moves: the outbox, then
// the archive.
func (i *Inspector) eachTable(r Request, f func(table string, archived bool) error) error {
	inOutbox, inArchive := r.touches()
	if inOutbox {
		if err := f(i.outbox, false); err != nil {
			return err
		}
	}
	if inArchive {
		return f(i.archive, true)
	}
	return nil
}

type auditFilter struct {
	Filter
	IDs    []string         `json:"ids,omitempty"`
	From   eventstate.State `json:"from,omitempty"`
	NewID  bool             `json:"new_id,omitempty"`
	States []string         `json:"states"`
}

func (i *Inspector) writeAudit(ctx context.Context, tx pgx.Tx, r Request, res *Result) error {
	af := auditFilter{Filter: r.Filter, IDs: r.IDs, From: r.From, NewID: r.NewID}
	for _, s := range r.fromStates() {
		af.States = append(af.States, string(s))
	}
	filter, err := json.Marshal(af)
	if err != nil {
		return err
	}
	var reason *string
	if r.Reason != "" {
		reason = &r.Reason
	}
	err = tx.QueryRow(context.WithoutCancel(ctx), `INSERT INTO `+i.audit+` (actor, action, filter, event_ids, rows, reason)
		VALUES ($1, $2, $3, $4::uuid[], $5, $6) RETURNING audit_id`,
		r.Actor, string(r.Action), filter, res.EventIDs, res.Rows, reason).Scan(&res.AuditID)
	if err != nil {
		return fmt.Errorf("writing audit row: %w", err)
	}
	return nil
}

// IsRefusal reports whether err is a refusal a caller should show as such (read-only,
// no target, missing reason) rather than as a failure.
func IsRefusal(err error) bool {
	return errors.Is(err, ErrReadOnly) || errors.Is(err, ErrNoTarget) || errors.Is(err, ErrReasonRequired)
}
