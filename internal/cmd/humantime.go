package cmd

import (
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// ageText is an event's age as the lists print it: the database's now −
// created_at to the second; one held at inspect.AgeLimit (a created_at of 4713
// BC), in years from its created_at.
func ageText(e inspect.Event, now time.Time) string {
	if e.Age.AtLimit() {
		return inspect.Ago(e.CreatedAt, now)
	}
	return e.Age.Duration().Round(time.Second).String()
}
