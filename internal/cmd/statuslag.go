package cmd

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/fleet"
)

// lagThresholds are status's consumer lag checks, per group: its lag summed over
// the outbox's topics, and the age of its oldest unconsumed record.
type lagThresholds struct {
	warnLag, critLag, maxLag *int64
	warnAge, critAge         *time.Duration
	fs                       *pflag.FlagSet
}

// The consumer lag checks in force by default wherever Kafka is reached
// (--brokers or KAFKA_BROKERS): a consumer group 124,300 records or 8 minutes
// behind is not OK.
const (
	defaultWarnLag    = 10_000
	defaultCritLag    = 100_000
	defaultWarnLagAge = time.Minute
	defaultCritLagAge = 5 * time.Minute
)

func (f *lagFlags) thresholds(fs *pflag.FlagSet) lagThresholds {
	defer func() { _ = fs.MarkHidden("max-lag") }() // --crit-lag's older name: it works, --help lists --crit-lag
	return lagThresholds{
		warnLag: fs.Int64("warn-lag", defaultWarnLag, "WARNING when a consumer group is more than this many records behind on the outbox's topics (-1: no check; checked with --brokers or KAFKA_BROKERS)"),
		critLag: fs.Int64("crit-lag", defaultCritLag, "CRITICAL when a consumer group is more than this many records behind on the outbox's topics (-1: no check; checked with --brokers or KAFKA_BROKERS)"),
		maxLag:  fs.Int64("max-lag", -1, "CRITICAL when a consumer group is more than this many records behind (-1: no check; the same check as --crit-lag)"),
		warnAge: fs.Duration("warn-lag-age", defaultWarnLagAge, "WARNING when a consumer group's oldest unconsumed record is older than this (0: no check; checked with --brokers or KAFKA_BROKERS)"),
		critAge: fs.Duration("crit-lag-age", defaultCritLagAge, "CRITICAL when a consumer group's oldest unconsumed record is older than this (0: no check; checked with --brokers or KAFKA_BROKERS)"),
		fs:      fs,
	}
}

func (t lagThresholds) validate() error {
	for _, n := range []struct {
		name string
		v    int64
	}{{"--warn-lag", *t.warnLag}, {"--crit-lag", *t.critLag}, {"--max-lag", *t.maxLag}} {
		if n.v < -1 {
			return usagef("%s must be -1 (no check) or more", n.name)
		}
	}
	if *t.warnAge < 0 || *t.critAge < 0 {
		return usagef("--warn-lag-age and --crit-lag-age must not be negative")
	}
	if *t.maxLag >= 0 && (*t.critLag < 0 || *t.maxLag < *t.critLag) {
		*t.critLag = *t.maxLag // the stricter wins
	}
	return nil
}

// set reports whether a lag threshold was given (a flag or its OUTBOXTOP_
// variable) to be in force: the defaults apply only where Kafka is reached, a
// threshold given asks for it.
func (t lagThresholds) set() bool {
	changed := func(name string) bool { return t.fs != nil && t.fs.Changed(name) }
	return changed("warn-lag") && *t.warnLag >= 0 || changed("crit-lag") && *t.critLag >= 0 ||
		changed("max-lag") && *t.maxLag >= 0 || changed("warn-lag-age") && *t.warnAge > 0 || changed("crit-lag-age") && *t.critAge > 0
}

// into puts the lag thresholds into th: fleet.Thresholds.CheckLag applies them,
// to one outbox (status) or to each outbox of a fleet (status --fleet) alike.
func (t lagThresholds) into(th *fleet.Thresholds) {
	th.WarnLag, th.CritLag, th.WarnLagAge, th.CritLagAge = *t.warnLag, *t.critLag, *t.warnAge, *t.critAge
}

// lagPerf is the performance data of the consumers: the largest lag and, when
// checked, the oldest unconsumed record's age, with their bounds.
func lagPerf(r consumerlag.Report, check statusCheck) string {
	bound := func(prefix string) (string, string) {
		for _, th := range check.Thresholds {
			if strings.HasPrefix(th.Name, prefix) {
				return perfBound(th.Warning), perfBound(th.Critical)
			}
		}
		return "", ""
	}
	n, _ := r.MaxLag()
	w, c := bound("lag ")
	s := fmt.Sprintf(" max_lag=%d;%s;%s;0", n, w, c)
	var oldest time.Duration
	for _, g := range r.Groups {
		if g.OldestAge != nil {
			oldest = max(oldest, g.OldestAge.Duration())
		}
	}
	w, c = bound("oldest unconsumed ")
	return s + fmt.Sprintf(" max_lag_age=%.3fs;%s;%s;0", oldest.Seconds(), w, c)
}

func printConsumers(w io.Writer, r consumerlag.Report) {
	switch {
	case len(r.Topics) == 0:
		fmt.Fprintln(w, "consumers: no outbox topic to measure lag on (no recent published event names one; --lag-topics names them)")
	case len(r.Groups) == 0:
		fmt.Fprintf(w, "consumers: no consumer group reads %s\n", short(termtext.Sanitize(strings.Join(r.Topics, ", ")), 100))
	default:
		fmt.Fprintln(w, "consumers (lag on the outbox's topics):")
	}
	for _, g := range r.Groups {
		name := short(termtext.Sanitize(g.Name), 40)
		if g.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", name, short(termtext.Sanitize(g.Error), 100))
			continue
		}
		fmt.Fprintf(w, "  %s (%s, %d members): lag %d%s\n", name, termtext.Sanitize(g.State), g.Members, g.Lag, oldestText(g.OldestAge))
		for _, t := range g.Topics {
			fmt.Fprintf(w, "    %s: lag %d%s\n", short(termtext.Sanitize(t.Topic), 60), t.Lag, oldestText(t.OldestAge))
		}
	}
	for _, e := range slices.Concat(r.Errors, []string{r.AgeError}) {
		if e != "" {
			fmt.Fprintf(w, "consumer lag: %s\n", short(termtext.Sanitize(e), 200))
		}
	}
}

func oldestText(age *consumerlag.Seconds) string {
	if age == nil {
		return ""
	}
	return ", oldest unconsumed " + age.Duration().Round(time.Millisecond).String()
}
