package inspect

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzFilterSQL: a filter's values reach PostgreSQL only as parameters. Two
// filters with the same shape (the same fields set, an id prefix of the same
// length) build the same SQL text whatever their values, and every parameter the
// text names is passed.
func FuzzFilterSQL(f *testing.F) {
	f.Add("OrderPlaced", "order", "42", "0a1b", "timeout", int64(time.Hour), int64(0))
	f.Add("x' OR '1'='1", "a\"; DROP TABLE outbox_event; --", "$1", "f0000001-0000-4000-8000-000000000001", "%_\\", int64(0), int64(time.Minute))
	f.Add("", "", "", "------------------------------------", "?", int64(-1), int64(1<<62))
	f.Add("?", "??", "$2?", "ABCDEF", "\x00", int64(1), int64(1))
	f.Fuzz(func(t *testing.T, eventType, aggType, aggID, idPrefix, errText string, older, newer int64) {
		flt := Filter{EventType: eventType, AggregateType: aggType, AggregateID: aggID, IDPrefix: idPrefix,
			ErrorContains: errText, OlderThan: time.Duration(older), NewerThan: time.Duration(newer)}
		if flt.Validate() != nil {
			return
		}
		var w where
		w.addFilter(flt, "created_at")
		shape := Filter{EventType: neutral(eventType), AggregateType: neutral(aggType), AggregateID: neutral(aggID),
			IDPrefix: idShape(idPrefix), ErrorContains: neutral(errText), OlderThan: flt.OlderThan, NewerThan: flt.NewerThan}
		var ws where
		ws.addFilter(shape, "created_at")
		if w.sql() != ws.sql() {
			t.Fatalf("filter values changed the SQL text:\n%s\nvs\n%s", w.sql(), ws.sql())
		}
		for n := 1; n <= len(w.args)+1; n++ {
			has := strings.Contains(w.sql(), "$"+strconv.Itoa(n)+")") || strings.Contains(w.sql(), "$"+strconv.Itoa(n)+":") || strings.Contains(w.sql(), "$"+strconv.Itoa(n)+" ")
			if has != (n <= len(w.args)) {
				t.Fatalf("placeholder $%d present=%v with %d args: %s", n, has, len(w.args), w.sql())
			}
		}
		if strings.Contains(w.sql(), "?") {
			t.Fatalf("unbound ? left in %s", w.sql())
		}
	})
}

func neutral(s string) string {
	if s == "" {
		return ""
	}
	return "x"
}

// idShape keeps what decides the SQL for an id prefix: whether it is a whole uuid.
func idShape(p string) string {
	if p == "" {
		return ""
	}
	if len(p) == 36 {
		return "00000000-0000-4000-8000-000000000000" // Validate passed: a whole uuid
	}
	return "0"
}

// FuzzJSONTermSQL: a payload or header term is refused, or becomes one fixed
// condition with one parameter; in a jsonpath parameter every key and string
// the term holds is a quoted jsonpath string (decoding back to the text
// written), and only validated numbers and literals stand outside quotes; a
// containment parameter is a JSON object.
func FuzzJSONTermSQL(f *testing.F) {
	for _, s := range []string{"customer.id=42", "customer.id", `{"customer":{"tier":"gold"}}`, `items[*].sku="x"`,
		`a=' || true || "`, "a=$1", `"a.b"[0]=null`, "a=\x00", "a=\xff", `a."\u0000"`, "x=1e999", "a=)||(@ == 1",
		`trace-id=abc'; DROP TABLE outbox_event; --`, `a=\"`, `{"a":[1,{"b":"\u001b[31m"}]}`, "[0][*].a=-0.5E-3"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	skeleton := regexp.MustCompile(`^strict \$(\.S|\[\*\]|\[[0-9]+\])*( \? \((@ == (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|true|false|null) \|\| )?@ == S\))?$`)
	f.Fuzz(func(t *testing.T, term string, header bool) {
		column := "payload"
		flt := Filter{Payload: []string{term}}
		if header {
			column, flt = "headers", Filter{Headers: []string{term}}
		}
		tm, err := parseJSONTerm(column, term)
		if (err == nil) != (flt.Validate() == nil) {
			t.Fatalf("parse and Validate disagree on %q: %v", term, err)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a two-line error: %q", err)
			}
			return
		}
		var w where
		w.addFilter(flt, "created_at")
		if len(w.args) != 1 {
			t.Fatalf("%q: %d parameters", term, len(w.args))
		}
		param := w.args[0].(string)
		switch w.sql() {
		case "(" + column + " @> $1::jsonb)":
			var obj map[string]any
			if json.Unmarshal([]byte(param), &obj) != nil || tm.kind != containsTerm {
				t.Fatalf("%q: containment parameter %q is not a JSON object", term, param)
			}
			return
		case "(" + column + " @? $1::jsonpath)":
		default:
			t.Fatalf("%q: condition %s", term, w.sql())
		}
		// Cut out the quoted strings: what is left is fixed syntax.
		var rest strings.Builder
		var quoted []string
		for i := 0; i < len(param); i++ {
			if param[i] != '"' {
				rest.WriteByte(param[i])
				continue
			}
			j := i + 1
			for ; param[j] != '"'; j++ {
				if param[j] == '\\' {
					j++
				}
			}
			var s string
			if err := json.Unmarshal([]byte(param[i:j+1]), &s); err != nil {
				t.Fatalf("%q: %s holds a string jsonpath and JSON read differently: %v", term, param, err)
			}
			quoted = append(quoted, s)
			rest.WriteByte('S')
			i = j
		}
		if !skeleton.MatchString(rest.String()) {
			t.Fatalf("%q: jsonpath %s has %s outside its strings", term, param, rest.String())
		}
		var keys []string
		for _, st := range tm.steps {
			if st.index == keyStep {
				keys = append(keys, st.key)
			}
		}
		if tm.kind == equalsTerm {
			keys = append(keys, tm.value.text)
		}
		if !slices.Equal(quoted, keys) {
			t.Fatalf("%q: jsonpath %s quotes %q, want %q", term, param, quoted, keys)
		}
	})
}
