package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/tui"
)

// statusFleetJSON is `status --fleet FILE --json`: the verdict over the fleet and
// one object per outbox, worst first (fields in README.md).
type statusFleetJSON struct {
	Fleet    string      `json:"fleet"`
	Level    fleet.Level `json:"level"`
	Healthy  bool        `json:"healthy"`
	Outboxes []fleet.Row `json:"outboxes"`
}

// statusFleet checks every outbox of the fleet file once, all at the same time,
// each within its own timeout. The exit code is the worst level of any outbox;
// an outbox that cannot be reached is UNKNOWN.
func statusFleet(ctx context.Context, path string, th fleet.Thresholds, asJSON bool, io IO) error {
	f, err := fleet.Load(path, io.Getenv)
	if err != nil {
		return usagef("%v", err)
	}
	p, err := fleet.NewPoller(f, fleet.Config{Thresholds: &th, MaxConns: 1})
	if err != nil {
		return usagef("%v", err)
	}
	defer p.Close()
	rows := p.Poll(ctx)
	level := fleet.OK
	for k := range rows {
		rows[k].Reason = tui.Sanitize(rows[k].Reason)
		level = max(level, rows[k].Level)
	}
	if asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(statusFleetJSON{Fleet: path, Level: level, Healthy: level == fleet.OK, Outboxes: rows}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(io.Out, fleetSummary(level, rows))
		for _, r := range rows {
			fmt.Fprintln(io.Out, fleetLine(r))
		}
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
		for _, p := range []struct{ label, value, name string }{
			{"failed", fmt.Sprint(r.Failed), "failed"},
			{"blocked", fmt.Sprint(r.Blocked), "blocked"},
			{"oldest_publishable", fmt.Sprintf("%.3fs", r.OldestPublishableAge.Duration().Seconds()), "oldest publishable"},
		} {
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

// fleetLine is one outbox: level, name, its worst condition, its numbers.
func fleetLine(r fleet.Row) string {
	if !r.Reachable {
		return fmt.Sprintf("%-8s %s: unreachable: %s", r.Level, r.Name, short(r.Reason, 160))
	}
	return fmt.Sprintf("%-8s %s: %s; publishable %s (oldest %s), failed %s, blocked %s, leased %d, published %.1f/s",
		r.Level, r.Name, r.Condition(), approx(r.Publishable, r.PublishableApprox), r.OldestPublishableAge,
		approx(r.Failed, r.FailedApprox), approx(r.Blocked, r.BlockedApprox), r.Leased, r.RateOut)
}
