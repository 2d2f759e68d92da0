package console

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

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
