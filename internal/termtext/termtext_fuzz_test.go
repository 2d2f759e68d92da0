package termtext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSanitize: whatever an event carries, what reaches the terminal is valid
// UTF-8 with no escape sequence, no C0/C1 control and no DEL (SanitizeText keeps
// only \n), no bidirectional override, no invisible character, sanitizing twice
// changes nothing, and text with none of those comes through untouched.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"plain text", "a\rb\bc\x7fd", "line1\nline2\tx", "title\x1b]0;pwned\x07after",
		"osc st \x1b]8;;http://evil\x1b\\link", "clear\x1b[2J\x1b[H\x1b[31mred\x1b[0m",
		"dcs\x1bPq#0;2;0;0;0\x1b\\x", "c1 \u009b31m csi", "nel\u0085", "bidi \u202egnp.exe",
		"bad \xff utf8", "esc at end \x1b", "unterminated \x1b]0;title", "charset \x1b(0x",
		"héllo wörld 日本", "\x1b[\x00\x1b", "\x1b]\u009c", "\x1b \x1b#8", "\xc2\x9b6n", "\uFFFD^?<U+202E>",
		"soft\u00adhyphen", "zero\u200bwidth", "bom\ufeff", "line\u2028sep\u2029para", "tag\U000e0041\U000e007f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		one, multi := Sanitize(s), SanitizeText(s)
		checkInert(t, "Sanitize", s, one, false)
		checkInert(t, "SanitizeText", s, multi, true)
		if again := Sanitize(one); again != one {
			t.Errorf("Sanitize is not idempotent on %q: %q then %q", s, one, again)
		}
		if again := SanitizeText(multi); again != multi {
			t.Errorf("SanitizeText is not idempotent on %q: %q then %q", s, multi, again)
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return unsafeRune(r) || r == utf8.RuneError }) && one != s {
			t.Errorf("Sanitize changed harmless text %q into %q", s, one)
		}
	})
}

func checkInert(t *testing.T, name, in, out string, multiline bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s(%q) = %q: not valid UTF-8", name, in, out)
	}
	for i, r := range out {
		if r == '\n' && multiline {
			continue
		}
		if unsafeRune(r) {
			t.Fatalf("%s(%q) = %q: control or invisible %U at byte %d", name, in, out, r, i)
		}
	}
}

// FuzzSanitizeJSONAndText: the two ways event text leaves the program. Through
// Sanitize (every text output) and through MarshalJSON (every --json output), no
// raw C0/C1 control, DEL, bidirectional control, zero-width character, line or
// paragraph separator or tag character survives; the JSON is valid and decodes
// back to exactly the input (as valid UTF-8), as a string and inside a payload.
func FuzzSanitizeJSONAndText(f *testing.F) {
	for _, s := range []string{
		"plain", "esc\x1b[31m", "del\x7f", "c1\u0085\u009b", "bidi\u202a\u202e\u2066\u2069", "zw\u200b\u200f\u2060\ufeff",
		"sep\u2028\u2029", "tag\U000e0000\U000e0041\U000e007f", "bad\xff\xfe", "<html>&", `"quoted" \ back`, "\n\t\r",
		"\U0001F600 emoji", "\ud7ff\ue000\uffff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkInert(t, "Sanitize", s, Sanitize(s), false)
		type row struct {
			Text    string          `json:"text"`
			Payload json.RawMessage `json:"payload"`
		}
		payload, _ := json.Marshal(map[string]string{"k": s})
		b, err := MarshalJSON(row{Text: s, Payload: payload})
		if err != nil {
			t.Fatalf("MarshalJSON(%q): %v", s, err)
		}
		if !utf8.Valid(b) {
			t.Fatalf("MarshalJSON(%q) = %q: not valid UTF-8", s, b)
		}
		for i, r := range string(b) {
			if unsafeRune(r) && r != '\n' {
				t.Fatalf("MarshalJSON(%q) = %q: raw %U at byte %d", s, b, r, i)
			}
		}
		var back row
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("MarshalJSON(%q) = %q: does not decode: %v", s, b, err)
		}
		want := s
		if !utf8.ValidString(s) {
			want = string([]rune(s)) // encoding/json's replacement of invalid bytes
		}
		if back.Text != want {
			t.Fatalf("MarshalJSON(%q) decodes to %q", s, back.Text)
		}
		var m map[string]string
		if err := json.Unmarshal(back.Payload, &m); err != nil || m["k"] != want {
			t.Fatalf("MarshalJSON(%q): the payload decodes to %q (%v)", s, m["k"], err)
		}
	})
}
