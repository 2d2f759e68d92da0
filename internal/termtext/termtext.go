// Package termtext makes untrusted text safe to put on a terminal or in a
// JSON output, and keeps a message on one line. Payloads, error texts, ids
// and names read from the database or the network pass through it once, where
// they enter a view or an output: Sanitize and SanitizeText for the terminal,
// MarshalJSON and SanitizeJSON for --json, OneLine for a message that must
// not spill over several lines (a driver's multi-line error).
package termtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/outboxtop/outboxtop/internal/ident"
)

// Sanitize makes untrusted text (payloads, errors, ids, names from the database)
// safe to put on a terminal, as one line, without hiding anything: every control
// character is made visible rather than removed — C0 and DEL in caret notation
// (^[ for ESC, so an escape sequence reads "^[[31m"; ^M for \r, ^H for \b, ^J for
// \n, ^? for DEL), the line and paragraph separators and every invisible code
// point (unsafeRune: C1, bidirectional controls, zero-width characters, tags,
// variation selectors, Hangul fillers, …) as <U+XXXX>.
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
		case unsafeRune(r):
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
				if r == utf8.RuneError || unsafeRune(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// unsafeRune reports whether r is one of the characters Sanitize makes visible
// and SanitizeJSON escapes: C0 and DEL, and every code point that shows
// nothing of its own (ident.Invisible: C1, bidirectional controls that reorder
// the text around them, zero-width characters, the BOM, the soft hyphen, tags,
// variation selectors, the Hangul fillers, the braille blank, the musical and
// shorthand format controls), so two different strings never look the same
// and an error message never displays something other than what it says; and
// the line and paragraph separators, which end a line in some terminals.
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || ident.Invisible(r) || r == 0x2028 || r == 0x2029
}

// MarshalJSON is how every --json output is written: v as indented JSON, one
// value and a newline, through SanitizeJSON, so that no string in it can drive
// the terminal it is printed on.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return SanitizeJSON(b.Bytes()), nil
}

// SanitizeJSON makes JSON text that encoding/json produced safe to print: every
// character unsafeRune names (encoding/json leaves DEL, C1, bidirectional
// controls, zero-width and tag characters raw) becomes a \uXXXX escape, a
// character outside the BMP a surrogate pair, and invalid UTF-8 \ufffd. Outside
// its strings JSON text is ASCII, so only string contents change, and each to an
// escape of the same character: the JSON still decodes to the same values, while
// a terminal shows the escapes inert.
func SanitizeJSON(b []byte) []byte {
	i := 0
	for i < len(b) && !jsonEscapedByte(b[i]) {
		i++
	}
	if i == len(b) {
		return b // the common case: nothing to escape, no copy
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		c := b[i]
		if c < 0x80 {
			if jsonEscapedByte(c) {
				// JSON whitespace is \n, \t, \r and space; any other C0 byte can only
				// be raw inside a string, where an escape is what JSON requires.
				out = fmt.Appendf(out, "\\u%04x", c)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case unsafeRune(r) && r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, "\\u%04x\\u%04x", r1, r2)
		case unsafeRune(r):
			out = fmt.Appendf(out, "\\u%04x", r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// jsonEscapedByte reports whether SanitizeJSON may have to rewrite the byte c:
// DEL, a C0 control other than JSON's whitespace, or the start of a non-ASCII
// character.
func jsonEscapedByte(c byte) bool {
	return c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t' && c != '\r')
}

// OneLine joins s's lines and runs of white space into single spaces: an
// error message that must stay on one line of a terminal or a log.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
