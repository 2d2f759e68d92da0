package inspect

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PacedActions are the actions a paced run does: retry, reset-lease and replay.
var PacedActions = []Action{Retry, ResetLease, Replay}

// MaxChunk bounds a paced run's chunk: every id a chunk changed fits its audit
// row's event_ids (AuditIDLimit).
const MaxChunk = AuditIDLimit

// PacedRequest is an action over a target done in chunks, in seq order, at a
// rate: each chunk is one call of the action's function, in a transaction of
// its own, and writes one audit row that records how far the run has got.
type PacedRequest struct {
	Request
	// Rate is events a second; 0 does the chunks one after the other.
	Rate float64
	// Max stops the run after this many events (0: no bound), counted over
	// every session of the run.
	Max int64
	// Chunk is the events per call; 0 is DefaultChunk(Rate).
	Chunk int
	// Clock paces the run; nil is the wall clock. Tests inject their own.
	Clock Clock
}

// DefaultChunk is one second of events at rate, at least 1 and at most
// MaxChunk; MaxChunk when the run is not paced.
func DefaultChunk(rate float64) int {
	if rate <= 0 {
		return MaxChunk
	}
	return int(min(max(math.Ceil(rate), 1), MaxChunk))
}

// Clock is what a paced run reads the time from and waits with.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (its error).
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pacer spaces chunks so that events go at most at rate: a chunk of n events
// takes n/rate of the schedule, and the next one starts no earlier than that
// after it. Time a slow chunk (a lock wait, a slow database) lost is not made
// up for with a burst: the schedule restarts from now.
type pacer struct {
	rate float64
	next time.Time
}

// reserve returns how long to wait, at now, before a chunk of n events starts.
func (p *pacer) reserve(now time.Time, n int) time.Duration {
	if p.rate <= 0 {
		return 0
	}
	if p.next.Before(now) {
		p.next = now
	}
	wait := p.next.Sub(now)
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	return wait
}

// runMark is what each chunk's audit row records of its run, in its filter
// (under "run"), beside the request's filter.
type runMark struct {
	ID string `json:"id"`
	// Cursor is the seq of the last event the chunk covers: the run goes on
	// after it.
	Cursor int64 `json:"cursor"`
	// UpTo is the highest seq of the run's window.
	UpTo int64 `json:"upto"`
	// N is the events covered since the previous row (the ones left alone
	// because they had changed state included).
	N     int64   `json:"n"`
	Rate  float64 `json:"rate,omitempty"`
	Max   int64   `json:"max,omitempty"`
	Chunk int     `json:"chunk"`
}

// Progress is how far a paced run has got.
type Progress struct {
	Run    string `json:"run"`
	Action Action `json:"action"`
	// Total is the events the run covers: those done before, plus those in its
	// window when this session started, at most Max.
	Total int64 `json:"total"`
	// Done is the events covered so far (every session); Changed, the rows
	// the action changed (Done − Changed were left alone: they had changed
	// state since they were read).
	Done    int64 `json:"done"`
	Changed int64 `json:"changed"`
	// Chunks is the chunks this session committed.
	Chunks int `json:"chunks"`
	// Rate is the measured events per second of this session, 0 until two
	// chunks have started; Target, the rate asked for (0: not paced).
	Rate   float64 `json:"rate"`
	Target float64 `json:"target"`
	// Elapsed is since this session started; ETA, the time left at Rate (else
	// Target), -1 when neither is known.
	Elapsed time.Duration `json:"elapsed"`
	ETA     time.Duration `json:"eta"`
}

// PacedResult is what a paced run did.
type PacedResult struct {
	Progress
	// Complete: the window is covered; AtMax: the run stopped at Max.
	Complete bool `json:"complete"`
	AtMax    bool `json:"at_max"`
	// FirstAudit and LastAudit are the audit rows this session wrote (0: none).
	FirstAudit int64 `json:"first_audit"`
	LastAudit  int64 `json:"last_audit"`
}

