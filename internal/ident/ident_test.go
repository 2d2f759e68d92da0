package ident

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// lookalikes of event_id: each must have its key.
var lookalikes = []string{
	"event_id", "Event_ID", "EVENT_ID", " event_id\t",
	"event_id\u034f", "event_id\ufe0f", "event_id\U000e0100", "event_id\u3164", "event_id\u2800", "event_id\u115f",
	"event_id\u1160", "event_id\uffa0", "event\u200b_id", "\ufeffevent_id", "event\u00ad_id", "event\u2060_id",
	"event_id\U0001d173", "event_id\U0001bca0", "event_id\U00013430", "event_id\U000e0041", "event_id\u180e",
	"ｅｖｅｎｔ_ｉｄ", "ＥＶＥＮＴ＿ＩＤ", "event_ıd", "EVENT_İD", "event_i\u0307d", "EVENT_I\u0307D", "event_\u0130d",
}

func TestKeyOfLookalikes(t *testing.T) {
	t.Parallel()
	for _, s := range lookalikes {
		if got := Key(s); got != "event_id" {
			t.Errorf("Key(%+q) = %+q, want \"event_id\"", s, got)
		}
	}
	for s, want := range map[string]string{
		"Straße":        "strasse",
		"ﬁle":           "file",
		"zoë":           "zoë",
		"zoe\u0308":     "zoë", // NFKC composes
		"alice via ssh": "alicevia" + "ssh",
		"event_іd":      "event_іd", // Cyrillic і: another script, another key
		"j\u0307\u0307": "j",
		"\xff":          "\ufffd",
	} {
		if got := Key(s); got != want {
			t.Errorf("Key(%+q) = %+q, want %+q", s, got, want)
		}
	}
}

// TestKeyOfNothingVisible: names that show nothing have the empty key.
func TestKeyOfNothingVisible(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", " ", "\t\n", "\u00a0\u3000", "\u200b", "\u2066\u2069", "\ufeff", "\u00ad",
		"\U0001d173", "\U0001bca0", "\U00013430", "\U000e0100", "\U000e0041", "\u3164", "\u115f", "\u1160",
		"\uffa0", "\u2800", "\u034f", "\ufe0f", "\u180e", "\U0001d17a\U0001bca3\U00013438"} {
		if got := Key(s); got != "" {
			t.Errorf("Key(%+q) = %+q, want \"\"", s, got)
		}
		if !onlyBlank(s) {
			t.Errorf("%+q: a rune is not Blank", s)
		}
	}
	if Invisible(' ') || !Blank(' ') || Invisible('\u0600') || Invisible('a') {
		t.Error("white space is Blank, not Invisible; an Arabic number sign and a letter are neither")
	}
}

func onlyBlank(s string) bool {
	for _, r := range s {
		if !Blank(r) {
			return false
		}
	}
	return true
}

// FuzzKey: Key is idempotent, holds no Blank code point and is valid UTF-8,
// and is empty exactly when every code point of the text is Blank (what the
// database's check of an actor refuses: the class it gets is Blank's).
func FuzzKey(f *testing.F) {
	for _, s := range append(lookalikes, "Straße", "İıi\u0307", "\u0130\u0307\u0307", "ǅ", "ﷺ", "\u1e9e", "\u0345", "a\u0323\u0307") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := Key(s)
		if again := Key(k); again != k {
			t.Fatalf("Key(%+q) = %+q, Key of that %+q", s, k, again)
		}
		if !utf8.ValidString(k) {
			t.Fatalf("Key(%+q) = %+q: invalid UTF-8", s, k)
		}
		if i := strings.IndexFunc(k, Blank); i >= 0 {
			r, _ := utf8.DecodeRuneInString(k[i:])
			t.Fatalf("Key(%+q) = %+q keeps %U", s, k, r)
		}
		if (k == "") != onlyBlank(strings.ToValidUTF8(s, "\ufffd")) {
			t.Fatalf("Key(%+q) = %+q, yet its code points are all Blank: %v", s, k, onlyBlank(s))
		}
	})
}

// TestKeyOfEveryCodePoint is FuzzKey's property for every code point, alone
// and between a capital I and a combining dot above (which compose, fold and
// drop), but for the plain ones: letters without case or decomposition (the
// CJK, Hangul and other scripts' blocks), private use and unassigned.
func TestKeyOfEveryCodePoint(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) || plain(r) {
			continue
		}
		for _, s := range []string{string(r), "I" + string(r) + "\u0307"} {
			k := Key(s)
			if Key(k) != k || strings.IndexFunc(k, Blank) >= 0 || (k == "") != onlyBlank(s) {
				t.Fatalf("Key(%+q) = %+q, Key of that %+q", s, k, Key(k))
			}
		}
	}
}

func plain(r rune) bool {
	if Blank(r) || !norm.NFKC.IsNormalString(string(r)) {
		return false
	}
	return unicode.Is(unicode.Lo, r) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf)
}

func TestLookalike(t *testing.T) {
	t.Parallel()
	names := []string{"event_id", "event_type"}
	for s, want := range map[string]string{"EVENT_İD": "event_id", "Event_Type\u200b": "event_type", "event_id": "",
		"event_ids": "", "": ""} {
		if got := Lookalike(s, names); got != want {
			t.Errorf("Lookalike(%+q) = %q, want %q", s, got, want)
		}
	}
}

// TestBlankRanges: the ranges handed to the database hold exactly the Blank
// code points, and Invisible is its definition's classes.
func TestBlankRanges(t *testing.T) {
	t.Parallel()
	ranges := BlankRanges()
	k := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		for k < len(ranges) && ranges[k][1] < r {
			k++
		}
		inRanges := k < len(ranges) && ranges[k][0] <= r
		if inRanges != Blank(r) {
			t.Fatalf("%U: in the ranges %v, Blank %v", r, inRanges, Blank(r))
		}
		want := r == '\u2800' || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) &&
			!unicode.Is(unicode.Prepended_Concatenation_Mark, r)
		if Invisible(r) != want || Blank(r) != (want || unicode.Is(unicode.White_Space, r)) {
			t.Fatalf("%U: Invisible %v, Blank %v", r, Invisible(r), Blank(r))
		}
	}
	if len(ranges) > 100 {
		t.Errorf("%d ranges", len(ranges))
	}
}
