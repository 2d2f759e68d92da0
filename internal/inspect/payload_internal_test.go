package inspect

import (
	"strings"
	"testing"
)

// TestJSONTermSyntax: what each form of a term becomes, and what is refused
// with which words.
func TestJSONTermSyntax(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ column, term, want string }{
		{"payload", "customer.id=42", `strict $."customer"."id" ? (@ == 42 || @ == "42")`},
		{"payload", `customer.id="42"`, `strict $."customer"."id" ? (@ == "42")`},
		{"payload", "customer.id", `strict $."customer"."id"`},
		{"payload", "flag=true", `strict $."flag" ? (@ == true || @ == "true")`},
		{"payload", "gone=null", `strict $."gone" ? (@ == null || @ == "null")`},
		{"payload", "n=-1.5e3", `strict $."n" ? (@ == -1.5e3 || @ == "-1.5e3")`},
		{"payload", "tier=gold", `strict $."tier" ? (@ == "gold")`},
		{"payload", "note=", `strict $."note" ? (@ == "")`},
		{"payload", "a=b=c", `strict $."a" ? (@ == "b=c")`},
		{"payload", "a=042", `strict $."a" ? (@ == "042")`},
		{"payload", "items[0].sku=x", `strict $."items"[0]."sku" ? (@ == "x")`},
		{"payload", "items[*].sku", `strict $."items"[*]."sku"`},
		{"payload", "[2]", `strict $[2]`},
		{"payload", `"order.v2".total`, `strict $."order.v2"."total"`},
		{"payload", `a."\u0001\"x\\"=y`, `strict $."a"."\u0001\"x\\" ? (@ == "y")`},
		{"payload", `a=' || true || "`, `strict $."a" ? (@ == "' || true || \"")`},
		{"payload", `$=@`, `strict $."$" ? (@ == "@")`},
		{"payload", `a="line\nbreak"`, `strict $."a" ? (@ == "line\u000abreak")`},
		{"headers", "trace-id=abc", `strict $."trace-id" ? (@ == "abc")`},
		{"headers", "x.y.z", `strict $."x.y.z"`},
		{"headers", "n=7", `strict $."n" ? (@ == 7 || @ == "7")`},
		{"headers", `"a=b"=c`, `strict $."a=b" ? (@ == "c")`},
		{"headers", "a[0]=1", `strict $."a[0]" ? (@ == 1 || @ == "1")`},
	} {
		tm, err := parseJSONTerm(c.column, c.term)
		if err != nil {
			t.Errorf("%s %q: %v", c.column, c.term, err)
			continue
		}
		if got := tm.jsonPath(); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.column, c.term, got, c.want)
		}
	}
	var w where
	tm, err := parseJSONTerm("payload", `{"customer": {"tier": "gold", "n": 1.50}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.condition(&w); got != "payload @> $1::jsonb" || w.args[0] != `{"customer":{"n":1.50,"tier":"gold"}}` {
		t.Errorf("containment: %s %v", got, w.args)
	}
	for _, c := range []struct{ column, term, want string }{
		{"payload", "", "empty"},
		{"payload", "a..b", "empty key at byte 3"},
		{"payload", "a.", "empty key"},
		{"payload", ".a", "empty key at byte 1"},
		{"payload", "=1", "empty key"},
		{"payload", "a b=1", `' ' at byte 2: a key holding it goes in double quotes`},
		{"payload", "a[x]", "array step [x]"},
		{"payload", "a[01]", "array step [01]"},
		{"payload", "a[-1]", "array step [-1]"},
		{"payload", "a[99999999999]", "out of range"},
		{"payload", "a[0", "unclosed ["},
		{"payload", "a]", `']' at byte 2: a key holding it`},
		{"payload", `a"b"`, `'"' at byte 2: a key holding it`},
		{"payload", "a[0]x", `expected ., [ or =`},
		{"payload", `"a`, "unterminated quote"},
		{"payload", `"a\u0000"`, "NUL"},
		{"payload", "a=\x00", "NUL"},
		{"payload", "a=\x1b[31m", "control character"},
		{"payload", "a=\xff", "not valid UTF-8"},
		{"payload", `a="x"y`, "text after the quoted value"},
		{"payload", `a="x`, "unterminated quote"},
		{"payload", "a=1e999", "out of range"},
		{"payload", "a=" + strings.Repeat("x", maxTermBytes), "longer than 4096 bytes"},
		{"payload", strings.Repeat("a.", 40) + "a", "more than 32 steps"},
		{"payload", `{"a":`, "not a JSON object"},
		{"payload", `{"a":1} x`, "text after the object"},
		{"payload", `{"a":"\u0000"}`, "NUL"},
		{"payload", `{"a":1e999}`, "out of range"},
		{"payload", strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40), "nested deeper"},
		{"headers", "=v", "empty header key"},
		{"headers", `""=v`, "empty header key"},
		{"headers", `"a"b`, "after the quoted key"},
	} {
		_, err := parseJSONTerm(c.column, c.term)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %q: error %v, want one line with %q", c.column, c.term, err, c.want)
		}
	}
}