// Run is one paced run, started by NewRun or ResumeRun and done by Do. It
// holds a connection, and on it a session advisory lock on the run's id, so
// that two sessions never do one run at once; Close gives both back.
type Run struct {
	in      *Inspector
	conn    *pgxpool.Conn
	lockKey int64
	req     PacedRequest
	id      string
	// start is the database's clock when the run started (seconds).
	start        int64
	upTo, cursor int64
	// doneBefore and changedBefore are what earlier sessions did; window, the
	// events left in the window when this session started.
	doneBefore, changedBefore, window int64
	resumed                           bool
}

// ErrRunBusy: another session is doing the run.
var ErrRunBusy = errors.New("the run is being done by another session")

// ErrUnknownRun: no audit row of this database login names the run.
var ErrUnknownRun = errors.New("no chunk of this run is recorded")

// ID is the run's id, for ResumeRun.
func (r *Run) ID() string { return r.id }

// Request is the run's request (for a resumed run, as its audit rows say).
func (r *Run) Request() PacedRequest { return r.req }

// Resumed reports whether the run was started by ResumeRun.
func (r *Run) Resumed() bool { return r.resumed }

// Total is the events the run covers (see Progress.Total), DoneBefore the
// events earlier sessions covered.
func (r *Run) Total() int64 { return r.total() }

// DoneBefore is the events earlier sessions of the run covered.
func (r *Run) DoneBefore() int64 { return r.doneBefore }

// ChangedBefore is the rows earlier sessions of the run changed.
func (r *Run) ChangedBefore() int64 { return r.changedBefore }

func (r *Run) total() int64 {
	t := r.doneBefore + r.window
	if r.req.Max > 0 {
		t = min(t, max(r.req.Max, r.doneBefore))
	}
	return t
}

// Close releases the run's lock and connection.
func (r *Run) Close() {
	if r.conn == nil {
		return
	}
	_, _ = r.conn.Exec(context.Background(), "SELECT pg_catalog.pg_advisory_unlock($1)", r.lockKey)
	r.conn.Release()
	r.conn = nil
}

func (pr PacedRequest) validate() error {
	if !slices.Contains(PacedActions, pr.Action) {
		return invalidf("%s cannot be paced (retry, reset-lease and replay can)", pr.Action)
	}
	if err := pr.Request.validate(); err != nil {
		return err
	}
	if pr.Rate < 0 || math.IsNaN(pr.Rate) || math.IsInf(pr.Rate, 0) {
		return invalidf("the rate must be a positive number of events a second")
	}
	if pr.Max < 0 {
		return invalidf("the maximum must not be negative")
	}
	if pr.Chunk < 0 || pr.Chunk > MaxChunk {
		return invalidf("a chunk is 1 to %d events", MaxChunk)
	}
	return nil
}

