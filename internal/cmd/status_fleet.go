package cmd

import (
	"context"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/relay"
)

// statusFleetJSON is `status --fleet FILE --json`: the verdict over the fleet and
// one object per outbox, worst first (fields in docs/triage.md).
type statusFleetJSON struct {
	Fleet    string      `json:"fleet"`
	Level    fleet.Level `json:"level"`
	Healthy  bool        `json:"healthy"`
	Outboxes []fleet.Row `json:"outboxes"`
}

// statusFleet checks every outbox of the fleet file once, all at the same time,
// each within its own timeout. The exit code is the worst level of any outbox;
// an outbox that cannot be reached is UNKNOWN.
func statusFleet(ctx context.Context, path string, th fleet.Thresholds, dial func([]string) consumerlag.Dial, asJSON bool, io IO) error {
	f, err := fleet.Load(path, io.Getenv)
	if err != nil {
		return usagef("%v", err)
	}
	p, err := fleet.NewPoller(f, fleet.Config{Thresholds: &th, MaxConns: 1, Dial: dial})
	if err != nil {
		return usagef("%v", err)
	}
	defer p.Close()
	rows := p.Poll(ctx)
	level := sanitizeRows(rows)
	if asJSON {
		if err := writeJSON(io.Out, statusFleetJSON{Fleet: path, Level: level, Healthy: level == fleet.OK, Outboxes: rows}); err != nil {
			return err
		}
	} else {
		writeFleetText(io.Out, level, rows)
	}
	if level == fleet.OK {
		return nil
	}
	var bad []string
	for _, r := range rows {
		if r.Level != fleet.OK {
			bad = append(bad, r.Name+" "+r.Level.String())
		}
	}
	return exitError{code: int(level), msg: level.String() + ": " + strings.Join(bad, ", ")}
}

// sanitizeRows makes rows fit to print (sanitizeRow, in place) and returns the
// fleet's level: the worst of them.
func sanitizeRows(rows []fleet.Row) fleet.Level {
	level := fleet.OK
	for k := range rows {
		sanitizeRow(&rows[k])
		level = max(level, rows[k].Level)
	}
	return level
}

// writeFleetText is `status --fleet`'s text: the plugin summary line, then one
// line per outbox.
func writeFleetText(w io.Writer, level fleet.Level, rows []fleet.Row) {
	fmt.Fprintln(w, fleetSummary(level, rows))
	for _, r := range rows {
		fmt.Fprintln(w, fleetLine(r))
	}
}

// fleetSummary is the plugin output's first line: the fleet's level, how many
// outboxes are at each level, and performance data per outbox.
func fleetSummary(level fleet.Level, rows []fleet.Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "OUTBOXTOP %s - %d outboxes", level, len(rows))
	for l := fleet.Unknown; l >= fleet.OK; l-- {
		var names []string
		for _, r := range rows {
			if r.Level == l {
				names = append(names, r.Name)
			}
		}
		if len(names) > 0 {
			fmt.Fprintf(&b, ", %s %s", l, strings.Join(names, " "))
		}
	}
	b.WriteString(" |")
	for _, r := range rows {
		if !r.Reachable {
			continue
		}
		bounds := map[string][2]string{}
		for _, t := range r.Thresholds {
			bounds[t.Name] = [2]string{perfBound(t.Warning), perfBound(t.Critical)}
		}
		label := perfLabel(r.Name)
		perf := []struct{ label, value, name string }{
			{"failed", fmt.Sprint(r.Failed), "failed"},
			{"blocked", fmt.Sprint(r.Blocked), "blocked"},
			{"oldest_publishable", fmt.Sprintf("%.3fs", r.OldestPublishableAge.Duration().Seconds()), "oldest publishable"},
		}
		if l := r.Lag; l != nil && l.MaxLagGroup != "" { // no group measured: no value to give
			// The bounds are per group and the same for every group: any one's do.
			for _, t := range r.Thresholds {
				switch {
				case strings.HasPrefix(t.Name, "lag "):
					bounds["lag"] = bounds[t.Name]
				case strings.HasPrefix(t.Name, "oldest unconsumed "):
					bounds["oldest unconsumed"] = bounds[t.Name]
				}
			}
			var oldest time.Duration
			if l.OldestAge != nil {
				oldest = l.OldestAge.Duration()
			}
			perf = append(perf, struct{ label, value, name string }{"max_lag", fmt.Sprint(l.MaxLag), "lag"},
				struct{ label, value, name string }{"max_lag_age", fmt.Sprintf("%.3fs", oldest.Seconds()), "oldest unconsumed"})
		}
		for _, p := range perf {
			bd := bounds[p.name]
			fmt.Fprintf(&b, " %s_%s=%s;%s;%s;0", label, p.label, p.value, bd[0], bd[1])
		}
	}
	return strings.TrimSuffix(b.String(), " |")
}

