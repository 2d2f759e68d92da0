package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// hostile holds one of each character a terminal could act on or hide: an
// escape, DEL, C1, bidirectional overrides and isolates, zero-width characters,
// the line and paragraph separators and tag characters.
const hostile = "x\x1b]0;t\x07\x7f\u0085\u009b\u202a\u202e\u2066\u2069\u200b\u200f\u2060\ufeff\u2028\u2029\U000e0041\U000e007fy"

func rawTerminalControl(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
			r >= 0x200b && r <= 0x200f, r == 0x2060, r == 0xfeff, r == 0x2028, r == 0x2029, r >= 0xe0000 && r <= 0xe007f:
			return r, true
		}
	}
	return 0, false
}

// TestJSONOutputsEscapeTerminalControls: every --json output carries the stored
// text escaped, never raw, and decodes back to it exactly.
func TestJSONOutputsEscapeTerminalControls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	const id = "e7000000-0000-4000-8000-000000000001"
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, last_error)
		VALUES ($1, $2, $2, $2, jsonb_build_object('note', $2::text), $2)`, id, hostile); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": dsn}
	if r := run(t, env, "park", "--id", id, "--reason", hostile, "--actor", "oncall", "--yes"); r.code != ExitOK {
		t.Fatalf("park: %+v", r)
	}
	for _, args := range [][]string{
		{"trace", id, "--json"},
		{"events", "--state", "failed", "--json"},
		{"audit", "--json"},
		{"status", "--json"},
	} {
		r := run(t, env, args...)
		if r.out == "" {
			t.Errorf("%v: no output: %+v", args, r)
			continue
		}
		if c, ok := rawTerminalControl(r.out); ok {
			t.Errorf("%v: raw %U in the JSON:\n%q", args, c, r.out)
		}
		var v any
		if err := json.Unmarshal([]byte(r.out), &v); err != nil {
			t.Errorf("%v: not JSON: %v\n%s", args, err, r.out)
			continue
		}
		if args[0] != "status" && !containsString(v, hostile) {
			t.Errorf("%v: the stored text does not decode back:\n%s", args, r.out)
		}
	}
}

func containsString(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	}
	return false
}

// TestTextOutputsShowSeparatorsAndCapLines: a separator or tag character in an
// event is shown in its visible form, and a line made huge by an event's field is
// cut with a marker saying how much is left out.
func TestTextOutputsShowSeparatorsAndCapLines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	const id = "e7000000-0000-4000-8000-000000000002"
	long := strings.Repeat("E", 200_000)
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, last_error)
		VALUES ($1, 'order', '4711', $2, '{}', $3)`, id, long, "a\u2028b\U000e0041 boom\u2029"); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": dsn}
	r := run(t, env, "trace", id)
	if r.code != ExitOK {
		t.Fatalf("trace: %+v", r)
	}
	if c, ok := rawTerminalControl(r.out); ok {
		t.Errorf("raw %U in the trace:\n%q", c, r.out)
	}
	for _, want := range []string{"a<U+2028>b<U+E0041> boom<U+2029>", fmt.Sprintf("… (+%d chars)\n", len("EVENT "+id+"  ")+200_000+len("  order/4711")-maxLineChars)} {
		if !strings.Contains(r.out, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
	for _, line := range strings.Split(r.out, "\n") {
		if n := utf8.RuneCountInString(line); n > maxLineChars+40 {
			t.Errorf("a line of %d characters: %.100q…", n, line)
		}
	}
	if r := run(t, env, "trace", id, "--json"); r.code != ExitOK || !strings.Contains(r.out, long) {
		t.Errorf("trace --json cut the event type: exit %d, %d bytes", r.code, len(r.out))
	}
}

// TestLineCapWriter: cuts at a character, not a byte, also when a character is
// split across writes; passes short lines and a prompt without a newline through.
func TestLineCapWriter(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := newLineCapWriter(&b, 5)
	for _, p := range []string{"short\n", "héllo wörld\n", "日本語", "\xe6", "\x97\xa5", "本語\n", "ok? "} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got, want := b.String(), "short\nhéllo… (+6 chars)\n日本語日本… (+1 chars)\nok? "; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	w.Write([]byte("\n"))
	b.Reset()
	w.Write([]byte("abcdefgh"))
	if err := writeJSON(w, map[string]string{"k": strings.Repeat("v", 10)}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "abcde… (+3 chars)"+`{
  "k": "vvvvvvvvvv"
}
`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