// NewRun starts a paced run of pr: it reads the run's window (the events the
// target selects now, up to the highest seq among them) and takes the run's
// lock. Nothing is changed until Do.
func (i *Inspector) NewRun(ctx context.Context, pr PacedRequest) (*Run, error) {
	if i.readOnly {
		return nil, ErrReadOnly
	}
	if err := pr.validate(); err != nil {
		return nil, err
	}
	if pr.Actor == "" {
		pr.Actor = DefaultActor(nil)
	}
	if pr.Chunk == 0 {
		pr.Chunk = DefaultChunk(pr.Rate)
	}
	r := &Run{in: i, req: pr}
	err := i.eachTable(pr.Request, func(table string, archived bool) error {
		w := i.target(pr.Request, archived)
		var n, top, now int64
		q := i.q.SQL("paced_window", map[string]any{"table": table, "where": w.sql()})
		if err := i.pool.QueryRow(ctx, q, w.args...).Scan(&n, &top, &now); err != nil {
			return fmt.Errorf("%s: reading the run's window: %w", pr.Action, err)
		}
		r.window += n
		r.upTo = max(r.upTo, top)
		r.start = now
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.id = newRunID(r.start)
	if err := r.lock(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// newRunID is a run id: the database's clock in seconds and 24 random bits,
// in hex ("6930a1b2-3f9a2c"). The time bounds the audit rows resume reads.
func newRunID(start int64) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%08x-%06x", start, binary.BigEndian.Uint32(b[:])&0xffffff)
}

// parseRunID returns the start time a run id carries.
func parseRunID(id string) (int64, error) {
	t, rnd, ok := strings.Cut(id, "-")
	if !ok || len(t) != 8 || len(rnd) != 6 {
		return 0, invalidf("%q is not a run id (like 6930a1b2-3f9a2c)", id)
	}
	if _, err := hex.DecodeString(rnd); err != nil {
		return 0, invalidf("%q is not a run id (like 6930a1b2-3f9a2c)", id)
	}
	start, err := strconv.ParseInt(t, 16, 64)
	if err != nil {
		return 0, invalidf("%q is not a run id (like 6930a1b2-3f9a2c)", id)
	}
	return start, nil
}

// runLockKey is the run's session advisory lock (pg_try_advisory_lock(bigint)).
func runLockKey(schema, id string) int64 {
	h := fnv.New64a()
	h.Write([]byte("outboxtop.run." + schema + "." + id))
	return int64(h.Sum64())
}

// lock takes a connection and the run's lock on it.
func (r *Run) lock(ctx context.Context) error {
	conn, err := r.in.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	key := runLockKey(r.in.schema, r.id)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		conn.Release()
		return fmt.Errorf("taking the run's lock: %w", err)
	}
	if !ok {
		conn.Release()
		return fmt.Errorf("run %s: %w", r.id, ErrRunBusy)
	}
	r.conn, r.lockKey = conn, key
	return nil
}

// ResumeOptions change a resumed run: who acts now, and optionally a new rate
// or maximum.
type ResumeOptions struct {
	Actor   string
	Rate    float64
	SetRate bool
	Max     int64
	SetMax  bool
	Chunk   int
	Clock   Clock
}

// ResumeRun continues run id after its last recorded chunk: the run's action,
// target, states, reason, window and cursor are read from the audit rows its
// chunks wrote (those of this database login only), so no event the run
// covered is acted on again by it, whatever its state now. A run that
// recorded no chunk changed nothing (ErrUnknownRun).
func (i *Inspector) ResumeRun(ctx context.Context, id string, o ResumeOptions) (*Run, error) {
	if i.readOnly {
		return nil, ErrReadOnly
	}
	start, err := parseRunID(id)
	if err != nil {
		return nil, err
	}
	if err := checkActor(o.Actor); err != nil {
		return nil, err
	}
	r := &Run{in: i, id: id, start: start, resumed: true}
	// The lock first: a session still doing the run would move its cursor
	// after it was read.
	if err := r.lock(ctx); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	probe, _ := json.Marshal(map[string]any{"run": map[string]string{"id": id}})
	rows, err := r.conn.Query(ctx, i.q.SQL("paced_run"), string(probe), start)
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	type chunkRow struct {
		action, reason string
		filter         []byte
		rows           int64
		audit          int64
	}
	chunks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chunkRow, error) {
		var c chunkRow
		err := row.Scan(&c.action, &c.filter, &c.rows, &c.reason, &c.audit)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	if len(chunks) == 0 {
		return nil, fmt.Errorf("run %s: %w (it changed nothing: start it again)", id, ErrUnknownRun)
	}
	for k, c := range chunks {
		var af auditFilter
		if err := json.Unmarshal(c.filter, &af); err != nil || af.Run == nil || af.Run.ID != id {
			return nil, fmt.Errorf("run %s: audit row #%d does not read as one of its chunks", id, c.audit)
		}
		if k == 0 {
			r.req = PacedRequest{Request: Request{
				Action: Action(c.action), IDs: af.IDs, Filter: af.Filter, From: af.From,
				Reason: c.reason, NewID: af.NewID,
			}}
			r.upTo = af.Run.UpTo
		} else if Action(c.action) != r.req.Action {
			return nil, fmt.Errorf("run %s: audit row #%d is a %s, its first a %s", id, c.audit, c.action, r.req.Action)
		}
		// The pace and the bound of the latest session: a resume may change them.
		r.req.Rate, r.req.Max, r.req.Chunk = af.Run.Rate, af.Run.Max, af.Run.Chunk
		r.cursor = max(r.cursor, af.Run.Cursor)
		r.doneBefore += af.Run.N
		r.changedBefore += c.rows
	}
	r.req.Actor = cmp.Or(o.Actor, DefaultActor(nil))
	if o.SetRate {
		r.req.Rate = o.Rate
		if o.Chunk == 0 {
			r.req.Chunk = DefaultChunk(o.Rate)
		}
	}
	if o.SetMax {
		r.req.Max = o.Max
	}
	if o.Chunk > 0 {
		r.req.Chunk = o.Chunk
	}
	if r.req.Chunk <= 0 {
		r.req.Chunk = DefaultChunk(r.req.Rate)
	}
	r.req.Clock = o.Clock
	if err := r.req.validate(); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	err = i.eachTable(r.req.Request, func(table string, archived bool) error {
		w := r.windowTarget(archived)
		var n, top, now int64
		q := i.q.SQL("paced_window", map[string]any{"table": table, "where": w.sql()})
		if err := r.conn.QueryRow(ctx, q, w.args...).Scan(&n, &top, &now); err != nil {
			return fmt.Errorf("reading run %s's window: %w", id, err)
		}
		r.window += n
		return nil
	})
	if err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

// windowTarget is the run's target in one table, past its cursor, up to the
// end of its window.
func (r *Run) windowTarget(archived bool) where {
	w := r.in.target(r.req.Request, archived)
	w.add("seq > " + w.arg(r.cursor))
	w.add("seq <= " + w.arg(r.upTo))
	return w
}

type candidate struct {
	id  [16]byte
	seq int64
}

// Do runs the chunks until the window is covered, Max is reached or ctx ends.
// progress, when set, is called after each chunk (and once at the start). A
// chunk is one transaction: its events' changes and its audit row, which
// records the run's cursor, commit together or not at all, so an interrupt at
// any point (ctx, a lost connection, kill -9) leaves the run resumable with
// nothing done twice. The error is ctx's when it ended the run.
func (r *Run) Do(ctx context.Context, progress func(Progress)) (PacedResult, error) {
	if r.conn == nil {
		return PacedResult{}, errors.New("the run is closed")
	}
	clock := r.req.Clock
	if clock == nil {
		clock = wallClock{}
	}
	res := PacedResult{Progress: Progress{Run: r.id, Action: r.req.Action, Total: r.total(),
		Done: r.doneBefore, Changed: r.changedBefore, Target: r.req.Rate, ETA: -1}}
	began := clock.Now()
	report := func() {
		res.Elapsed = clock.Now().Sub(began)
		res.ETA = -1
		if rate := cmp.Or(res.Rate, res.Target); rate > 0 {
			res.ETA = time.Duration(float64(res.Total-res.Done) / rate * float64(time.Second))
		}
		if progress != nil {
			progress(res.Progress)
		}
	}
	limit := any(nil)
	if r.req.Max > 0 {
		left := r.req.Max - r.doneBefore
		if left <= 0 {
			res.AtMax = true
			report()
			return res, nil
		}
		limit = left
	}
	// The events left, read once: each chunk checks its own against the
	// target again, by their ids.
	var todo []candidate
	err := r.in.eachTable(r.req.Request, func(table string, archived bool) error {
		w := r.windowTarget(archived)
		q := r.in.q.SQL("paced_targets", map[string]any{"table": table, "where": w.sql(), "limit": w.arg(limit)})
		rows, err := r.conn.Query(ctx, q, w.args...)
		if err != nil {
			return err
		}
		more, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (candidate, error) {
			var c candidate
			err := row.Scan(&c.id, &c.seq)
			return c, err
		})
		todo = append(todo, more...)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("run %s: reading its events: %w", r.id, lockedRows(err))
	}
	slices.SortFunc(todo, func(a, b candidate) int { return cmp.Compare(a.seq, b.seq) })
	if lim, ok := limit.(int64); ok && int64(len(todo)) > lim {
		todo = todo[:lim]
	}
	res.Total = min(res.Total, r.doneBefore+int64(len(todo)))
	report()
	p := pacer{rate: r.req.Rate}
	var firstStart time.Time
	var unrecorded int64 // events covered by chunks that changed nothing and wrote no row
	for len(todo) > 0 {
		n := min(len(todo), r.req.Chunk)
		if err := clock.Sleep(ctx, p.reserve(clock.Now(), n)); err != nil {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		now := clock.Now()
		if firstStart.IsZero() {
			firstStart = now
		} else if d := now.Sub(firstStart); d > 0 {
			// The events of the chunks before this one over the time since
			// the first started: the pace kept, not inflated by a chunk
			// just done at once.
			res.Rate = float64(res.Done-r.doneBefore) / d.Seconds()
		}
		chunk := todo[:n]
		mark := runMark{ID: r.id, Cursor: chunk[n-1].seq, UpTo: r.upTo, N: int64(n) + unrecorded,
			Rate: r.req.Rate, Max: r.req.Max, Chunk: r.req.Chunk}
		var cr Result
		var wrote bool
		for attempt := 1; ; attempt++ {
			cr, wrote, err = r.chunk(ctx, chunk, mark)
			if !isDeadlock(err) || attempt == deadlockRetries {
				break
			}
			if serr := clock.Sleep(ctx, time.Duration(attempt)*100*time.Millisecond); serr != nil {
				break
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, fmt.Errorf("run %s: %w", r.id, lockedRows(err))
		}
		todo = todo[n:]
		res.Done += int64(n)
		res.Changed += cr.Rows
		if wrote {
			unrecorded = 0
			res.Chunks++
			if res.FirstAudit == 0 {
				res.FirstAudit = cr.AuditID
			}
			res.LastAudit = cr.AuditID
		} else {
			unrecorded += int64(n)
		}
		report()
	}
	res.AtMax = r.req.Max > 0 && res.Done >= r.req.Max
	res.Complete = !res.AtMax || res.Done >= r.doneBefore+r.window
	report()
	return res, nil
}

// chunk is one transaction of a run: the chunk's events still selected by the
// target (state and filter, read again by id) go to the action's function,
// with the run's mark in the audit row's filter. A chunk none of whose events
// is still selected calls nothing and writes no row (wrote false): the next
// row's cursor covers it.
func (r *Run) chunk(ctx context.Context, chunk []candidate, mark runMark) (Result, bool, error) {
	req := r.req.Request
	res := Result{Action: req.Action, Actor: req.Actor, EventIDs: []string{}}
	wrote := false
	ids := make([]string, len(chunk))
	for k, c := range chunk {
		ids[k] = formatUUID(c.id)
	}
	filter, err := req.auditFilterWith(&mark)
	if err != nil {
		return res, false, err
	}
	err = pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		var still [][16]byte
		err := r.in.eachTable(req, func(table string, archived bool) error {
			w := r.in.target(req, archived)
			w.addIDs(ids)
			rows, err := tx.Query(ctx, r.in.q.SQL("action_targets", map[string]any{"table": table, "where": w.sql()}), w.args...)
			if err != nil {
				return err
			}
			more, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
			still = append(still, more...)
			return err
		})
		if err != nil || len(still) == 0 {
			return err
		}
		args := []any{req.Actor, req.Reason, still, req.stateNames(), filter}
		if req.Action == Replay {
			args = append(args, req.NewID)
		}
		wrote = true
		return r.in.call(ctx, tx, actionFunctions[req.Action], args, &res)
	})
	return res, wrote && err == nil, err
}

func formatUUID(b [16]byte) string {
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// PacedEstimate is what a paced run of count events would take: the events
// (at most max, when max > 0), its chunks, and the time at rate (0 when not
// paced). The first chunk starts at once, each later one a chunk's worth of
// time after the one before.
func PacedEstimate(count, maxEvents int64, rate float64, chunk int) (events int64, chunks int64, d time.Duration) {
	events = count
	if maxEvents > 0 {
		events = min(events, maxEvents)
	}
	if chunk <= 0 {
		chunk = DefaultChunk(rate)
	}
	chunks = (events + int64(chunk) - 1) / int64(chunk)
	if rate > 0 && chunks > 1 {
		d = time.Duration(float64(int64(chunk)*(chunks-1)) / rate * float64(time.Second))
	}
	return events, chunks, d
}
