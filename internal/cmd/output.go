package cmd

import (
	"encoding/json"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
)

// writeJSON is every --json output: termtext.MarshalJSON escapes each character that
// could drive a terminal, so a consumer decodes the stored text exactly and a
// person who prints it sees it inert. It bypasses the line cap: a JSON value must
// stay whole.
func writeJSON(w io.Writer, v any) error {
	b, err := termtext.MarshalJSON(v)
	if err != nil {
		// A time outside years 0 to 9999 fails encoding/json: written as
		// farTimeJSON says instead of failing the whole document.
		if raw, ferr := farTimeJSON(v); ferr == nil {
			b, err = termtext.MarshalJSON(json.RawMessage(raw))
		}
	}
	if err != nil {
		return err
	}
	if c, ok := w.(*lineCapWriter); ok {
		c.endLine()
		w = c.w
	}
	_, err = w.Write(b)
	return err
}

// maxLineChars bounds a line of a command's text output. Every field of it is
// already one sanitized line, but an event type, an id or an error may be any
// length; past this the line is cut with a marker saying how much was left out.
// It is far above any line a report writes of its own (the status line with its
// performance data included), so only such data is cut.
const maxLineChars = 4096

// lineCapWriter cuts the lines written through it to max characters, ending a
// cut line with "… (+N chars)". It passes everything else through as written,
// at once (a prompt without a newline shows before the answer is read).
// Characters are counted by their first byte, so a character split across two
// writes is kept or cut whole.
type lineCapWriter struct {
	w       io.Writer
	max     int
	n       int  // characters of the current line written
	dropped int  // characters of the current line cut
	cutting bool // the current character is cut (its continuation bytes too)
	buf     []byte
}

func newLineCapWriter(w io.Writer, max int) *lineCapWriter { return &lineCapWriter{w: w, max: max} }

func (c *lineCapWriter) Write(p []byte) (int, error) {
	out := c.buf[:0]
	for _, b := range p {
		switch {
		case b == '\n':
			out = c.marker(out)
			out = append(out, '\n')
			c.n, c.dropped, c.cutting = 0, 0, false
			continue
		case b&0xc0 == 0x80: // a continuation byte goes with its character
		case c.n >= c.max:
			c.cutting = true
			c.dropped++
		default:
			c.cutting = false
			c.n++
		}
		if !c.cutting {
			out = append(out, b)
		}
	}
	c.buf = out[:0]
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *lineCapWriter) marker(out []byte) []byte {
	if c.dropped == 0 {
		return out
	}
	return fmt.Appendf(out, "… (+%d chars)", c.dropped)
}

// endLine writes the marker of a cut last line that has no newline yet and
// starts a new line count.
func (c *lineCapWriter) endLine() {
	if out := c.marker(nil); len(out) > 0 {
		_, _ = c.w.Write(out)
	}
	c.n, c.dropped, c.cutting = 0, 0, false
}