var notPerfLabel = regexp.MustCompile(`[^a-z0-9_]`)

// perfLabel is an outbox name as a performance-data label (lower case, '_' for
// anything else, so no quoting is needed).
func perfLabel(name string) string {
	return notPerfLabel.ReplaceAllString(strings.ToLower(name), "_")
}

// fleetLine is one outbox: level, name, every bound it crossed (else its
// condition), its numbers, and its consumers' lag when the fleet file names its
// brokers.
func fleetLine(r fleet.Row) string {
	if !r.Reachable {
		return fmt.Sprintf("%-8s %s: unreachable: %s%s", r.Level, r.Name, short(r.Reason, 160), lagText(r.Lag, r.Reason))
	}
	cond := r.Condition()
	if len(r.Crossed) > 1 {
		cond = strings.Join(r.Crossed, ", ")
	}
	return fmt.Sprintf("%-8s %s: %s; publishable %s (oldest %s), failed %s, blocked %s, relays %d, leased %d, published %.1f/s%s",
		r.Level, r.Name, cond, r.PublishableBound.Format(r.Publishable), r.OldestPublishableAge,
		r.FailedBound.Format(r.Failed), r.BlockedBound.Format(r.Blocked), r.Relays, r.Leased, r.RateOut, lagText(r.Lag, cond))
}

// lagText is a fleet line's consumer lag: the largest lag and its group, the
// oldest unconsumed record's age, and what the check could not do unless the
// line's condition said it already.
func lagText(l *fleet.Lag, condition string) string {
	if l == nil {
		return ""
	}
	problem := ""
	if l.Problem != "" && !strings.Contains(condition, l.Problem) {
		problem = ": " + short(l.Problem, 160)
	}
	switch {
	case l.MaxLagGroup == "" && l.Problem != "":
		return "; consumer lag unknown" + problem
	case l.MaxLagGroup == "":
		return "; no consumer group reads the outbox's topics"
	}
	s := fmt.Sprintf("; max lag %d (%s)%s", l.MaxLag, short(l.MaxLagGroup, 40), oldestText(l.OldestAge))
	if problem != "" {
		s += "; consumer lag" + problem
	}
	return s
}

// sanitizeRow makes what the database and the brokers said fit to print (the
// JSON encoder escapes on its own; the lines need this).
func sanitizeRow(r *fleet.Row) {
	r.Reason = termtext.Sanitize(r.Reason)
	r.Crossed = slices.Clone(r.Crossed) // the poller's own
	for k := range r.Crossed {
		r.Crossed[k] = termtext.Sanitize(r.Crossed[k])
	}
	if r.Lag != nil {
		l := *r.Lag
		l.Problem, l.MaxLagGroup = termtext.Sanitize(l.Problem), termtext.Sanitize(l.MaxLagGroup)
		r.Lag = &l
	}
}

// fleetKafkaFlags are the Kafka settings that apply with --fleet: how to reach
// the brokers each outbox of the fleet file names (TLS, SASL), never which.
var fleetKafkaFlags = []string{"kafka-client-id", "kafka-tls", "kafka-tls-ca", "kafka-tls-cert", "kafka-tls-key",
	"kafka-tls-insecure-skip-verify", "kafka-sasl-mechanism", "kafka-sasl-user", "kafka-sasl-password-file"}

// fleetLagDial reaches an outbox's brokers (from the fleet file) with k's TLS
// and SASL settings, for its consumer lag check.
func fleetLagDial(k relay.KafkaConfig) func(brokers []string) consumerlag.Dial {
	return func(brokers []string) consumerlag.Dial {
		return func(opts ...kgo.Opt) (*kgo.Client, error) {
			k := k
			k.Brokers = brokers
			k.Extra = append(slices.Clone(k.Extra), opts...)
			return relay.NewKafkaClient(k)
		}
	}
}
