// Package ident is the one normalisation of the names people read and
// compare: the actor an operator's action records, an event's header names
// against the ones the relay reserves, the outboxes of a fleet file. Two
// names that look the same on a screen have the same Key, so a check made on
// keys cannot be passed by a name that only looks like another.
//
// Key is NFKC (fullwidth ｅｖｅｎｔ is event, the ligature ﬁ is fi), then without
// the code points that show nothing (Invisible) and white space, then full
// Unicode case folding (ß is ss) with the dotted capital İ and the dotless ı
// read as i and a combining dot above on i or j (which has one) dropped,
// repeated until nothing changes. It does not map look-alike letters of
// different scripts (Cyrillic а and Latin a keep distinct keys).
package ident

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
)

// Invisible reports whether r shows nothing on a screen, or nothing of its
// own: a control (Cc), a format character (Cf: zero-width spaces and joiners,
// bidirectional controls, the BOM, the soft hyphen, tags, the musical symbol
// and shorthand format controls U+1D173…, U+1BCA0…, the Egyptian hieroglyph
// format controls U+13430…) other than the prepended concatenation marks (an
// Arabic number sign shows), a variation selector, another default-ignorable
// code point (the combining grapheme joiner, the Hangul fillers U+115F,
// U+1160, U+3164, U+FFA0) or the braille pattern blank U+2800. White space is
// not: it shows as room.
func Invisible(r rune) bool { return unicode.Is(invisible, r) }

// Blank reports whether r is one Key takes out: Invisible, or white space.
func Blank(r rune) bool { return unicode.Is(blank, r) }

// invisible and blank are Invisible's and Blank's code points, in one table
// each: one lookup per rune, for Sanitize's every character.
var (
	invisible = invisibleTable()
	blank     = rangetable.Merge(invisible, unicode.White_Space)
)

func invisibleTable() *unicode.RangeTable {
	rs := []rune{brailleBlank}
	for _, t := range []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point} {
		rangetable.Visit(t, func(r rune) {
			if !unicode.Is(unicode.Prepended_Concatenation_Mark, r) {
				rs = append(rs, r)
			}
		})
	}
	return rangetable.New(rs...)
}

const (
	brailleBlank = '\u2800'
	dotAbove     = '\u0307' // COMBINING DOT ABOVE
)

// BlankRanges are Blank's code points as closed ranges, in order: what a
// check outside Go (the database's actor check) is built from, so that it
// refuses what Key makes empty.
func BlankRanges() [][2]rune {
	var out [][2]rune
	rangetable.Visit(blank, func(r rune) {
		if n := len(out); n > 0 && out[n-1][1] == r-1 {
			out[n-1][1] = r
			return
		}
		out = append(out, [2]rune{r, r})
	})
	return out
}

// Key is the form of s under which names a person would read as the same are
// equal (see the package doc). It is idempotent, holds no Blank code point,
// and is "" when s shows nothing. Invalid UTF-8 reads as U+FFFD.
func Key(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for range maxRounds {
		next := keyStep(s)
		if next == s {
			break
		}
		s = next
	}
	return s
}

// maxRounds bounds Key's rounds; the fuzz test finds none that needs more
// than three.
const maxRounds = 8

// fold is full Unicode case folding; it is safe for concurrent use.
var fold = cases.Fold()

// keyStep is one round of Key: NFKC, Blank taken out, İ and ı as i, folded,
// dots on i and j dropped. Folding can leave a text NFKC changes (a folded
// letter and a mark that compose), so Key repeats it.
func keyStep(s string) string {
	s = norm.NFKC.String(s)
	s = strings.Map(func(r rune) rune {
		switch {
		case Blank(r):
			return -1
		case r == 'İ' || r == 'ı':
			return 'i'
		}
		return r
	}, s)
	return dropDotsOnI(fold.String(s))
}

// dropDotsOnI drops a combining dot above that follows i or j (or another
// such dot): they have a dot already, so i̇ reads as i.
func dropDotsOnI(s string) string {
	if !strings.ContainsRune(s, dotAbove) {
		return s
	}
	var b strings.Builder
	dotted := false
	for _, r := range s {
		if r == dotAbove && dotted {
			continue
		}
		dotted = r == 'i' || r == 'j'
		b.WriteRune(r)
	}
	return b.String()
}

// Lookalike returns the one of names that s reads as without being it (the
// same Key, another text: "Event_ID" or "ｅｖｅｎｔ_ｉｄ" for "event_id"), or
// "" when there is none.
func Lookalike(s string, names []string) string {
	key := Key(s)
	for _, n := range names {
		if n != s && Key(n) == key {
			return n
		}
	}
	return ""
}
