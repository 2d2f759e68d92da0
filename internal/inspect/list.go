package inspect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/outboxtop/outboxtop/wire"
)

// Sort names the column a List is ordered by; seq breaks ties (and is the key of
// the cursor together with the sort column).
type Sort string

// The sort keys. SortSeq (insertion order) is the default.
const (
	SortSeq         Sort = "seq"
	SortCreatedAt   Sort = "created_at"
	SortAvailableAt Sort = "available_at"
	SortLeaseUntil  Sort = "lease_until"
	SortFailedAt    Sort = "failed_at"
	SortPublishedAt Sort = "published_at"
	SortArchivedAt  Sort = "archived_at"
	SortAttempts    Sort = "attempts"
)

// Sorts lists the sort keys, for flag help and key maps.
var Sorts = []Sort{SortSeq, SortCreatedAt, SortAvailableAt, SortLeaseUntil, SortFailedAt, SortPublishedAt, SortArchivedAt, SortAttempts}

// sortExpr is a sort key's SQL expression (nulls folded to the low end so keyset
// comparison works) and the cast that reads the cursor's text back.
func sortExpr(s Sort) (expr, cast string, err error) {
	switch s {
	case SortSeq, "":
		return "seq", "bigint", nil
	case SortCreatedAt, SortAvailableAt:
		return string(s), "timestamptz", nil
	case SortLeaseUntil, SortFailedAt, SortPublishedAt, SortArchivedAt:
		return "coalesce(" + string(s) + ", '-infinity')", "timestamptz", nil
	case SortAttempts:
		return "attempts", "integer", nil
	}
	return "", "", invalidf("unknown sort %q", string(s))
}

// ListOptions selects one page of events.
type ListOptions struct {
	// State is one of wire's states (pending = ready + scheduled) or Archived.
	State  wire.State
	Filter Filter
	Sort   Sort
	Desc   bool
	// Limit is the page size: default 50, at most 1000.
	Limit int
	// After is the Next of the previous page ("" for the first page).
	After string
	// MaxScan bounds the rows of the state a filter that searches payloads or
	// headers reads when no index serves it: 0 is DefaultMaxScan, negative no
	// bound. Page.Scan says where the page's search stopped.
	MaxScan int
}

// Page is one page of a List.
type Page struct {
	Events []Event `json:"events"`
	// Next continues the listing after the last event; "" when this is the last page.
	Next string `json:"next,omitempty"`
	// Scan is set when the filter searched payloads or headers and no index
	// served the search: how many rows were read, and whether it stopped at
	// ListOptions.MaxScan (Next then continues the search).
	Scan *Scan `json:"scan,omitempty"`
}

type cursor struct {
	Key string `json:"k"`
	Seq int64  `json:"s"`
}

