package fleet

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Level is a check-plugin level; its value is the plugin's exit code.
type Level int

// The check-plugin levels (Nagios, Icinga, Sensu, Checkmk).
const (
	OK Level = iota
	Warning
	Critical
	Unknown
)

var levelNames = [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}

func (l Level) String() string {
	if l < OK || l > Unknown {
		return "UNKNOWN"
	}
	return levelNames[l]
}

// MarshalText writes the level's name.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Thresholds are `outboxtop status`'s bounds. A zero duration or a negative count
// is no check at that level. DefaultThresholds are status's defaults.
type Thresholds struct {
	WarnOldest, CritOldest time.Duration // oldest publishable
	WarnFailed, CritFailed int64
	WarnBlocked            int64
	CritBlocked            int64
	MaxOldest              time.Duration // CRITICAL past it: oldest pending (legacy --max-oldest)
	// Consumer lag, per consumer group on the outbox's topics (CheckLag): the
	// records behind (negative: no check) and the oldest unconsumed record's
	// age (zero: no check).
	WarnLag, CritLag       int64
	WarnLagAge, CritLagAge time.Duration
	// No relay live for longer than this (zero: no check), from the relays'
	// heartbeats and leases (inspect.Snapshot.NoRelayFor); a relay never seen
	// crosses every bound set.
	WarnNoRelay, CritNoRelay time.Duration
	// The xmin horizon held (zero: no check): the oldest transaction age among
	// its holders (inspect.Horizon.OldestAge); a holder with no transaction
	// time (a slot, a standby's feedback, a session whose start this role may
	// not read) past inspect.HorizonHeldXids is a WARNING whatever these say,
	// while one of them is set.
	WarnHorizon, CritHorizon time.Duration
}

// DefaultThresholds are `outboxtop status`'s defaults: WARNING past a minute of
// publishable lag or with any failed event or blocked aggregate, CRITICAL past
// five minutes of lag; the xmin horizon held past inspect.HorizonWarnAfter and
// inspect.HorizonCritAfter.
func DefaultThresholds() Thresholds {
	return Thresholds{WarnOldest: time.Minute, CritOldest: 5 * time.Minute, WarnFailed: 0, CritFailed: -1, WarnBlocked: 0, CritBlocked: -1,
		WarnLag: -1, CritLag: -1, WarnHorizon: inspect.HorizonWarnAfter, CritHorizon: inspect.HorizonCritAfter}
}

// Threshold is one checked value with its warning and critical bounds (nil: no
// bound at that level). A value strictly greater than a bound crosses it.
type Threshold struct {
	Name     string   `json:"name"`
	Value    float64  `json:"value"`
	Warning  *float64 `json:"warning"`
	Critical *float64 `json:"critical"`
	// Bound: the value is not exact but a bound of the truth (inspect.Bound;
	// absent: exact). A lower bound past a bound is past it for certain; one
	// below a bound says nothing of the truth (Check.Unsure).
	Bound inspect.Bound `json:"bound,omitempty"`
}

// Check is a verdict under construction: the worst level reached, what crossed
// a bound, and every value checked.
type Check struct {
	Level      Level
	Crossed    []string
	Thresholds []Threshold
	// Unsure are the bounds a value did not cross only because it is a lower
	// bound: the truth may be past them (the level does not say so).
	Unsure []string
}

// Value checks v (shown as shown) against warn and crit.
func (c *Check) Value(name, shown string, v float64, warn, crit *float64) {
	c.Thresholds = append(c.Thresholds, Threshold{Name: name, Value: v, Warning: warn, Critical: crit})
	switch {
	case crit != nil && v > *crit:
		c.Crossed = append(c.Crossed, fmt.Sprintf("%s %s > %s", name, shown, FormatBound(name, *crit)))
		c.Level = max(c.Level, Critical)
	case warn != nil && v > *warn:
		c.Crossed = append(c.Crossed, fmt.Sprintf("%s %s > %s", name, shown, FormatBound(name, *warn)))
		c.Level = max(c.Level, Warning)
	}
}

