package inspect

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The one place that turns times into words for people (the console, status,
// events, trace). Spans are computed from the time values, never through a
// time.Duration of the whole span: a Duration overflows past about 292 years
// (time.Time.Sub then saturates to 2562047h47m16.854775807s), and an available_at
// of '294276-12-31' or a created_at of '4713-11-24 BC' are rows PostgreSQL
// stores without complaint.

// Never is what Relative says of the zero time: no such moment.
const Never = "never"

// Span is how far apart a and b are, either way round, compactly: "0s", "45s",
// "3m05s", "2h10m", "3d04h" under a year; from a calendar year on, whole years:
// "1 year", "973 years", "296290 years".
func Span(a, b time.Time) string {
	if b.Before(a) {
		a, b = b, a
	}
	if years := wholeYears(a, b); years > 0 {
		if years == 1 {
			return "1 year"
		}
		return strconv.FormatInt(years, 10) + " years"
	}
	return Compact(b.Sub(a)) // under a year: the Duration cannot overflow
}

// wholeYears is how many whole calendar years b is after a (a not after b).
func wholeYears(a, b time.Time) int64 {
	if !a.AddDate(1, 0, 0).After(b) {
		a, b = a.UTC(), b.UTC()
		n := int64(b.Year() - a.Year())
		if a.AddDate(int(n), 0, 0).After(b) {
			n--
		}
		return n
	}
	return 0
}

// Compact is a duration as the console's columns show it: 45s, 3m05s, 2h10m,
// 3d04h, rounded to the second. A negative duration (clock skew between this
// host and the database) reads as 0s. It is for durations that are one: a span
// between two times is Span's, which goes on in years where a Duration ends.
func Compact(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d >= time.Duration(AgeLimit) {
		return atLimit
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// Relative says when t is, seen at now: "now" (within half a second either
// way), "in 3m05s", "3m05s ago", "in 973 years", "973 years ago"; the zero time
// is "never".
func Relative(t, now time.Time) string {
	switch {
	case t.IsZero():
		return Never
	case within(t, now, time.Second/2):
		return "now"
	case t.After(now):
		return "in " + Span(now, t)
	}
	return Span(t, now) + " ago"
}

// Ago is how long before now t was ("3m05s"), without a direction: a t after
// now (clock skew) reads "0s", a far past one in years.
func Ago(t, now time.Time) string {
	if t.After(now) {
		return "0s"
	}
	return Span(t, now)
}

// Until is how long after now t is ("3m05s"), "0s" when it is not after now.
func Until(t, now time.Time) string {
	if !t.After(now) {
		return "0s"
	}
	return Span(now, t)
}

// within reports whether a and b are less than d apart, d small.
func within(a, b time.Time, d time.Duration) bool {
	return a.Before(b.Add(d)) && b.Before(a.Add(d))
}

// DisplayTime is a time as the text reports and the console print it, in UTC
// to the millisecond ("2024-05-01 12:00:00.500Z"); a year past 9999 or before
// 1 as PostgreSQL writes it (PostgresText: "294276-12-31 00:00:00+00",
// "4714-11-24 00:00:00+00 BC"), which a four-digit layout cannot, and where
// Go's own would print year -4712 for PostgreSQL's 4713 BC.
func DisplayTime(t time.Time) string {
	if y := t.Year(); y < 1 || y > 9999 {
		return PostgresText(t)
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// TimeJSON is a time as the --json outputs write it: RFC 3339 (nanoseconds as
// needed, in UTC) for years 0 to 9999, which is what encoding/json writes; outside
// them, where encoding/json fails ("year outside of range [0,9999]"), the
// PostgreSQL text form in UTC: "294276-12-31 00:00:00+00", "4714-11-24
// 00:00:00+00 BC" (PostgreSQL's 4714 BC is year -4713 of RFC 3339's numbering,
// which has a year 0).
func TimeJSON(t time.Time) string {
	if y := t.Year(); y >= 0 && y <= 9999 {
		return t.Format(time.RFC3339Nano)
	}
	return PostgresText(t)
}

// PostgresText is t as PostgreSQL prints a timestamptz in UTC: "2024-05-01
// 12:00:00.5+00", years before 1 as BC.
func PostgresText(t time.Time) string {
	t = t.UTC()
	y, bc := t.Year(), ""
	if y <= 0 {
		y, bc = 1-y, " BC"
	}
	frac := ""
	if us := t.Nanosecond() / 1000; us > 0 {
		frac = "." + trimZeros(fmt.Sprintf("%06d", us))
	}
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d%s+00%s", y, int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), frac, bc)
}

func trimZeros(s string) string {
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return s
}

// AgeLimit is the longest age the database reports (the statements' age: ±9e9
// seconds, about 285 years, within the 292 a Duration holds): an Age at it
// means at least that long. A created_at of 4713 BC is 211 billion seconds old.
const AgeLimit = Age(9e9 * time.Second)

// atLimit is how an age at AgeLimit reads.
const atLimit = "285 years or more"

// AtLimit reports whether a is held at AgeLimit (either way): the time it
// measures from is further away; Span of the times themselves says how far.
func (a Age) AtLimit() bool { return a >= AgeLimit || a <= -AgeLimit }

// seconds is an age the database measured in seconds, held within ±AgeLimit
// (converted as it is, a value past a Duration's range would wrap around).
func seconds(f float64) Age {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= AgeLimit.Duration().Seconds():
		return AgeLimit
	case f <= -AgeLimit.Duration().Seconds():
		return -AgeLimit
	}
	return Age(time.Duration(f * float64(time.Second)))
}