// List returns a page of events in a state, keyset-paginated: a page never skips or
// repeats a row because rows before it changed; a row that changes state simply
// leaves the listing. Payload and headers are left out (see Detail).
func (i *Inspector) List(ctx context.Context, o ListOptions) (Page, error) {
	if err := o.Filter.Validate(); err != nil {
		return Page{}, invalidRequest{err}
	}
	expr, cast, err := sortExpr(o.Sort)
	if err != nil {
		return Page{}, err
	}
	// Where the state guarantees the column is set, sort by the bare column so its
	// index serves: coalesce() would sort a million failed rows to show 500.
	if (o.Sort == SortFailedAt && o.State == wire.Failed) ||
		(o.Sort == SortPublishedAt && o.State == wire.Published) ||
		(o.Sort == SortLeaseUntil && o.State == wire.Leased) ||
		(o.Sort == SortArchivedAt && o.State == Archived) {
		expr = string(o.Sort)
	}
	limit := o.Limit
	if limit <= 0 {
		limit = 50
	}
	if limit > 1000 {
		limit = 1000
	}
	archived := o.State == Archived
	if archived && (o.Sort == SortLeaseUntil) {
		return Page{}, invalidf("sort %q does not apply to archived events", o.Sort)
	}
	if !archived && o.Sort == SortArchivedAt {
		return Page{}, invalidf("sort %q applies to archived events only", o.Sort)
	}
	table, w, err := stateWhere(o.State, o.Filter.withoutJSON())
	if err != nil {
		return Page{}, err
	}
	if o.After != "" {
		c, err := decodeCursor(o.After)
		if err != nil {
			return Page{}, err
		}
		op := ">"
		if o.Desc {
			op = "<"
		}
		if expr == "seq" {
			w.add("seq " + op + " " + w.arg(c.Seq))
		} else {
			w.add("(" + expr + ", seq) " + op + " (" + w.arg(c.Key) + "::" + cast + ", " + w.arg(c.Seq) + ")")
		}
	}
	dir := "ASC"
	if o.Desc {
		dir = "DESC"
	}
	order := "seq " + dir
	if expr != "seq" {
		order = expr + " " + dir + ", seq " + dir
	}
	if o.Filter.SearchesJSON() {
		// A search inside payloads or headers: the plain query when the
		// planner serves it with an index, else a bounded scan.
		nBase := len(w.args)
		terms := w.jsonConds(o.Filter)
		base := where{conds: slices.Clone(w.conds), args: w.args}
		w.add(terms)
		if scan := o.maxScan(); scan > 0 {
			plain := i.q.SQL("list", map[string]any{"table": table, "archived": archived, "key": expr,
				"where": w.sql(), "order": order, "limit": limit + 1})
			indexed, err := i.indexServes(ctx, table, plain, w.args)
			if err != nil {
				return Page{}, fmt.Errorf("listing %s events: %w", o.State, err)
			}
			if !indexed {
				return i.scanPage(ctx, o, table, base, terms, nBase, expr, order, limit, scan)
			}
		}
	}
	q := i.q.SQL("list", map[string]any{"table": table, "archived": archived, "key": expr,
		"where": w.sql(), "order": order, "limit": limit + 1})
	args := w.args
	if o.Filter.SearchesJSON() {
		args = oneShot(args) // planned for its values, as indexServes saw it
	}
	rows, err := i.pool.Query(ctx, q, args...)
	if err != nil {
		return Page{}, fmt.Errorf("listing %s events: %w", o.State, err)
	}
	defer rows.Close()
	var page Page
	var keys []string
	for rows.Next() {
		var e Event
		var key string
		e, err = scanEventKey(rows, &key)
		if err != nil {
			return Page{}, fmt.Errorf("listing %s events: %w", o.State, err)
		}
		page.Events = append(page.Events, e)
		keys = append(keys, key)
	}
	if err := rows.Err(); err != nil {
		return Page{}, fmt.Errorf("listing %s events: %w", o.State, err)
	}
	if len(page.Events) > limit {
		last := page.Events[limit-1]
		page.Events = page.Events[:limit]
		page.Next = encodeCursor(cursor{Key: keys[limit-1], Seq: last.Seq})
	}
	if page.Events == nil {
		page.Events = []Event{}
	}
	return page, nil
}

// countMatchingCap bounds the exact count of CountMatching.
const countMatchingCap = 10_000

// CountMatching is how many events List would page through for state and f: exact
// up to 10,000, past that the planner's estimate, marked.
func (i *Inspector) CountMatching(ctx context.Context, state wire.State, f Filter) (Count, error) {
	if err := f.Validate(); err != nil {
		return Count{}, invalidRequest{err}
	}
	table, w, err := stateWhere(state, f.withoutJSON())
	if err != nil {
		return Count{}, err
	}
	if f.SearchesJSON() {
		terms := w.jsonConds(f)
		c, err := i.countJSON(ctx, table, w, terms)
		if err != nil {
			return Count{}, fmt.Errorf("counting %s events: %w", state, err)
		}
		return c, nil
	}
	c, err := countCapped(ctx, i.pool, i.q.SQL("matching", map[string]any{"table": table, "where": w.sql()}), countMatchingCap, w.args...)
	if err != nil {
		return Count{}, fmt.Errorf("counting %s events: %w", state, err)
	}
	return c, nil
}

// stateWhere is the table that holds the events in state (the archive for
// Archived) and the conditions that select those matching f.
func stateWhere(state wire.State, f Filter) (table string, w where, err error) {
	table, ageCol := "outbox_event", "created_at"
	if state == Archived {
		table, ageCol = "outbox_event_archive", "coalesce(published_at, created_at)"
	} else {
		cond, err := wire.SQL(state)
		if err != nil {
			return "", where{}, invalidRequest{err}
		}
		w.add(cond)
		if state == wire.Published {
			ageCol = "published_at"
		}
	}
	w.addFilter(f, ageCol)
	return table, w, nil
}

// scanEventKey scans the event's columns plus a trailing sort key.
func scanEventKey(rows interface{ Scan(...any) error }, key *string) (Event, error) {
	return scanEvent(rowWithKey{rows, key})
}

type rowWithKey struct {
	r   interface{ Scan(...any) error }
	key *string
}

func (r rowWithKey) Scan(dest ...any) error { return r.r.Scan(append(dest, r.key)...) }

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return cursor{}, invalidf("invalid page cursor")
	}
	return c, nil
}
