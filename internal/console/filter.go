package console

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/termtext"
)

// filterKey edits the filter line: printable text is typed, backspace deletes,
// enter applies, esc cancels.
func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch s := msg.String(); {
	case m.audit.filtering && (s == "esc" || s == "enter"):
		return m.auditFilterDone(s == "enter")
	}
	switch msg.String() {
	case "esc":
		m.mode = modeNormal
		return nil
	case "enter":
		m.mode = modeNormal
		if m.view == viewOverview {
			typ, id, ok := aggregateOf(string(m.filterInput))
			if !ok {
				m.setStatus("in the Overview, / opens an aggregate: agg:TYPE/ID", true)
				return nil
			}
			return m.openAggregate(typ, id)
		}
		q, err := parseQuery(string(m.filterInput))
		if err != nil {
			m.setStatus("filter: "+err.Error(), true)
			return nil
		}
		m.filters[m.view] = q
		if t := m.tables[m.view]; t != nil {
			t.cursor, t.offset = 0, 0
			t.rows, t.loaded, t.want = nil, false, 0
		}
		m.setStatus("", false)
		return m.startLoad()
	case "backspace":
		if n := len(m.filterInput); n > 0 {
			m.filterInput = m.filterInput[:n-1]
		}
		return nil
	case "ctrl+u":
		m.filterInput = nil
		return nil
	}
	if t := msg.Key().Text; t != "" && len(m.filterInput) < 200 {
		m.filterInput = append(m.filterInput, []rune(termtext.Sanitize(t))...)
	}
	return nil
}

// query is a parsed filter: "type:", "agg:", "aggtype:", "id:", "err:",
// "payload:" and "header:" terms and bare words (each must appear in the event
// type, aggregate, event id or last error) all go to the database
// (inspect.Filter), so they search every event, not only the loaded ones.
// payload: and header: take what --payload and --header take (PATH,
// PATH=VALUE, a JSON object), each term on its own.
type query struct {
	text   string
	filter inspect.Filter
}

func parseQuery(s string) (query, error) {
	q := query{text: strings.TrimSpace(s)}
	fields, err := queryFields(s)
	if err != nil {
		return q, err
	}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, ":")
		if ok && v != "" {
			switch strings.ToLower(k) {
			case "type":
				q.filter.EventType = v
				continue
			case "agg":
				q.filter.AggregateID = v
				continue
			case "aggtype":
				q.filter.AggregateType = v
				continue
			case "id":
				q.filter.IDPart = strings.ToLower(v)
				continue
			case "err":
				q.filter.ErrorContains = v
				continue
			case "payload":
				q.filter.Payload = append(q.filter.Payload, v)
				continue
			case "header":
				q.filter.Headers = append(q.filter.Headers, v)
				continue
			}
		}
		q.filter.Words = append(q.filter.Words, f)
	}
	return q, q.filter.Validate()
}

// queryFields splits a filter at spaces; a term's value (or a bare word) in Go
// quotes, as the Overview's jumps write them (err:"broker not available"), is one
// field, unquoted. A payload: or header: term is kept as typed, JSON-aware: a
// space inside a JSON string or object does not end it
// (payload:customer.name="Ann Lee", payload:{"tier": "gold"}).
func queryFields(s string) ([]string, error) {
	var out []string
	for s = strings.TrimLeft(s, " \t"); s != ""; s = strings.TrimLeft(s, " \t") {
		k, rest, _ := strings.Cut(s, ":")
		if jsonKey(k) {
			n, err := jsonTermEnd(rest)
			if err != nil {
				return nil, fmt.Errorf("%s term: %v", strings.ToLower(k), err)
			}
			out = append(out, k+":"+rest[:n])
			s = rest[n:]
			continue
		}
		prefix, quoted := "", s
		if !strings.HasPrefix(s, `"`) && strings.HasPrefix(rest, `"`) && !strings.ContainsAny(k, " \t") {
			prefix, quoted = k+":", rest
		}
		if strings.HasPrefix(quoted, `"`) {
			if lit, err := strconv.QuotedPrefix(quoted); err == nil {
				v, _ := strconv.Unquote(lit)
				out = append(out, prefix+v)
				s = quoted[len(lit):]
				continue
			}
			return nil, fmt.Errorf("unterminated quote in %q", s)
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out, nil
}

// jsonKey reports whether k names a term whose value is JSON-aware.
func jsonKey(k string) bool {
	switch strings.ToLower(k) {
	case "payload", "header":
		return true
	}
	return false
}

// jsonTermEnd is the length of the payload or header term at the start of s:
// up to a space or tab outside a JSON string and outside braces and brackets.
func jsonTermEnd(s string) (int, error) {
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case (c == '}' || c == ']') && depth > 0:
			depth--
		case (c == ' ' || c == '\t') && depth == 0:
			return i, nil
		}
	}
	if inString {
		return 0, fmt.Errorf("unterminated quote")
	}
	return len(s), nil
}

// searchBudget is how many rows a load's search inside payloads or headers
// reads when no index serves it: inspect.DefaultMaxScan for the first page of
// rows, as much again for each page the cursor asked for by reaching the end
// (so scrolling on searches further); 0 when f searches neither.
func searchBudget(f inspect.Filter, want, limit int) int {
	if !f.SearchesJSON() {
		return 0
	}
	return searchRows * max(1, want/max(limit, 1))
}

// searchRows is a load's budget for its first page of rows (a variable for
// the tests, which search tables smaller than inspect.DefaultMaxScan).
var searchRows = inspect.DefaultMaxScan

// searchedText is the list line's account of a search inside payloads or
// headers that stopped at its budget: what it found, how many rows it read of
// the Overview's count of the state, and what to do.
func (m *Model) searchedText(found int, scan *inspect.Scan) string {
	of := ""
	if c, ok := m.stateCount(m.view); ok {
		c.Value = max(c.Value, scan.Scanned)
		of = " of " + c.String()
	}
	return fmt.Sprintf("%d found · searched %d%s %s events: narrow the search", found, scan.Scanned, of,
		strings.ToLower(listViews[m.view].title))
}
