package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sanitize makes untrusted text (payloads, errors, ids, names from the database)
// safe to put on a terminal, as one line: escape sequences (CSI, OSC, DCS, APC,
// PM, SOS and two-byte ESC sequences) are removed, and every other control
// character is made visible — C0 and DEL in caret notation (^M for \r, ^H for \b,
// ^J for \n, ^? for DEL), C1 and bidirectional overrides as <U+XXXX>. Invalid
// UTF-8 becomes U+FFFD. The console calls it once, where event-derived text enters
// the view model.
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
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == '\n' && multiline:
			b.WriteByte('\n')
		case r == '\t' && multiline:
			b.WriteString("    ")
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r <= 0x9f, isBidiControl(r):
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
				if r < 0x20 || r == 0x7f || r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) {
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

// escapeLen returns the length of the escape sequence at the start of s (s[0] is
// ESC). An unterminated string sequence runs to the end of s.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e
		for j := 2; j < len(s); j++ {
			if c := s[j]; c >= 0x40 && c <= 0x7e {
				return j + 1
			} else if c < 0x20 || c > 0x7e {
				return j
			}
		}
		return len(s)
	case ']', 'P', '_', '^', 'X': // string sequences: up to BEL or ST (ESC \)
		for j := 2; j < len(s); j++ {
			switch {
			case s[j] == 0x07:
				return j + 1
			case s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\':
				return j + 2
			case strings.HasPrefix(s[j:], "\u009c"):
				return j + len("\u009c")
			}
		}
		return len(s)
	}
	if c := s[1]; c >= 0x20 && c <= 0x7e {
		// ESC with intermediates (0x20–0x2f) then a final byte, or a two-byte sequence.
		j := 1
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
			return j + 1
		}
		return j
	}
	return 1
}
