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
	// IDPart matches the start or the end of event_id's text form: the console's
	// short ids are a UUIDv7's random end (hex digits and dashes).
	IDPart string `json:"id_part,omitempty"`
	// ErrorContains matches last_error case-insensitively as plain text.
	ErrorContains string `json:"error_contains,omitempty"`
	// Words must each appear, case-insensitively as plain text, in the event type,
	// the aggregate type or id, the event id or the last error: the console's
	// plain-word search.
	Words []string `json:"words,omitempty"`
	// OlderThan and NewerThan bound the event's age: since published_at for
	// published and archived events, since created_at otherwise.
	OlderThan time.Duration `json:"older_than,omitempty"`
	NewerThan time.Duration `json:"newer_than,omitempty"`
	// Payload and Headers are searches inside those jsonb columns, each of
	// which must hold: PATH (it exists), PATH=VALUE, or a JSON object the
	// column contains (payload.go has the syntax). A header's PATH is one key.
	Payload []string `json:"payload,omitempty"`
	Headers []string `json:"headers,omitempty"`
	// All makes an empty filter mean "every eligible event" for an action; it has no
	// effect on List.
	All bool `json:"all,omitempty"`
}

// IsZero reports whether f selects nothing in particular.
func (f Filter) IsZero() bool {
	return f.EventType == "" && f.AggregateType == "" && f.AggregateID == "" && f.IDPrefix == "" && f.IDPart == "" &&
		f.ErrorContains == "" && len(f.Words) == 0 && f.OlderThan == 0 && f.NewerThan == 0 &&
		len(f.Payload) == 0 && len(f.Headers) == 0
}

// Validate reports a filter that cannot be matched.
func (f Filter) Validate() error {
	for _, r := range f.IDPrefix + f.IDPart {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-') {
			return fmt.Errorf("event id %q: only hex digits and dashes", f.IDPrefix+f.IDPart)
		}
	}
	if len(f.IDPart) > 36 {
		return fmt.Errorf("event id part %q: longer than a uuid", f.IDPart)
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
	texts := []struct{ name, s string }{{"event type", f.EventType}, {"aggregate type", f.AggregateType},
		{"aggregate id", f.AggregateID}, {"error text", f.ErrorContains}}
	for _, w := range f.Words {
		texts = append(texts, struct{ name, s string }{"search word", w})
	}
	for _, t := range texts {
		if !utf8.ValidString(t.s) || strings.ContainsRune(t.s, 0) {
			return fmt.Errorf("%s filter %q: not valid UTF-8 text", t.name, t.s)
		}
	}
	if f.OlderThan < 0 || f.NewerThan < 0 {
		return fmt.Errorf("ages must not be negative")
	}
	if _, err := f.jsonTerms(); err != nil {
		return err
	}
	return nil
}

// where accumulates a WHERE clause from fixed fragments and numbered parameters.
// A fragment takes the placeholder of each value from arg as it is written; no
// text is rewritten afterwards, so a fragment may hold any SQL (jsonb's ?, ?|
// and ?& operators included) and a value never becomes SQL text.
type where struct {
	conds []string
	args  []any
}

// arg adds v as a parameter and returns its placeholder, $n.
func (w *where) arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

// add ANDs cond to the clause.
func (w *where) add(cond string) {
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
		w.add("event_type = " + w.arg(f.EventType))
	}
	if f.AggregateType != "" {
		w.add("aggregate_type = " + w.arg(f.AggregateType))
	}
	if f.AggregateID != "" {
		w.add("aggregate_id = " + w.arg(f.AggregateID))
	}
	if p := strings.ToLower(f.IDPrefix); len(p) == 36 {
		w.add("event_id = " + w.arg(p) + "::uuid")
	} else if p != "" {
		w.add("left(event_id::text, " + w.arg(len(p)) + ") = " + w.arg(p))
	}
	if p := strings.ToLower(f.IDPart); p != "" {
		n, v := w.arg(len(p)), w.arg(p)
		w.add("left(event_id::text, " + n + ") = " + v + " OR right(event_id::text, " + n + ") = " + v)
	}
	if f.ErrorContains != "" {
		w.add("strpos(lower(last_error), lower(" + w.arg(f.ErrorContains) + ")) > 0")
	}
	for _, word := range f.Words {
		v := w.arg(word)
		w.add(`strpos(lower(event_type), lower(` + v + `)) > 0 OR strpos(lower(aggregate_type || '/' || aggregate_id), lower(` + v + `)) > 0
			OR strpos(event_id::text, lower(` + v + `)) > 0 OR strpos(lower(coalesce(last_error, '')), lower(` + v + `)) > 0`)
	}
	if f.OlderThan > 0 {
		w.add(ageCol + " <= now() - " + w.arg(interval(f.OlderThan)) + "::interval")
	}
	if f.NewerThan > 0 {
		w.add(ageCol + " > now() - " + w.arg(interval(f.NewerThan)) + "::interval")
	}
	w.addJSONTerms(f)
}

// addJSONTerms adds f's payload and header terms. Validate has read them; one
// that does not parse here matches nothing rather than being left out.
func (w *where) addJSONTerms(f Filter) {
	terms, err := f.jsonTerms()
	if err != nil {
		w.add("false")
		return
	}
	for _, t := range terms {
		w.add(t.condition(w))
	}
}

func (w *where) addIDs(ids []string) {
	if len(ids) > 0 {
		w.add("event_id = ANY(" + w.arg(ids) + "::uuid[])")
	}
}

// interval renders d as a PostgreSQL interval literal, passed as a parameter.
func interval(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}
