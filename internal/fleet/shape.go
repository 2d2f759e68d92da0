package fleet

import (
	"fmt"
	"strings"
)

// The TOML decoder's work grows with the square of a value's nesting: a table
// 20,000 levels deep ("x = {a={a=…", 80 KB) took gigabytes and minutes, a
// dotted key or a table header of as many parts much the same. A fleet file
// needs little depth: [[outbox]] with labels = { team = "x" }, or
// [outbox.labels], is three levels at most. checkShape bounds it before the
// decoder sees the text.
const (
	// maxNesting is the deepest a fleet file may nest: open brackets and
	// braces plus the dots of the key being read.
	maxNesting = 8
)

// checkShape refuses, in one pass that allocates nothing until it fails, a
// text longer than maxFleetFile or nested deeper than maxNesting anywhere, with
// one line naming the line where the limit was crossed. Nesting counts the [
// and { open outside strings and comments, plus the dots outside strings since
// the last =, comma, bracket, brace or end of line (a dotted key, or a table
// header's parts).
func checkShape(text string) error {
	if len(text) > maxFleetFile {
		return fmt.Errorf("%d bytes, more than a fleet file may have (%d)", len(text), maxFleetFile)
	}
	s := shapeScanner{text: text, line: 1}
	for s.i < len(s.text) {
		if err := s.step(); err != nil {
			return err
		}
	}
	return nil
}

// shapeScanner walks a TOML text, skipping strings and comments, keeping the
// line number, the open brackets and braces, and the dots of the current key.
type shapeScanner struct {
	text        string
	i, line     int
	depth, dots int
}

// step reads what starts at s.i: a string or a comment whole, else one byte.
func (s *shapeScanner) step() error {
	c := s.text[s.i]
	switch c {
	case '"', '\'':
		s.skipString(c)
		return nil
	case '#':
		s.skipTo("\n", false)
		return nil
	case '\n':
		s.line++
		s.dots = 0
	case '=', ',':
		s.dots = 0
	case '[', '{':
		s.depth++
		s.dots = 0
	case ']', '}':
		s.depth = max(s.depth-1, 0)
		s.dots = 0
	case '.':
		s.dots++
	}
	s.i++
	if s.depth+s.dots > maxNesting {
		return fmt.Errorf("line %d: nested more than %d levels deep (a fleet file needs at most 3)", s.line, maxNesting)
	}
	return nil
}

// skipString moves past the string opening at s.i with quote: basic ("…", in
// which a backslash escapes the next byte) or literal ('…'), each also in its
// multi-line form of three quotes. An unterminated string runs to the end of
// its line (or of the text, multi-line): the decoder reports it.
func (s *shapeScanner) skipString(quote byte) {
	delim := string(quote)
	if strings.HasPrefix(s.text[s.i:], strings.Repeat(delim, 3)) {
		s.i += 3
		s.skipTo(strings.Repeat(delim, 3), quote == '"')
		return
	}
	s.i++
	for s.i < len(s.text) && s.text[s.i] != '\n' {
		c := s.text[s.i]
		s.i++
		switch {
		case c == quote:
			return
		case c == '\\' && quote == '"' && s.i < len(s.text) && s.text[s.i] != '\n':
			s.i++
		}
	}
}

// skipTo moves s.i past the next end (counting the lines it passes), or to the
// end of the text; "\n" stops before the newline, which step then counts. With
// escapes, a backslash escapes the byte after it.
func (s *shapeScanner) skipTo(end string, escapes bool) {
	for s.i < len(s.text) {
		if strings.HasPrefix(s.text[s.i:], end) {
			if end != "\n" {
				// The closing delimiter is the last three of a run of quotes
				// (""""" ends a string with two quotes in it).
				for s.i < len(s.text) && s.text[s.i] == end[0] {
					s.i++
				}
			}
			return
		}
		switch s.text[s.i] {
		case '\n':
			s.line++
		case '\\':
			if escapes && s.i+1 < len(s.text) && s.text[s.i+1] != '\n' {
				s.i++
			}
		}
		s.i++
	}
}