// Count checks a count that is exact or a bound (b) against warn and crit, as
// Value does, and notes in Unsure the bounds a lower bound stayed under.
func (c *Check) Count(name string, n int64, b inspect.Bound, warn, crit *float64) {
	c.Bounded(name, b.Format(n), float64(n), b, warn, crit)
}

// Bounded checks v (shown as shown), exact or a bound (b), against warn and
// crit, as Value does, and notes in Unsure the bounds a lower bound stayed
// under.
func (c *Check) Bounded(name, shown string, v float64, b inspect.Bound, warn, crit *float64) {
	c.Value(name, shown, v, warn, crit)
	c.Thresholds[len(c.Thresholds)-1].Bound = b
	if b != inspect.LowerBound {
		return
	}
	for _, bd := range []*float64{warn, crit} {
		if bd != nil && v <= *bd {
			c.Unsure = append(c.Unsure, fmt.Sprintf("%s %s: a lower bound, not known to be within %s", name, shown, FormatBound(name, *bd)))
			return
		}
	}
}

// Note records a condition without a value (a consumer group's lag that could
// not be read) at level l.
func (c *Check) Note(what string, l Level) {
	c.Crossed = append(c.Crossed, what)
	c.Level = max(c.Level, l)
}

// FormatBound prints a bound as the crossed text shows it: a duration for the
// "oldest …" values and the time without a relay, a number otherwise.
func FormatBound(name string, v float64) string {
	if strings.HasPrefix(name, "oldest") || name == NoRelayCheck || name == HorizonCheck {
		return time.Duration(v * float64(time.Second)).String()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Check applies the thresholds to a snapshot and the oldest publishable age
// (inspect.Inspector.OldestPublishableAge).
func (t Thresholds) Check(s inspect.Snapshot, publishable inspect.Age) *Check {
	c := &Check{Crossed: []string{}, Thresholds: []Threshold{}}
	c.Value("oldest publishable", publishable.String(), publishable.Duration().Seconds(), durBound(t.WarnOldest), durBound(t.CritOldest))
	c.Count("failed", s.Counts.Failed, s.Counts.Bounds.Failed, countBound(t.WarnFailed), countBound(t.CritFailed))
	c.Count("blocked", s.Blocked.Count, s.Blocked.Bound, countBound(t.WarnBlocked), countBound(t.CritBlocked))
	if t.MaxOldest > 0 {
		c.Bounded("oldest pending", inspect.AgeText(s.OldestPendingAge, s.OldestPendingBound), s.OldestPendingAge.Duration().Seconds(),
			s.OldestPendingBound, nil, durBound(t.MaxOldest))
	}
	t.checkNoRelay(c, s)
	t.checkHorizon(c, s.Health.Horizon)
	return c
}

// HorizonCheck names the xmin horizon check in the verdict and the performance
// data.
const HorizonCheck = "xmin horizon"

// checkHorizon applies WarnHorizon and CritHorizon to the oldest transaction
// among the horizon's holders. A slot or a standby has no transaction time: one
// whose xmin is older than inspect.HorizonHeldXids is a WARNING of its own, as
// is a session whose start this role may not read (inspect.XminHolder.Hidden):
// its age is not known, its xmin's is. The crossed
// text names the holder by kind and pid only; the report names the rest,
// sanitized (the database's text stays out of the verdict).
func (t Thresholds) checkHorizon(c *Check, h inspect.Horizon) {
	if t.WarnHorizon <= 0 && t.CritHorizon <= 0 {
		return
	}
	age := h.OldestAge()
	shown := age.String()
	for _, x := range h.Holders {
		if x.Timed() && x.Age == age && age > 0 {
			shown += " (" + holderRef(x) + ")"
			break
		}
	}
	c.Value(HorizonCheck, shown, age.Duration().Seconds(), durBound(t.WarnHorizon), durBound(t.CritHorizon))
	for _, x := range h.Holders {
		if !x.Timed() && x.XminAge > inspect.HorizonHeldXids {
			c.Note(fmt.Sprintf("xmin horizon held by %s: %d transactions old", holderRef(x), x.XminAge), Warning)
			return
		}
	}
}

// holderRef names a holder without the database's text: its kind and pid, or
// its kind alone (a slot's or a prepared transaction's name is in the report).
func holderRef(x inspect.XminHolder) string {
	if x.PID != 0 {
		return fmt.Sprintf("%s pid %d", x.Kind, x.PID)
	}
	return x.Kind
}

// NoRelayCheck names the relay check in the verdict and the performance data.
const NoRelayCheck = "no relay seen"

// checkNoRelay applies WarnNoRelay and CritNoRelay: the time since a relay was
// last live; a relay never seen (no heartbeat, no live lease — or heartbeats
// this role cannot read) crosses every bound set.
func (t Thresholds) checkNoRelay(c *Check, s inspect.Snapshot) {
	if t.WarnNoRelay <= 0 && t.CritNoRelay <= 0 {
		return
	}
	age, seen := s.NoRelayFor()
	if !seen {
		level := Warning
		if t.CritNoRelay > 0 {
			level = Critical
		}
		c.Thresholds = append(c.Thresholds, Threshold{Name: NoRelayCheck, Value: -1, Warning: durBound(t.WarnNoRelay), Critical: durBound(t.CritNoRelay)})
		why := "no relay ever seen (no heartbeat, no live lease)"
		if s.RelaysError != "" {
			why = "no relay seen: the heartbeats could not be read"
		}
		c.Note(why, level)
		return
	}
	c.Value(NoRelayCheck, "for "+age.String(), age.Duration().Seconds(), durBound(t.WarnNoRelay), durBound(t.CritNoRelay))
}

func durBound(d time.Duration) *float64 {
	if d <= 0 {
		return nil
	}
	v := d.Seconds()
	return &v
}

func countBound(n int64) *float64 {
	if n < 0 {
		return nil
	}
	v := float64(n)
	return &v
}

// LagSet reports whether any consumer lag threshold is in force.
func (t Thresholds) LagSet() bool {
	return t.WarnLag >= 0 || t.CritLag >= 0 || t.WarnLagAge > 0 || t.CritLagAge > 0
}

func (t Thresholds) lagAgeSet() bool { return t.WarnLagAge > 0 || t.CritLagAge > 0 }

// CheckLag adds the consumer lag of r to c: each measured group's lag ("lag
// GROUP") and, with an age threshold, its oldest unconsumed record's age
// ("oldest unconsumed GROUP"). When lag thresholds are in force, a group the
// brokers would not describe, or a check they cut short or never answered, is
// a WARNING: the check cannot say the consumers are fine, and the outbox's own
// state (its database) is known apart from it, so it is not UNKNOWN. Without
// lag thresholds nothing is checked. clean makes the brokers' text (group
// names, errors) fit to print (nil: as it is); every text is one line.
func (t Thresholds) CheckLag(c *Check, r consumerlag.Report, clean func(string) string) {
	if clean == nil {
		clean = func(s string) string { return s }
	}
	line := func(s string) string { return strings.Join(strings.Fields(clean(s)), " ") }
	for _, g := range r.Groups {
		name := clean(g.Name)
		if g.Error != "" {
			if t.LagSet() {
				c.Note(fmt.Sprintf("consumer group %s not measured (%s)", name, line(g.Error)), Warning)
			}
			continue
		}
		c.Value("lag "+name, fmt.Sprint(g.Lag), float64(g.Lag), countBound(t.WarnLag), countBound(t.CritLag))
		if t.lagAgeSet() {
			var age time.Duration
			if g.OldestAge != nil {
				age = g.OldestAge.Duration()
			}
			c.Value("oldest unconsumed "+name, age.Round(time.Millisecond).String(), age.Seconds(), durBound(t.WarnLagAge), durBound(t.CritLagAge))
		}
	}
	if t.LagSet() {
		for _, e := range r.Errors {
			c.Note("consumer lag: "+line(e), Warning)
		}
	}
	if t.lagAgeSet() && r.AgeError != "" {
		c.Note("consumer lag: "+line(r.AgeError), Warning)
	}
}
