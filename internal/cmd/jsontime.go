package cmd

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// farTimeJSON encodes v as encoding/json does, except that each time.Time is
// written as inspect.TimeJSON writes it: RFC 3339 within years 0 to 9999, the
// PostgreSQL text form outside them. encoding/json fails the whole document on
// one such time ("year outside of range [0,9999]"), and PostgreSQL stores them
// (an available_at of '294276-12-31' or '4713-11-24 BC'); writeJSON takes this
// way only then, so every other document is encoding/json's own.
//
// It follows encoding/json's rules for what it walks: exported fields under
// their tag's name, omitempty, promoted fields of embedded structs (the
// shallowest wins, a tagged one among equals, none when still tied), nil
// pointers, slices and maps as null, map keys sorted. Values of a type with its
// own MarshalJSON or MarshalText, and any value that holds no time.Time, are
// encoding/json's.
func farTimeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeFar(&b, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	mayHoldTimeCache  sync.Map // reflect.Type → bool
)

func encodeFar(b *bytes.Buffer, v reflect.Value) error {
	if !v.IsValid() {
		b.WriteString("null")
		return nil
	}
	t := v.Type()
	if t == timeType {
		s, _ := json.Marshal(inspect.TimeJSON(v.Interface().(time.Time)))
		b.Write(s)
		return nil
	}
	if !mayHoldTime(t) {
		if !v.CanInterface() {
			return fmt.Errorf("json: cannot encode an unexported %s", t)
		}
		s, err := json.Marshal(v.Interface())
		if err != nil {
			return err
		}
		b.Write(s)
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return encodeFar(b, v.Elem())
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeFar(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("json: cannot encode a map keyed by %s holding times", t.Key())
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(k.String())
			b.Write(name)
			b.WriteByte(':')
			if err := encodeFar(b, v.MapIndex(k)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case reflect.Struct:
		b.WriteByte('{')
		first := true
	fields:
		for _, f := range jsonFields(t) {
			fv := v
			for _, i := range f.index {
				if fv.Kind() == reflect.Pointer {
					if fv.IsNil() {
						continue fields // a field of a nil embedded pointer: left out
					}
					fv = fv.Elem()
				}
				fv = fv.Field(i)
			}
			if f.omitEmpty && isEmptyJSON(fv) {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			name, _ := json.Marshal(f.name)
			b.Write(name)
			b.WriteByte(':')
			if f.quoted {
				return fmt.Errorf("json: the ,string option is not supported on %s.%s", t, f.name)
			}
			if err := encodeFar(b, fv); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	return fmt.Errorf("json: cannot encode %s", t)
}

// mayHoldTime reports whether encoding a value of t may come upon a time.Time
// that farTimeJSON must write itself: false for a type with its own
// MarshalJSON or MarshalText (encoding/json calls it), and for one that
// cannot hold a time.Time.
func mayHoldTime(t reflect.Type) bool {
	if v, ok := mayHoldTimeCache.Load(t); ok {
		return v.(bool)
	}
	mayHoldTimeCache.Store(t, false) // a recursive type: assume not while it is looked at
	held := holdsTime(t)
	mayHoldTimeCache.Store(t, held)
	return held
}

func holdsTime(t reflect.Type) bool {
	switch {
	case t == timeType:
		return true
	case t.Kind() == reflect.Pointer && !(marshals(t) && !marshals(t.Elem())):
		// A pointer is what it points to (a *time.Time is a time.Time, whose
		// MarshalJSON its method set holds), unless its own methods marshal it.
		return mayHoldTime(t.Elem())
	case marshals(t) || marshals(reflect.PointerTo(t)):
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true // what it holds is known only from the value
	case reflect.Slice, reflect.Array, reflect.Map:
		return mayHoldTime(t.Elem())
	case reflect.Struct:
		for _, f := range jsonFields(t) {
			if mayHoldTime(f.typ) {
				return true
			}
		}
	}
	return false
}

// marshals reports whether t's method set holds MarshalJSON or MarshalText.
func marshals(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)
}

// jsonField is a field encoding/json writes: its name, where it is (through
// embedded structs) and its options.
type jsonField struct {
	name      string
	index     []int
	typ       reflect.Type
	tagged    bool
	omitEmpty bool
	quoted    bool
}

var jsonFieldsCache sync.Map // reflect.Type → []jsonField

// jsonFields are the fields encoding/json writes of the struct type t, in the
// order it writes them.
func jsonFields(t reflect.Type) []jsonField {
	if f, ok := jsonFieldsCache.Load(t); ok {
		return f.([]jsonField)
	}
	type level struct {
		typ   reflect.Type
		index []int
	}
	var all []jsonField
	depth := map[string]int{}
	visited := map[reflect.Type]bool{}
	current := []level{{typ: t}}
	for d := 0; len(current) > 0; d++ {
		var next []level
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				index := append(slices.Clone(l.index), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{typ: ft, index: index})
					continue
				}
				f := jsonField{name: name, index: index, typ: sf.Type, tagged: name != ""}
				if name == "" {
					f.name = sf.Name
				}
				for o := range strings.SplitSeq(opts, ",") {
					switch o {
					case "omitempty":
						f.omitEmpty = true
					case "string":
						f.quoted = true
					}
				}
				all = append(all, f)
				if _, ok := depth[f.name]; !ok {
					depth[f.name] = d
				}
			}
		}
		current = next
	}
	// Dominance: per name, the shallowest; among several as shallow, the one
	// tagged; still several: none.
	var kept []jsonField
	for name := range depth {
		var best []jsonField
		for _, f := range all {
			if f.name == name && len(f.index) == depth[name]+1 {
				best = append(best, f)
			}
		}
		if len(best) > 1 {
			var tagged []jsonField
			for _, f := range best {
				if f.tagged {
					tagged = append(tagged, f)
				}
			}
			best = tagged
		}
		if len(best) == 1 {
			kept = append(kept, best[0])
		}
	}
	slices.SortFunc(kept, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	jsonFieldsCache.Store(t, kept)
	return kept
}

// isEmptyJSON is encoding/json's omitempty test.
func isEmptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
