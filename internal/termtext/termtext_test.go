package termtext

import (
	"encoding/json"
	"testing"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, one, multi string }{
		{"plain text", "plain text", "plain text"},
		{"a\rb\bc\x7fd", "a^Mb^Hc^?d", "a^Mb^Hc^?d"},
		{"line1\nline2\tx", "line1^Jline2^Ix", "line1\nline2    x"},
		{"title\x1b]0;pwned\x07after", "title^[]0;pwned^Gafter", "title^[]0;pwned^Gafter"},
		{"osc st \x1b]8;;http://evil\x1b\\link", "osc st ^[]8;;http://evil^[\\link", "osc st ^[]8;;http://evil^[\\link"},
		{"Evil\x1b[31mRED", "Evil^[[31mRED", "Evil^[[31mRED"},
		{"dcs\x1bPq#0\x1b\\x", "dcs^[Pq#0^[\\x", "dcs^[Pq#0^[\\x"},
		{"c1 \u009b31m csi", "c1 <U+009B>31m csi", "c1 <U+009B>31m csi"},
		{"nel\u0085", "nel<U+0085>", "nel<U+0085>"},
		{"bidi \u202egnp.exe", "bidi <U+202E>gnp.exe", "bidi <U+202E>gnp.exe"},
		{"zero\u200bwidth\ufeff", "zero<U+200B>width<U+FEFF>", "zero<U+200B>width<U+FEFF>"},
		{"bad \xff utf8", "bad \uFFFD utf8", "bad \uFFFD utf8"},
		{"esc at end \x1b", "esc at end ^[", "esc at end ^["},
		// an unterminated OSC does not swallow what follows
		{"unterminated \x1b]0;title and the rest", "unterminated ^[]0;title and the rest", "unterminated ^[]0;title and the rest"},
		{"charset \x1b(0x", "charset ^[(0x", "charset ^[(0x"},
		{"héllo wörld 日本", "héllo wörld 日本", "héllo wörld 日本"},
		// found by FuzzSanitize: a control after the first non-ASCII character was let through
		{"é\x1b[2J\x1b]0;x\x07\r", "é^[[2J^[]0;x^G^M", "é^[[2J^[]0;x^G^M"},
		{"\uffc0\x00", "\uffc0^@", "\uffc0^@"},
		// a separator would break the one line in an editor or a log viewer; tag
		// characters hide text
		{"one\u2028two\u2029three", "one<U+2028>two<U+2029>three", "one<U+2028>two<U+2029>three"},
		{"flag\U000e0067\U000e0062\U000e007f", "flag<U+E0067><U+E0062><U+E007F>", "flag<U+E0067><U+E0062><U+E007F>"},
	} {
		if got := Sanitize(c.in); got != c.one {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.one)
		}
		if got := SanitizeText(c.in); got != c.multi {
			t.Errorf("SanitizeText(%q) = %q, want %q", c.in, got, c.multi)
		}
	}
}

// TestSanitizeJSON: every character Sanitize makes visible is escaped in a --json
// output, and the JSON decodes to what was stored.
func TestSanitizeJSON(t *testing.T) {
	t.Parallel()
	in := "del\x7f c1\u0085\u009b bidi\u202a\u202e\u2066\u2069 zw\u200b\u200f\u2060\ufeff sep\u2028\u2029 tag\U000e0041 esc\x1b ok é日"
	b, err := MarshalJSON(map[string]string{"v": in})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "v": "del\u007f c1\u0085\u009b bidi\u202a\u202e\u2066\u2069 zw\u200b\u200f\u2060\ufeff sep\u2028\u2029 tag\udb40\udc41 esc\u001b ok é日"
}
`
	if string(b) != want {
		t.Errorf("MarshalJSON = %s, want %s", b, want)
	}
	var back map[string]string
	if err := json.Unmarshal(b, &back); err != nil || back["v"] != in {
		t.Errorf("decodes to %q (%v), want %q", back["v"], err, in)
	}
	if got := SanitizeJSON([]byte(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Errorf("plain JSON changed: %s", got)
	}
}

// sgr is what the console's own styles emit; anything else that controls the
// terminal came from the data.
