package inspect

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Filter narrows a List or an action's target. Zero fields do not filter. All fields
// are matched through query parameters, never spliced into SQL.
type Filter struct {
	EventType     string `json:"event_type,omitempty"`
	AggregateType string `json:"aggregate_type,omitempty"`
	AggregateID   string `json:"aggregate_id,omitempty"`
	// IDPrefix matches the start of event_id's text form (hex digits and dashes; a
	// complete id matches exactly, through the primary key).
	IDPrefix string `json:"id_prefix,omitempty"`
	// ErrorContains matches last_error case-insensitively as plain text.
	ErrorContains string `json:"error_contains,omitempty"`
	// OlderThan and NewerThan bound the event's age: since published_at for
	// published and archived events, since created_at otherwise.
	OlderThan time.Duration `json:"older_than,omitempty"`
	NewerThan time.Duration `json:"newer_than,omitempty"`
	// All makes an empty filter mean "every eligible event" for an action; it has no
	// effect on List.
	All bool `json:"all,omitempty"`
}

// IsZero reports whether f selects nothing in particular.
func (f Filter) IsZero() bool {
	return f.EventType == "" && f.AggregateType == "" && f.AggregateID == "" && f.IDPrefix == "" &&
		f.ErrorContains == "" && f.OlderThan == 0 && f.NewerThan == 0
}

// Validate reports a filter that cannot be matched.
func (f Filter) Validate() error {
	for _, r := range f.IDPrefix {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-') {
			return fmt.Errorf("event id prefix %q: only hex digits and dashes", f.IDPrefix)
		}
	}
	if len(f.IDPrefix) > 36 {
		return fmt.Errorf("event id prefix %q: longer than a uuid", f.IDPrefix)
	}
	if len(f.IDPrefix) == 36 {
		// A whole id is matched through a uuid cast, which fails on a misplaced dash.
		for i, r := range f.IDPrefix {
			if (r == '-') != (i == 8 || i == 13 || i == 18 || i == 23) {
				return fmt.Errorf("event id %q: not a uuid", f.IDPrefix)
			}
		}
	}
	// PostgreSQL text holds neither NUL nor invalid UTF-8: refuse them here, clearly.
	for _, t := range [...]struct{ name, s string }{{"event type", f.EventType}, {"aggregate type", f.AggregateType},
		{"aggregate id", f.AggregateID}, {"error text", f.ErrorContains}} {
		if !utf8.ValidString(t.s) || strings.ContainsRune(t.s, 0) {
			return fmt.Errorf("%s filter %q: not valid UTF-8 text", t.name, t.s)
		}
	}
	if f.OlderThan < 0 || f.NewerThan < 0 {
		return fmt.Errorf("ages must not be negative")
	}
	return nil
}

// where accumulates a WHERE clause from fixed fragments and numbered parameters.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(w.args)), 1)
	}
	w.conds = append(w.conds, "("+cond+")")
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return "true"
	}
	return strings.Join(w.conds, " AND ")
}

// addFilter adds f's conditions. ageCol is the column ages count from: published_at
// where every row is published (so the published index serves), else an expression.
func (w *where) addFilter(f Filter, ageCol string) {
	if f.EventType != "" {
		w.add("event_type = ?", f.EventType)
	}
	if f.AggregateType != "" {
		w.add("aggregate_type = ?", f.AggregateType)
	}
	if f.AggregateID != "" {
		w.add("aggregate_id = ?", f.AggregateID)
	}
	if p := strings.ToLower(f.IDPrefix); len(p) == 36 {
		w.add("event_id = ?::uuid", p)
	} else if p != "" {
		w.add("left(event_id::text, ?) = ?", len(p), p)
	}
	if f.ErrorContains != "" {
		w.add("strpos(lower(last_error), lower(?)) > 0", f.ErrorContains)
	}
	if f.OlderThan > 0 {
		w.add(ageCol+" <= now() - ?::interval", interval(f.OlderThan))
	}
	if f.NewerThan > 0 {
		w.add(ageCol+" > now() - ?::interval", interval(f.NewerThan))
	}
}

func (w *where) addIDs(ids []string) {
	if len(ids) > 0 {
		w.add("event_id = ANY(?::uuid[])", ids)
	}
}

// interval renders d as a PostgreSQL interval literal, passed as a parameter.
func interval(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}
