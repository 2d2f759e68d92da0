package tui

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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
var sgr = regexp.MustCompile("\x1b\\[[0-9;:]*m")

func assertInert(t *testing.T, where, screen string) {
	t.Helper()
	s := sgr.ReplaceAllString(screen, "")
	for i, r := range s {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e || r == utf8.RuneError && strings.HasPrefix(s[i:], "\xff") {
			t.Errorf("%s: control character %U reached the screen at byte %d:\n%q", where, r, i, s)
			return
		}
	}
}

// TestHostileEventText seeds an event whose every text field tries to take over
// the terminal and checks that no view passes it through.
func TestHostileEventText(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const id = "f0000001-0000-4000-8000-000000000001"
	_, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event
		(event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error, headers, created_at, available_at)
		VALUES ($1, $2, $3, $4, $5, 3, $6, $7, $8, $6, $6)`,
		id, "Agg\x1b]0;owned\x07", "id\r\x1b[2Jgone", "Evil\x1b[31mType\b\b\b\u009b6n",
		`{"note":"\u001b]52;c;cHduZWQ=\u0007","bell":"\u0007","csi":"\u009b2J","text":"ok\r\nfake prompt $ "}`,
		b.base.Add(-time.Minute), "boom\x1b[1A\x1b[2K\roverwritten\x7f \u202eecnalab", `{"x-h":"\u001b[5m"}`)
	if err != nil {
		t.Fatal(err)
	}
	b.size(120, 40)
	for _, v := range []string{"1", "2", "3", "4", "5", "6"} {
		b.keys(v)
		assertInert(t, "view "+v, b.m.View().Content)
	}
	b.keys("4", "/")
	b.typeText("id:f0000001")
	b.keys("enter")
	screen := b.m.View().Content
	assertInert(t, "failed view", screen)
	if !strings.Contains(ansiStrip(screen), "boom") || !strings.Contains(ansiStrip(screen), "^Moverwritten^?") {
		t.Errorf("the hostile error is not shown in its visible form:\n%s", ansiStrip(screen))
	}
	b.keys("enter")
	for range 5 {
		assertInert(t, "detail", b.m.View().Content)
		b.keys("pgdown")
	}
	b.keys("g")
	detail := ansiStrip(b.m.View().Content)
	for _, want := range []string{"Evil", "^H^H^H", "<U+009B>6n", "<U+202E>ecnalab"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, detail)
		}
	}
	if v := b.m.View(); v.WindowTitle != "outboxtop" {
		t.Errorf("window title %q", v.WindowTitle)
	}
}

func ansiStrip(s string) string { return sgr.ReplaceAllString(s, "") }
