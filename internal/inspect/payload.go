package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A JSON term searches inside the payload or the headers column (Filter.Payload,
// Filter.Headers). Its syntax is one of three forms:
//
//	PATH            the path exists (its value may be null)
//	PATH=VALUE      the value at the path equals VALUE
//	{...}           containment: the column holds this JSON object (jsonb @>)
//
// A payload PATH is keys separated by dots, each bare (any characters but
// . [ ] " = \ spaces and control characters) or a JSON string in double quotes
// ("a.b" is one key with a dot in it), and array steps: [N] is element N
// (from 0), [*] any element. customer.id, items[0].sku, items[*].sku,
// "order.v2".total and [0].id are paths. A path names one place: where it
// meets an array and names a key, or meets anything but an array and names an
// element, it matches nothing (SQL/JSON's strict mode).
//
// A header's key is the text before the first = (or a JSON string in double
// quotes, for a key holding = or starting with a quote), taken as it is:
// headers is a flat object, and a dot is part of the key.
//
// VALUE is matched literally, never parsed as a path or SQL:
//
//	"..."               a JSON string: only that string matches
//	42, -1.5, 1e3       a JSON number: that number (42 also matches 42.0) or the
//	                    string with exactly this text ("42")
//	true, false, null   that JSON literal or the string "true", "false", "null"
//	anything else       that string, as written (empty included)
//
// The string form of a number matters because producers write ids both ways,
// and a header the relay sends is text whatever its JSON type.
//
// A term is at most maxTermBytes long, valid UTF-8, without NUL (PostgreSQL's
// text and jsonb hold none) and without other control characters outside a
// JSON string's escapes. Each term becomes one condition with one parameter:
// column @? $n::jsonpath (built from the validated parts, every key and string
// a quoted jsonpath string) or column @> $n::jsonb, both of which a GIN index
// on the column (jsonb_path_ops or the default jsonb_ops) can serve.
type jsonTerm struct {
	column   string // "payload" or "headers"
	kind     jsonTermKind
	steps    []pathStep
	value    jsonValue
	contains any // kind containsTerm: the object, decoded with json.Number
}

type jsonTermKind int

const (
	existsTerm jsonTermKind = iota
	equalsTerm
	containsTerm
)

// pathStep is one step of a path: a key, an element, or any element.
type pathStep struct {
	key   string
	index int // >= 0: element index; -1: a key; -2: any element
}

const (
	keyStep = -1
	anyStep = -2
)

// jsonValue is the VALUE of PATH=VALUE: text, and when written bare as a JSON
// number or literal, that scalar too.
type jsonValue struct {
	text   string
	scalar string // "" (a string only), a JSON number, "true", "false" or "null"
}

// Limits on a term, so that a pasted document or a runaway path is refused
// plainly instead of costing the database.
const (
	maxTermBytes = 4096
	maxPathSteps = 32
	maxIndex     = 1_000_000
	maxDepth     = 32
)

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// parseJSONTerm reads one term of column ("payload" or "headers").
func parseJSONTerm(column, s string) (jsonTerm, error) {
	t := jsonTerm{column: column}
	what := column
	if column == "headers" {
		what = "header"
	}
	fail := func(format string, args ...any) (jsonTerm, error) {
		return jsonTerm{}, fmt.Errorf("%s search %s: %s", what, quoteTerm(s), fmt.Sprintf(format, args...))
	}
	switch {
	case len(s) > maxTermBytes:
		return fail("longer than %d bytes", maxTermBytes)
	case !utf8.ValidString(s):
		return fail("not valid UTF-8")
	case strings.ContainsRune(s, 0):
		return fail("holds a NUL character")
	case strings.TrimSpace(s) == "":
		return fail("empty: give a path, path=value or a JSON object")
	}
	if strings.HasPrefix(strings.TrimLeft(s, " \t"), "{") {
		v, err := decodeJSON(s)
		if err != nil {
			return fail("not a JSON object: %v", err)
		}
		if _, ok := v.(map[string]any); !ok {
			return fail("not a JSON object")
		}
		if err := checkJSON(v, 0); err != nil {
			return fail("%v", err)
		}
		t.kind, t.contains = containsTerm, v
		return t, nil
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fail("holds a control character: write it as a JSON escape in a quoted key or value")
		}
	}
	var rest string
	var err error
	if column == "headers" {
		var key string
		key, rest, err = headerKey(s)
		if err != nil {
			return fail("%v", err)
		}
		t.steps = []pathStep{{key: key, index: keyStep}}
	} else {
		t.steps, rest, err = parsePath(s)
		if err != nil {
			return fail("%v", err)
		}
	}
	if rest == "" {
		t.kind = existsTerm
		return t, nil
	}
	// rest starts with "=".
	t.kind = equalsTerm
	t.value, err = parseValue(rest[1:])
	if err != nil {
		return fail("%v", err)
	}
	return t, nil
}

