package inspect_test

import (
	"math"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Times as people read them: spans in the console's compact form under a year,
// in whole years from one on, computed from the times (a time.Duration ends at
// about 292 years: time.Time.Sub saturates there and reads 2562047h47m16s).
func TestRelativeSaysWhenAsPeopleReadIt(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	far := time.Date(294276, 12, 31, 0, 0, 0, 0, time.UTC)
	bc := time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC) // PostgreSQL's '4713-11-24 BC'
	for _, c := range []struct {
		name            string
		t               time.Time
		relative, until string
	}{
		{"now", now, "now", "0s"},
		{"a moment ago", now.Add(-300 * time.Millisecond), "now", "0s"},
		{"seconds ahead", now.Add(45 * time.Second), "in 45s", "45s"},
		{"seconds ago", now.Add(-45 * time.Second), "45s ago", "0s"},
		{"minutes", now.Add(3*time.Minute + 5*time.Second), "in 3m05s", "3m05s"},
		{"hours", now.Add(-(2*time.Hour + 10*time.Minute)), "2h10m ago", "0s"},
		{"days", now.Add(3*24*time.Hour + 4*time.Hour), "in 3d04h", "3d04h"},
		{"under a year", now.AddDate(0, 11, 20), "in 357d00h", "357d00h"},
		{"a year", now.AddDate(1, 0, 0), "in 1 year", "1 year"},
		{"just under 292 years", now.AddDate(291, 11, 0), "in 291 years", "291 years"},
		{"292 years and more", now.AddDate(293, 0, 0), "in 293 years", "293 years"},
		{"292 years ago", now.AddDate(-293, 0, 0), "293 years ago", "0s"},
		{"973 years", now.AddDate(973, 2, 0), "in 973 years", "973 years"},
		{"973 years ago", now.AddDate(-973, -2, 0), "973 years ago", "0s"},
		{"year 294276", far, "in 292251 years", "292251 years"},
		{"4713 BC", bc, "6736 years ago", "0s"},
		{"the zero time", time.Time{}, "never", "0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := inspect.Relative(c.t, now); got != c.relative {
				t.Errorf("Relative = %q, want %q", got, c.relative)
			}
			if got := inspect.Until(c.t, now); got != c.until {
				t.Errorf("Until = %q, want %q", got, c.until)
			}
		})
	}
	// The span is the same either way round.
	if a, b := inspect.Span(now, bc), inspect.Span(bc, now); a != b || a != "6736 years" {
		t.Errorf("Span(now, 4713 BC) = %q, reversed %q", a, b)
	}
	if got := inspect.Ago(bc, now); got != "6736 years" {
		t.Errorf("Ago(4713 BC) = %q", got)
	}
}

func TestCompactAndAgeNeverOverflow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Minute, "0s"}, {59*time.Second + 600*time.Millisecond, "1m00s"},
		{26 * time.Hour, "1d02h"}, {math.MaxInt64, "285 years or more"}, {time.Duration(inspect.AgeLimit), "285 years or more"},
	} {
		if got := inspect.Compact(c.d); got != c.want {
			t.Errorf("Compact(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := inspect.Age(math.MaxInt64).String(); got != "285 years or more" || !inspect.AgeLimit.AtLimit() || inspect.Age(time.Hour).AtLimit() {
		t.Errorf("the longest Age reads %q", got)
	}
	if got := inspect.Age(90 * time.Second).String(); got != "1m30s" {
		t.Errorf("Age(90s) reads %q", got)
	}
}

// --json writes times as RFC 3339 within years 0 to 9999 (encoding/json's form)
// and as PostgreSQL writes them outside, where encoding/json fails.
func TestTimeJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2025, 3, 14, 12, 0, 0, 500_000_000, time.UTC), "2025-03-14T12:00:00.5Z"},
		{time.Time{}, "0001-01-01T00:00:00Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), "9999-12-31T23:59:59Z"},
		{time.Date(294276, 12, 31, 0, 0, 0, 0, time.UTC), "294276-12-31 00:00:00+00"},
		{time.Date(10000, 1, 1, 0, 0, 1, 250_000, time.UTC), "10000-01-01 00:00:01.00025+00"},
		{time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC), "4713-11-24 00:00:00+00 BC"},
		{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), "0002-01-01 00:00:00+00 BC"},
	} {
		if got := inspect.TimeJSON(c.t); got != c.want {
			t.Errorf("TimeJSON(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

// Text outputs write times to the millisecond within years 1 to 9999, as
// PostgreSQL writes them outside (Go's layout would print 4713 BC as -4712).
func TestDisplayTime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2025, 3, 14, 12, 0, 0, 500_000_000, time.FixedZone("x", 3600)), "2025-03-14 11:00:00.500Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), "9999-12-31 23:59:59.000Z"},
		{time.Date(294276, 12, 31, 0, 0, 0, 0, time.UTC), "294276-12-31 00:00:00+00"},
		{time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC), "4713-11-24 00:00:00+00 BC"},
		{time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC), "0001-06-01 00:00:00+00 BC"},
	} {
		if got := inspect.DisplayTime(c.t); got != c.want {
			t.Errorf("DisplayTime(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}
