package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sanitize makes untrusted text (payloads, errors, ids, names from the database)
// safe to put on a terminal, as one line, without hiding anything: every control
// character is made visible rather than removed — C0 and DEL in caret notation
// (^[ for ESC, so an escape sequence reads "^[[31m"; ^M for \r, ^H for \b, ^J for
// \n, ^? for DEL), C1, bidirectional controls and zero-width characters as <U+XXXX>.
// Invalid UTF-8 becomes U+FFFD. What is shown differs from what is stored only in
// these visible ways, so the shown text can be searched for. The console calls it
// once, where event-derived text enters the view model.
func Sanitize(s string) string { return sanitize(s, false) }

// SanitizeText is Sanitize for multi-line text (a pretty-printed payload, a long
// error): newlines are kept and tabs become four spaces; everything else is as in
// Sanitize.
func SanitizeText(s string) string { return sanitize(s, true) }

func sanitize(s string, multiline bool) string {
	if isPlain(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' && multiline:
			b.WriteByte('\n')
		case r == '\t' && multiline:
			b.WriteString("    ")
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r <= 0x9f, isBidiControl(r), isInvisible(r):
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s has nothing to sanitize (the common case: no copy).
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			for _, r := range s[i:] {
				if r < 0x20 || r == 0x7f || r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) || isInvisible(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// isBidiControl: characters that reorder the text around them on screen, so an
// error message could display something other than what it says.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// isInvisible: characters that take no room on screen, so two different strings
// would look the same: zero-width space, (non-)joiners, word joiner, the BOM, the
// soft hyphen and the invisible operators.
func isInvisible(r rune) bool {
	return r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff || r == 0x00ad ||
		(r >= 0x2061 && r <= 0x2064) || r == 0x180e
}