// quoteTerm shows a term in an error, cut short and with its control
// characters escaped.
func quoteTerm(s string) string {
	if len(s) > 60 {
		s = s[:60]
		for !utf8.ValidString(s) && len(s) > 0 {
			s = s[:len(s)-1]
		}
		return strconv.Quote(s) + "…"
	}
	return strconv.Quote(s)
}

// headerKey reads a header term's key: up to the first =, or a JSON string.
func headerKey(s string) (key, rest string, err error) {
	if strings.HasPrefix(s, `"`) {
		key, n, err := jsonStringPrefix(s)
		if err != nil {
			return "", "", err
		}
		rest = s[n:]
		if rest != "" && rest[0] != '=' {
			return "", "", fmt.Errorf("after the quoted key, = or nothing")
		}
		if key == "" {
			return "", "", fmt.Errorf("empty header key")
		}
		return key, rest, nil
	}
	key, _, found := strings.Cut(s, "=")
	if key == "" {
		return "", "", fmt.Errorf("empty header key")
	}
	if found {
		rest = s[len(key):]
	}
	return key, rest, nil
}

// parsePath reads a payload path up to its end or the = after it.
func parsePath(s string) (steps []pathStep, rest string, err error) {
	i := 0
	first := true
	for {
		if len(steps) >= maxPathSteps {
			return nil, "", fmt.Errorf("a path of more than %d steps", maxPathSteps)
		}
		switch {
		case i < len(s) && s[i] == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, "", fmt.Errorf("unclosed [ at byte %d", i+1)
			}
			in := s[i+1 : i+end]
			switch {
			case in == "*":
				steps = append(steps, pathStep{index: anyStep})
			case in != "" && strings.Trim(in, "0123456789") == "" && (in == "0" || in[0] != '0'):
				n, err := strconv.Atoi(in)
				if err != nil || n > maxIndex {
					return nil, "", fmt.Errorf("array index %s out of range (0 to %d)", in, maxIndex)
				}
				steps = append(steps, pathStep{index: n})
			default:
				return nil, "", fmt.Errorf("array step [%s]: write [N] (N from 0) or [*]", in)
			}
			i += end + 1
		case first || i < len(s) && s[i] == '.':
			if !first {
				i++ // the dot
			}
			if i < len(s) && s[i] == '"' {
				key, n, err := jsonStringPrefix(s[i:])
				if err != nil {
					return nil, "", err
				}
				steps = append(steps, pathStep{key: key, index: keyStep})
				i += n
				break
			}
			start := i
			for i < len(s) && !strings.ContainsRune(`.[]"=\ `, rune(s[i])) {
				i++
			}
			if i == start {
				if i < len(s) && strings.ContainsRune(`]\ `, rune(s[i])) {
					return nil, "", quoteKey(s, i)
				}
				return nil, "", fmt.Errorf("empty key at byte %d: keys are separated by single dots", i+1)
			}
			steps = append(steps, pathStep{key: s[start:i], index: keyStep})
		default:
			if s[i] == '=' {
				return steps, s[i:], nil
			}
			if strings.ContainsRune(`]"\ `, rune(s[i])) {
				return nil, "", quoteKey(s, i)
			}
			return nil, "", fmt.Errorf("%q at byte %d: expected ., [ or =", s[i], i+1)
		}
		first = false
		if i == len(s) {
			return steps, "", nil
		}
	}
}

// quoteKey is the error for a character of s (at i) that a bare key cannot hold.
func quoteKey(s string, i int) error {
	return fmt.Errorf("%q at byte %d: a key holding it goes in double quotes, as a JSON string (\"a b\")", s[i], i+1)
}

