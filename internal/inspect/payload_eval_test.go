package inspect

import (
	"encoding/json"
	"math/big"
)

// MatchJSON is the brute-force Go reading of f's payload and header terms
// over one row's columns (nil: SQL NULL): what the property test compares the
// database's answer with. It follows SQL/JSON's strict mode and jsonb's @>.
func MatchJSON(f Filter, payload, headers []byte) (bool, error) {
	terms, err := f.jsonTerms()
	if err != nil {
		return false, err
	}
	docs := map[string][]byte{"payload": payload, "headers": headers}
	for _, t := range terms {
		raw := docs[t.column]
		if raw == nil {
			return false, nil
		}
		doc, err := decodeJSON(string(raw))
		if err != nil {
			return false, err
		}
		if !t.match(doc) {
			return false, nil
		}
	}
	return true, nil
}

func (t jsonTerm) match(doc any) bool {
	if t.kind == containsTerm {
		return contains(doc, t.contains)
	}
	items, ok := walk(doc, t.steps)
	if !ok {
		return false // strict mode: a structural error makes @? NULL
	}
	if t.kind == existsTerm {
		return len(items) > 0
	}
	for _, v := range items {
		if t.value.equals(v) {
			return true
		}
	}
	return false
}

func walk(doc any, steps []pathStep) ([]any, bool) {
	cur := []any{doc}
	for _, st := range steps {
		var next []any
		for _, v := range cur {
			switch st.index {
			case keyStep:
				m, ok := v.(map[string]any)
				if !ok {
					return nil, false
				}
				e, ok := m[st.key]
				if !ok {
					return nil, false
				}
				next = append(next, e)
			case anyStep:
				a, ok := v.([]any)
				if !ok {
					return nil, false
				}
				next = append(next, a...)
			default:
				a, ok := v.([]any)
				if !ok || st.index >= len(a) {
					return nil, false
				}
				next = append(next, a[st.index])
			}
		}
		cur = next
	}
	return cur, true
}

func (jv jsonValue) equals(v any) bool {
	if s, ok := v.(string); ok {
		return s == jv.text
	}
	switch jv.scalar {
	case "":
		return false
	case "null":
		return v == nil
	case "true", "false":
		b, ok := v.(bool)
		return ok && b == (jv.scalar == "true")
	}
	n, ok := v.(json.Number)
	return ok && sameNumber(string(n), jv.scalar)
}

func sameNumber(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// contains is jsonb's a @> b.
func contains(a, b any) bool {
	switch bv := b.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			return false
		}
		for k, x := range bv {
			y, ok := av[k]
			if !ok || !containsValue(y, x) {
				return false
			}
		}
		return true
	case []any:
		av, ok := a.([]any)
		if !ok {
			return false
		}
		for _, x := range bv {
			found := false
			for _, y := range av {
				if containsValue(y, x) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return scalarEqual(a, b)
}

// containsValue: inside a container, values match in kind: an object only an
// object, an array only an array, a scalar only an equal scalar.
func containsValue(y, x any) bool {
	switch x.(type) {
	case map[string]any:
		_, ok := y.(map[string]any)
		return ok && contains(y, x)
	case []any:
		_, ok := y.([]any)
		return ok && contains(y, x)
	}
	return scalarEqual(y, x)
}

func scalarEqual(a, b any) bool {
	switch x := b.(type) {
	case json.Number:
		y, ok := a.(json.Number)
		return ok && sameNumber(string(x), string(y))
	case string, bool, nil:
		switch a.(type) {
		case map[string]any, []any:
			return false
		}
		return a == b
	}
	return false
}
