package inspect

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/pgsql"
)

// DefaultMaxScan is how many rows of a state a List or CountMatching reads,
// by default, for a filter that searches inside payloads or headers when no
// index serves the search: about 0.1 s of PostgreSQL's time (a jsonpath test
// a row), so a console refreshing a table of a million failed events stays
// live. The rows past it are reached page by page (Page.Next), or at once by
// an index the operator adds (docs/triage.md).
const DefaultMaxScan = 100_000

// Scan is how a page of a search inside payloads or headers was read when no
// index served it: Scanned rows of the state (matching the other filters), in
// the list's order from the page cursor on. Stopped says the search stopped
// there, at ListOptions.MaxScan: the rows after Next were not searched, and
// may match.
type Scan struct {
	Scanned int64 `json:"scanned"`
	Stopped bool  `json:"stopped"`
}

// withoutJSON is f without its payload and header terms.
func (f Filter) withoutJSON() Filter {
	f.Payload, f.Headers = nil, nil
	return f
}

// jsonConds is the AND of f's payload and header terms, their values added to
// w as parameters (but the condition not added to w); "true" when f has none.
func (w *where) jsonConds(f Filter) string {
	var t where
	t.args = w.args
	t.addJSONTerms(f)
	w.args = t.args
	return t.sql()
}

// maxScan is o's bound on the rows a search reads; 0 without one.
func (o ListOptions) maxScan() int {
	switch {
	case o.MaxScan < 0:
		return 0
	case o.MaxScan == 0:
		return DefaultMaxScan
	}
	return o.MaxScan
}

// indexServes reports whether the planner would read a GIN index of table for
// query: one the operator added on payload or headers. Without any on the
// table it asks nothing more.
func (i *Inspector) indexServes(ctx context.Context, table, query string, args []any) (bool, error) {
	rows, err := i.pool.Query(ctx, i.q.SQL("gin_indexes"), pgsql.Name(i.schema, table))
	if err != nil {
		return false, fmt.Errorf("reading the indexes: %w", err)
	}
	gin := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return false, fmt.Errorf("reading the indexes: %w", err)
		}
		gin[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("reading the indexes: %w", err)
	}
	if len(gin) == 0 {
		return false, nil
	}
	var raw []byte
	if err := i.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+query, oneShot(args)...).Scan(&raw); err != nil {
		return false, fmt.Errorf("planning the search: %w", err)
	}
	var plan []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) == 0 {
		return false, fmt.Errorf("reading the search's plan: %v", err)
	}
	return plan[0].Plan.uses(gin), nil
}

// oneShot makes a query run with args as an unnamed statement, planned for
// the values it is given: a prepared statement's generic plan, planned
// without them, walks a list's btree index past every row rather than ask a
// GIN index which ones match (a million rows where the GIN index reads ten).
func oneShot(args []any) []any {
	return append([]any{pgx.QueryExecModeExec}, args...)
}

type planNode struct {
	Index string     `json:"Index Name"`
	Plans []planNode `json:"Plans"`
}

func (n planNode) uses(names map[string]bool) bool {
	if names[n.Index] {
		return true
	}
	for _, c := range n.Plans {
		if c.uses(names) {
			return true
		}
	}
	return false
}

// scanPage is List's page when the filter searches payloads or headers and no
// index serves the search: base holds the state, the other filters and the
// cursor, terms the payload and header conditions (their parameters in base,
// after its first nBase).
// Its two reads share one snapshot: the rows the search read, and, when the
// page did not fill, where that read ended.
func (i *Inspector) scanPage(ctx context.Context, o ListOptions, table string, base where, terms string, nBase int, expr, order string, limit, scan int) (Page, error) {
	fail := func(err error) (Page, error) { return Page{}, fmt.Errorf("searching %s events: %w", o.State, err) }
	tx, err := i.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	fields := map[string]any{"table": table, "archived": table == "outbox_event_archive", "key": expr,
		"where": base.sql(), "terms": terms, "order": order, "limit": limit + 1, "scan": scan}
	rows, err := tx.Query(ctx, i.q.SQL("list_scan", fields), base.args...)
	if err != nil {
		return fail(err)
	}
	type found struct {
		e   Event
		key string
		n   int64
	}
	var hits []found
	for rows.Next() {
		var f found
		if f.e, err = scanEvent(rowWith{rows, []any{&f.key, &f.n}}); err != nil {
			rows.Close()
			return fail(err)
		}
		hits = append(hits, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	page := Page{Events: []Event{}, Scan: &Scan{}}
	for _, h := range hits[:min(len(hits), limit)] {
		page.Events = append(page.Events, h.e)
	}
	if len(hits) > limit {
		h := hits[limit-1]
		page.Next = encodeCursor(cursor{Key: h.key, Seq: h.e.Seq})
		page.Scan.Scanned = h.n
		return page, nil
	}
	// The page did not fill: the search read its whole window. Where did it end?
	rows, err = tx.Query(ctx, i.q.SQL("list_scan_end", fields), base.args[:nBase]...)
	if err != nil {
		return fail(err)
	}
	var ends []found
	for rows.Next() {
		var f found
		if err := rows.Scan(&f.key, &f.e.Seq, &f.n); err != nil {
			rows.Close()
			return fail(err)
		}
		ends = append(ends, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	for _, f := range ends {
		switch {
		case f.n == int64(scan):
			page.Scan.Scanned = f.n
		case f.n < int64(scan) && f.n > page.Scan.Scanned:
			page.Scan.Scanned = f.n
		case f.n > int64(scan):
			page.Scan.Stopped = true
		}
	}
	if page.Scan.Stopped {
		for _, f := range ends {
			if f.n == int64(scan) {
				page.Next = encodeCursor(cursor{Key: f.key, Seq: f.e.Seq})
			}
		}
	}
	return page, nil
}

// rowWith scans the event's columns plus trailing ones.
type rowWith struct {
	r     interface{ Scan(...any) error }
	extra []any
}

func (r rowWith) Scan(dest ...any) error { return r.r.Scan(append(dest, r.extra...)...) }

// countJSON is CountMatching for a filter that searches payloads or headers:
// the capped count when an index serves it, else the matches among the first
// DefaultMaxScan rows of the state, a lower bound when there are more.
func (i *Inspector) countJSON(ctx context.Context, table string, base where, terms string) (Count, error) {
	all := i.q.SQL("matching", map[string]any{"table": table, "where": base.sql() + " AND " + terms})
	indexed, err := i.indexServes(ctx, table, all+" LIMIT "+fmt.Sprint(countMatchingCap+1), base.args)
	if err != nil {
		return Count{}, err
	}
	if indexed {
		return countCapped(ctx, i.pool, all, countMatchingCap, oneShot(base.args)...)
	}
	var n, read int64
	q := i.q.SQL("matching_scan", map[string]any{"table": table, "where": base.sql(), "terms": terms, "scan": DefaultMaxScan})
	if err := i.pool.QueryRow(ctx, q, base.args...).Scan(&n, &read); err != nil {
		return Count{}, err
	}
	c := Count{Value: n}
	if read > DefaultMaxScan {
		c.Bound = LowerBound
	}
	return c, nil
}
