package tui

import (
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
		"soft\u00adhyphen", "zero\u200bwidth", "bom\ufeff",
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
		if utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeRune) && one != s {
			t.Errorf("Sanitize changed harmless text %q into %q", s, one)
		}
	})
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) || isInvisible(r) || r == utf8.RuneError
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
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) || isInvisible(r) {
			t.Fatalf("%s(%q) = %q: control or invisible %U at byte %d", name, in, out, r, i)
		}
	}
}