// jsonStringPrefix reads the JSON string at the start of s: its value and its
// length in s.
func jsonStringPrefix(s string) (string, int, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			var v string
			if err := json.Unmarshal([]byte(s[:i+1]), &v); err != nil {
				return "", 0, fmt.Errorf("quoted text %s: not a JSON string", s[:i+1])
			}
			if strings.ContainsRune(v, 0) {
				return "", 0, fmt.Errorf("quoted text holds a NUL character")
			}
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated quote")
}

// parseValue reads the VALUE of PATH=VALUE.
func parseValue(s string) (jsonValue, error) {
	if strings.HasPrefix(s, `"`) {
		v, n, err := jsonStringPrefix(s)
		if err != nil {
			return jsonValue{}, err
		}
		if n != len(s) {
			return jsonValue{}, fmt.Errorf("text after the quoted value")
		}
		return jsonValue{text: v}, nil
	}
	switch s {
	case "true", "false", "null":
		return jsonValue{text: s, scalar: s}, nil
	}
	if jsonNumber.MatchString(s) {
		if !numberInRange(s) {
			return jsonValue{}, fmt.Errorf("number %s out of range", s)
		}
		return jsonValue{text: s, scalar: s}, nil
	}
	return jsonValue{text: s}, nil
}

// numberInRange keeps numbers to what float64 holds, well inside PostgreSQL's
// numeric, and short: 1e999999999 is refused before anything (PostgreSQL, or
// an exact decimal in Go) spends its time on ten to that power.
func numberInRange(s string) bool {
	if len(s) > 100 {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// decodeJSON decodes one JSON document, numbers kept as written.
func decodeJSON(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("text after the object")
	}
	return v, nil
}

// checkJSON refuses what jsonb cannot hold (NUL), numbers out of range and
// deep nesting.
func checkJSON(v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	switch x := v.(type) {
	case string:
		if strings.ContainsRune(x, 0) {
			return fmt.Errorf("a string holds a NUL character")
		}
	case json.Number:
		if !numberInRange(string(x)) {
			return fmt.Errorf("number %s out of range", x)
		}
	case []any:
		for _, e := range x {
			if err := checkJSON(e, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.ContainsRune(k, 0) {
				return fmt.Errorf("a key holds a NUL character")
			}
			if err := checkJSON(e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// condition is the term's SQL condition: a fixed fragment with one parameter.
func (t jsonTerm) condition(w *where) string {
	if t.kind == containsTerm {
		b, _ := marshalJSON(t.contains)
		return t.column + " @> " + w.arg(string(b)) + "::jsonb"
	}
	return t.column + " @? " + w.arg(t.jsonPath()) + "::jsonpath"
}

// jsonPath is the term as an SQL/JSON path in strict mode: every key and
// string a quoted jsonpath string, numbers and literals as validated.
func (t jsonTerm) jsonPath() string {
	var b strings.Builder
	b.WriteString("strict $")
	for _, st := range t.steps {
		switch st.index {
		case keyStep:
			b.WriteByte('.')
			writePathString(&b, st.key)
		case anyStep:
			b.WriteString("[*]")
		default:
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
		}
	}
	if t.kind == equalsTerm {
		b.WriteString(" ? (")
		if t.value.scalar != "" {
			b.WriteString("@ == " + t.value.scalar + " || ")
		}
		b.WriteString("@ == ")
		writePathString(&b, t.value.text)
		b.WriteString(")")
	}
	return b.String()
}

// writePathString writes s as a jsonpath string literal: quotes and
// backslashes escaped, control characters as \u escapes, the rest as is.
func writePathString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// marshalJSON writes v compactly, without HTML escapes.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// jsonTerms parses f's payload and header terms.
func (f Filter) jsonTerms() ([]jsonTerm, error) {
	var out []jsonTerm
	for _, s := range f.Payload {
		t, err := parseJSONTerm("payload", s)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	for _, s := range f.Headers {
		t, err := parseJSONTerm("headers", s)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// SearchesJSON reports whether f searches inside payloads or headers, which
// no index of the schema serves: a List then reads a bounded number of rows
// (ListOptions.MaxScan) unless the planner finds an index of the operator's.
func (f Filter) SearchesJSON() bool { return len(f.Payload) > 0 || len(f.Headers) > 0 }
