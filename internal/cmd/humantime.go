package cmd

import (
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// displayTime is a time as the text reports print it, in UTC to the
// millisecond; a year past 9999 or before 1 as PostgreSQL writes it
// (inspect.PostgresText), which a four-digit layout cannot.
func displayTime(t time.Time) string {
	if y := t.Year(); y < 1 || y > 9999 {
		return inspect.PostgresText(t)
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// ageText is an event's age as the lists print it: the database's now −
// created_at to the second; one held at inspect.AgeLimit (a created_at of 4713
// BC), in years from its created_at.
func ageText(e inspect.Event, now time.Time) string {
	if e.Age.AtLimit() {
		return inspect.Ago(e.CreatedAt, now)
	}
	return e.Age.Duration().Round(time.Second).String()
}
