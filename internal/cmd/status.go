package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/relay"
	"github.com/outboxtop/outboxtop/wire"
)

// statusJSON is `status --json`: the snapshot's fields plus the check's verdict
// (documented field by field in docs/triage.md).
type statusJSON struct {
	inspect.Snapshot
	// OldestPublishableAge: see inspect.Inspector.OldestPublishableAge.
	OldestPublishableAge inspect.Age `json:"oldest_publishable_age_seconds"`
	// Consumers is the consumer groups' lag; absent without --brokers or KAFKA_BROKERS.
	Consumers *consumerlag.Report `json:"consumers,omitempty"`
	// FailedGroupsCover says what failed_by_error, failed_by_event_type and
	// by_event_type[].failed count: every failed event, or the newest ones only.
	FailedGroupsCover inspect.GroupsCover `json:"failed_groups_cover"`
	// MissingTopics: see checkMissingTopics (empty: none); MissingTopicsError
	// says why the brokers could not say which topics exist (the topics the
	// rows' last_error names are there all the same).
	MissingTopics      []relay.TopicWait `json:"missing_topics"`
	MissingTopicsError string            `json:"missing_topics_error,omitempty"`
	Check              statusCheck       `json:"check"`
}

type statusCheck struct {
	// Level is OK, WARNING, CRITICAL or UNKNOWN, as the exit code says.
	Level   string   `json:"level"`
	Healthy bool     `json:"healthy"`
	Crossed []string `json:"crossed"`
	// Thresholds echoes every threshold in force (crossed or not).
	Thresholds []statusThreshold `json:"thresholds"`
	// Unsure: thresholds a lower bound stayed under, so the truth may be past
	// them (a level of OK or WARNING does not rule that out).
	Unsure []string `json:"unsure,omitempty"`
	// MaxOldestSeconds and MaxFailed echo the legacy --max-* thresholds (null: not set).
	MaxOldestSeconds *float64 `json:"max_oldest_seconds"`
	MaxFailed        *int64   `json:"max_failed"`
	// Error is why the level is UNKNOWN.
	Error string `json:"error,omitempty"`
}

// statusThreshold is one checked value with its warning and critical bounds (null:
// no bound at that level). A value strictly greater than a bound crosses it.
type statusThreshold = fleet.Threshold

// Status exit codes follow the monitoring-plugin convention (Nagios, Icinga,
// Sensu, Checkmk): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. Bad usage of status
// exits 64 (EX_USAGE), not 2, so a typo in a check's command line cannot read as
// CRITICAL; monitoring shows any code above 3 as UNKNOWN.
const (
	ExitWarning     = 1
	ExitCritical    = 2
	ExitUnknown     = 3
	ExitStatusUsage = 64
)

var levelNames = [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}

func runStatus(ctx context.Context, args []string, io IO) error {
	err := status(ctx, args, io)
	if errors.As(err, new(usageError)) {
		return exitError{code: ExitStatusUsage, msg: err.Error()}
	}
	return err
}

func status(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("status", io)
	db := dbFlags{wholeFleet: "check every outbox of this fleet file: one line each, the worst level wins"}
	db.register(fs)
	keepOwn(fs, "fleet")
	asJSON := fs.Bool("json", false, "print the snapshot as JSON (fields in docs/triage.md)")
	warnOldest := fs.Duration("warn-oldest", time.Minute, "WARNING when the oldest publishable event has waited longer than this (0: no check)")
	critOldest := fs.Duration("crit-oldest", 5*time.Minute, "CRITICAL when the oldest publishable event has waited longer than this (0: no check)")
	warnFailed := fs.Int64("warn-failed", 0, "WARNING when more than this many events are failed (0, the default: any; -1: no check)")
	critFailed := fs.Int64("crit-failed", -1, "CRITICAL when more than this many events are failed (-1: no check)")
	warnBlocked := fs.Int64("warn-blocked", 0, "WARNING when more than this many aggregates are blocked (0, the default: any; -1: no check)")
	critBlocked := fs.Int64("crit-blocked", -1, "CRITICAL when more than this many aggregates are blocked (-1: no check)")
	maxOldest := fs.Duration("max-oldest", 0, "CRITICAL when the oldest pending event (ready or scheduled, from created_at) is older than this (0: no check)")
	maxFailed := fs.Int64("max-failed", -1, "CRITICAL when more than this many events are failed (-1: no check; the older name of --crit-failed)")
	warnNoRelay := fs.Duration("warn-no-relay", 0, "WARNING when no relay has been seen (heartbeat or live lease) for longer than this, or none ever (0, the default: no check)")
	critNoRelay := fs.Duration("crit-no-relay", 0, "CRITICAL when no relay has been seen for longer than this, or none ever (0, the default: no check)")
	warnHorizon := fs.Duration("warn-horizon", inspect.HorizonWarnAfter, "WARNING when a transaction has held back the database's xmin horizon (vacuum of every table) for longer than this (0: no check)")
	critHorizon := fs.Duration("crit-horizon", inspect.HorizonCritAfter, "CRITICAL when a transaction has held back the xmin horizon for longer than this (0: no check)")
	// The older names of --crit-failed and --crit-lag still work (monitoring
	// configurations use them); --help lists only the current ones.
	_ = fs.MarkHidden("max-failed")
	var kafka relayFlags
	kafka.registerKafka(fs)
	topicTemplate := fs.String("topic-template", "",
		"the relay's --topic-template: with brokers, status asks them whether the topics of pending events exist, rows' own topics always, the others' only with this")
	keepOwn(fs, "topic-template")
	var lag lagFlags
	lag.register(fs)
	lt := lag.thresholds(fs)
	if err := parse(fs, args, io); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--warn-oldest", *warnOldest}, {"--crit-oldest", *critOldest}, {"--max-oldest", *maxOldest},
		{"--warn-no-relay", *warnNoRelay}, {"--crit-no-relay", *critNoRelay},
		{"--warn-horizon", *warnHorizon}, {"--crit-horizon", *critHorizon}} {
		if d.v < 0 {
			return usagef("%s must not be negative", d.name)
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"--warn-failed", *warnFailed}, {"--crit-failed", *critFailed}, {"--warn-blocked", *warnBlocked}, {"--crit-blocked", *critBlocked}, {"--max-failed", *maxFailed}} {
		if n.v < -1 {
			return usagef("%s must be -1 (no check) or more", n.name)
		}
	}
	if *maxFailed >= 0 && (*critFailed < 0 || *maxFailed < *critFailed) {
		*critFailed = *maxFailed // the older name of the same check; the stricter wins
	}
	if err := lt.validate(); err != nil {
		return err
	}
	if db.fleetView() {
		for _, name := range []string{"dsn", "schema", "brokers", "groups", "exclude-groups", "lag-topics"} {
			if fs.Changed(name) && io.Getenv(EnvName(name)) == "" {
				return usagef("--%s and --fleet: the fleet file names each outbox's database, schema, brokers and consumer groups", name)
			}
		}
		th := fleet.Thresholds{WarnOldest: *warnOldest, CritOldest: *critOldest, WarnFailed: *warnFailed, CritFailed: *critFailed,
			WarnBlocked: *warnBlocked, CritBlocked: *critBlocked, MaxOldest: *maxOldest, WarnNoRelay: *warnNoRelay, CritNoRelay: *critNoRelay,
			WarnHorizon: *warnHorizon, CritHorizon: *critHorizon}
		lt.into(&th)
		if err := kafka.resolveKafka(io); err != nil {
			return err
		}
		return statusFleet(ctx, db.fleet, th, fleetLagDial(kafka.kafka), *asJSON, io)
	}
	if err := kafka.resolveKafka(io); err != nil {
		return err
	}
	if lt.set() && len(kafka.kafka.Brokers) == 0 {
		return usagef("consumer lag thresholds need Kafka: set --brokers or KAFKA_BROKERS")
	}
	var checker *consumerlag.Checker
	if len(kafka.kafka.Brokers) > 0 {
		c, err := lag.checker(kafka.kafka)
		if err != nil {
			return err
		}
		checker = c
		defer checker.Close()
	}
	in, pool, err := db.inspector(ctx, io)
	if err != nil {
		// A bad --dsn or --schema stays bad usage; anything else is the database not
		// answering, and then nothing can be said about the outbox.
		if errors.As(err, new(usageError)) {
			return err
		}
		return unknown(io, *asJSON, err)
	}
	defer pool.Close()
	s, err := in.Snapshot(ctx)
	if err != nil {
		return unknown(io, *asJSON, err)
	}
	publishable, err := in.OldestPublishableAge(ctx)
	if err != nil {
		return unknown(io, *asJSON, err)
	}
	s.Health.Horizon = withoutOwnSessions(ctx, pool, s.Health.Horizon)
	s.Health.OldestXmin = s.Health.Horizon.Oldest()
	var consumers *consumerlag.Report
	if checker != nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second) // within a check plugin's usual 10 s
		r := consumerlag.CheckTopics(lctx, checker, lag.topicsOf(pool, in.Schema()))
		cancel()
		consumers = &r
	}

	th := fleet.Thresholds{WarnOldest: *warnOldest, CritOldest: *critOldest, WarnFailed: *warnFailed, CritFailed: *critFailed,
		WarnBlocked: *warnBlocked, CritBlocked: *critBlocked, MaxOldest: *maxOldest, WarnNoRelay: *warnNoRelay, CritNoRelay: *critNoRelay,
		WarnHorizon: *warnHorizon, CritHorizon: *critHorizon}
	lt.into(&th)
	verdict := th.Check(s, publishable)
	var ask topicsAsker
	if len(kafka.kafka.Brokers) > 0 {
		ask = brokerTopics(kafka.kafka)
	}
	missing, askErr, err := checkMissingTopics(ctx, pool, in.Schema(), *topicTemplate, ask, verdict)
	if err != nil {
		return unknown(io, *asJSON, err)
	}
	check := statusCheck{}
	if *maxOldest > 0 {
		v := maxOldest.Seconds()
		check.MaxOldestSeconds = &v
	}
	if *maxFailed >= 0 {
		check.MaxFailed = maxFailed
	}
	if consumers != nil {
		th.CheckLag(verdict, *consumers, termtext.Sanitize)
	}
	check.Crossed, check.Thresholds, check.Unsure = verdict.Crossed, verdict.Thresholds, verdict.Unsure
	level := int(verdict.Level)
	check.Level = levelNames[level]
	check.Healthy = level == 0
	summary := statusSummary(check, s, publishable, consumers)
	if *asJSON {
		if err := writeJSON(io.Out, statusJSON{Snapshot: s, OldestPublishableAge: publishable, Consumers: consumers, MissingTopics: missing,
			MissingTopicsError: askErr, FailedGroupsCover: s.FailedGroupsCover(), Check: check}); err != nil {
			return err
		}
	} else {
		// The first line is the plugin output a monitoring system shows; the report
		// after it is the plugin's long output.
		fmt.Fprintln(io.Out, summary)
		printStatus(io.Out, s, heldAfter(*warnHorizon, *critHorizon))
		printMissingTopics(io.Out, missing, askErr)
		fmt.Fprintf(io.Out, "oldest publishable %s (ready events not waiting behind a failed or scheduled one)\n", publishable)
		if consumers != nil {
			printConsumers(io.Out, *consumers)
		}
	}
	if level != 0 {
		return exitError{code: level, msg: check.Level + ": " + strings.Join(check.Crossed, "; ")}
	}
	return nil
}

// unknown ends status as UNKNOWN: the database did not answer, so nothing can be
// said about the outbox.
func unknown(io IO, asJSON bool, err error) error {
	msg := termtext.Sanitize(termtext.OneLine(err.Error()))
	if asJSON {
		_ = writeJSON(io.Out, struct {
			Check statusCheck `json:"check"`
		}{statusCheck{Level: "UNKNOWN", Crossed: []string{}, Thresholds: []statusThreshold{}, Error: msg}})
	} else {
		fmt.Fprintf(io.Out, "OUTBOXTOP UNKNOWN - %s\n", msg)
	}
	return exitError{code: ExitUnknown, msg: "UNKNOWN: " + msg}
}

// statusSummary is the one-line plugin output: level, the crossed thresholds or
// the main numbers, then performance data after "|" (label=value[unit];warn;crit;min).
func statusSummary(check statusCheck, s inspect.Snapshot, publishable inspect.Age, consumers *consumerlag.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "OUTBOXTOP %s - ", check.Level)
	if len(check.Crossed) > 0 {
		b.WriteString(strings.Join(check.Crossed, ", "))
	} else {
		c := s.Counts
		fmt.Fprintf(&b, "ready %s, failed %s, blocked %s, oldest publishable %s", c.Bounds.Ready.Format(c.Ready),
			c.Bounds.Failed.Format(c.Failed), s.Blocked.Bound.Format(s.Blocked.Count), publishable)
		if consumers != nil {
			if n, group := consumers.MaxLag(); group != "" {
				fmt.Fprintf(&b, ", consumer lag %d (%s)", n, short(termtext.Sanitize(group), 40))
			}
		}
	}
	if len(check.Unsure) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(check.Unsure, "; "))
	}
	bounds := map[string][2]string{}
	for _, t := range check.Thresholds {
		bounds[t.Name] = [2]string{perfBound(t.Warning), perfBound(t.Critical)}
	}
	c := s.Counts
	perf := func(label string, v string, name string) {
		bd := bounds[name]
		fmt.Fprintf(&b, " %s=%s;%s;%s;0", label, v, bd[0], bd[1])
	}
	// Performance data are numbers: a count that is a bound keeps its label and
	// value (graphs stay one series) and is followed by <label>_lower_bound=1 or
	// <label>_upper_bound=1.
	var marks []string
	count := func(label string, n int64, bound inspect.Bound, name string) {
		perf(label, fmt.Sprint(n), name)
		if bound != inspect.Exact {
			marks = append(marks, label+"_"+string(bound))
		}
	}
	b.WriteString(" |")
	count("ready", c.Ready, c.Bounds.Ready, "")
	count("waiting", c.Waiting, c.Bounds.Waiting, "")
	count("publishable", c.Publishable, c.Bounds.Publishable, "")
	count("scheduled", c.Scheduled, c.Bounds.Scheduled, "")
	count("leased", c.Leased, c.Bounds.Leased, "")
	count("failed", c.Failed, c.Bounds.Failed, "failed")
	count("blocked", s.Blocked.Count, s.Blocked.Bound, "blocked")
	count("unserialized", s.Order.Unserialized, s.Order.Bound, "")
	count("order_lock_waiting", s.Order.Waiting, inspect.Exact, "")
	for _, m := range marks {
		fmt.Fprintf(&b, " %s=1;;;0;1", m)
	}
	perf("oldest_publishable", fmt.Sprintf("%.3fs", publishable.Duration().Seconds()), "oldest publishable")
	perf("oldest_pending", fmt.Sprintf("%.3fs", s.OldestPendingAge.Duration().Seconds()), "oldest pending")
	if s.OldestPendingBound == inspect.LowerBound {
		fmt.Fprintf(&b, " oldest_pending_%s=1;;;0;1", inspect.LowerBound)
	}
	perf("published_1m", fmt.Sprint(s.Published.Last1m.Value), "")
	perf("relays", fmt.Sprint(s.RelaysLive()), "")
	if age, seen := s.NoRelayFor(); seen {
		perf("no_relay", fmt.Sprintf("%.3fs", age.Duration().Seconds()), fleet.NoRelayCheck)
	}
	perf("xmin_horizon", fmt.Sprintf("%.3fs", s.Health.Horizon.OldestAge().Duration().Seconds()), fleet.HorizonCheck)
	var xids int64
	if x := s.Health.Horizon.Oldest(); x != nil {
		xids = x.XminAge
	}
	perf("xmin_horizon_xids", fmt.Sprint(xids), "")
	if consumers != nil {
		b.WriteString(lagPerf(*consumers, check))
	}
	return b.String()
}

func perfBound(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// withoutOwnSessions drops the horizon's holders that are this process's own
// connections, or transactions begun after the snapshot's (a relay's claim a few
// milliseconds old, shown as "open -107ms"): neither holds back vacuum.
func withoutOwnSessions(ctx context.Context, pool *pgxpool.Pool, h inspect.Horizon) inspect.Horizon {
	own := map[int32]bool{}
	for _, c := range pool.AcquireAllIdle(ctx) {
		own[int32(c.Conn().PgConn().PID())] = true
		c.Release()
	}
	kept := []inspect.XminHolder{}
	for _, x := range h.Holders {
		if x.Kind == inspect.HolderSession || x.Kind == inspect.HolderWriter {
			if x.Age < 0 || own[x.PID] {
				continue
			}
		}
		kept = append(kept, x)
	}
	h.Holders = kept
	return h
}

// heldAfter is the age past which status's report calls the horizon held: its
// WARNING bound, else its CRITICAL one, else the default.
func heldAfter(warn, crit time.Duration) time.Duration {
	switch {
	case warn > 0:
		return warn
	case crit > 0:
		return crit
	}
	return inspect.HorizonWarnAfter
}

// printStatus is status's report; heldAfter is the transaction age past which
// the xmin horizon is reported held.
func printStatus(w io.Writer, s inspect.Snapshot, heldAfter time.Duration) {
	c := s.Counts
	fmt.Fprintf(w, "outboxtop status — schema %s at %s (took %s)\n", s.Schema, s.TakenAt.Format(time.RFC3339), s.Took)
	bd := c.Bounds
	fmt.Fprintf(w, "pending %s (ready %s, of them waiting %s, publishable %s; scheduled %s)  leased %s  failed %s  published %s  archived %s\n",
		bd.Pending.Format(c.Pending), bd.Ready.Format(c.Ready), bd.Waiting.Format(c.Waiting), bd.Publishable.Format(c.Publishable),
		bd.Scheduled.Format(c.Scheduled), bd.Leased.Format(c.Leased), bd.Failed.Format(c.Failed), c.Published, c.Archived)
	if bd != (inspect.Bounds{}) || s.Blocked.Bound != inspect.Exact {
		fmt.Fprintln(w, "counts marked ≥ are at least that, ≤ at most: the table holds more rows than status counts one by one")
	}
	if c.Published.Estimate || c.Archived.Estimate {
		fmt.Fprintln(w, "totals marked ~ are the planner's estimates, never below the rows counted")
	}
	fmt.Fprintf(w, "oldest pending %s  oldest ready %s  expired leases %s", inspect.AgeText(s.OldestPendingAge, s.OldestPendingBound),
		inspect.AgeText(s.OldestReadyAge, s.OldestReadyBound), bd.ExpiredLeases.Format(s.ExpiredLeases))
	if s.NextScheduledAt != nil {
		fmt.Fprintf(w, "  next scheduled %s", inspect.Relative(*s.NextScheduledAt, s.TakenAt))
	}
	fmt.Fprintln(w)
	p := s.Published
	fmt.Fprintf(w, "published last 1m %s, 5m %s, 1h %s (%.1f/s)\n", p.Last1m, p.Last5m, p.Last1h, p.RatePerSecond)
	if p.Last1m.Estimate || p.Last5m.Estimate || p.Last1h.Estimate {
		fmt.Fprintf(w, "windows marked ~ are estimates from the newest %d rows: at least those, at most the published rows of the table\n",
			max(p.Last1m.AtLeast, p.Last5m.AtLeast, p.Last1h.AtLeast))
	}
	if c.Failed > 0 {
		// The groups are of the newest failures only past a cap: a group's
		// count is never shown as a total it is not.
		if cover := s.FailedGroupsCover(); cover.All {
			fmt.Fprintln(w, "failed by error:")
		} else {
			fmt.Fprintf(w, "failed by error, in %s (each count is of those):\n", cover.Label())
		}
		for _, g := range s.FailedByError {
			fmt.Fprintf(w, "  %6d  %s\n", g.Count, short(termtext.Sanitize(g.Key), 100))
		}
	}
	if s.Blocked.Count > 0 {
		// The snapshot's order: the most events waiting behind the blocker first.
		fmt.Fprintf(w, "blocked aggregates %s (%s):\n", s.Blocked.Bound.Format(s.Blocked.Count), s.Blocked.Heading())
		for k, b := range s.Blocked.Aggregates {
			if k == 5 {
				fmt.Fprintf(w, "  … (%s more)\n", s.Blocked.Bound.Format(s.Blocked.Count-5))
				break
			}
			fmt.Fprintf(w, "  %s/%s behind %s (%s) with %d waiting", short(termtext.Sanitize(b.AggregateType), 30),
				short(termtext.Sanitize(b.AggregateID), 40), b.Blocker.EventID, b.Blocker.State, b.Waiting)
			if b.FailedBehind > 0 {
				fmt.Fprintf(w, ", %d failed behind", b.FailedBehind)
			}
			fmt.Fprintln(w)
		}
	}
	printOrder(w, s.Order)
	printRelays(w, s)
	for _, con := range s.Inbox {
		fmt.Fprintf(w, "inbox %s: %s consumed, %d in the last 5m\n", short(termtext.Sanitize(con.Name), 40), con.Total, con.Last5m)
	}
	for _, t := range s.Health.Tables {
		fmt.Fprintf(w, "table %s: %d live, %d dead tuples, %s + %s indexes", t.Table, t.LiveTuples, t.DeadTuples,
			humanBytes(t.TableBytes), humanBytes(t.IndexBytes))
		if t.LastAutovacuum != nil {
			fmt.Fprintf(w, ", autovacuum %s", inspect.Relative(*t.LastAutovacuum, s.TakenAt))
		}
		fmt.Fprintln(w)
	}
	printHorizon(w, s.Health.Horizon, heldAfter)
}

// printOrder is status's commit-order line and, when there are any, the
// aggregates whose seq order may not be their commit order and the inserts
// waiting for an order lock, with who holds it.
func printOrder(w io.Writer, o inspect.Order) {
	switch {
	case o.Unserialized > 0:
		fmt.Fprintf(w, "commit order %s: %s aggregates of unknown order (events from overlapping transactions, or present when the table was adopted: their seq order, the order they are published in, may not be their commit order; most marked first):\n",
			o.Mode, o.Bound.Format(o.Unserialized))
		for k, a := range o.Aggregates {
			if k == 5 {
				fmt.Fprintf(w, "  … (%s more)\n", o.Bound.Format(o.Unserialized-5))
				break
			}
			fmt.Fprintf(w, "  %s/%s: %d events, the last at %s\n", short(termtext.Sanitize(a.AggregateType), 30),
				short(termtext.Sanitize(a.AggregateID), 40), a.Events, inspect.TimeJSON(a.LastAt))
		}
	case o.Mode == "enforce":
		fmt.Fprintln(w, "commit order enforced: seq order is commit order for every aggregate")
	case o.Mode == "detect":
		fmt.Fprintln(w, "commit order detected: no aggregate of unknown order")
	default:
		fmt.Fprintln(w, "commit order off: seq is insertion order, unchecked (outboxtop migrate --commit-order)")
	}
	if o.Waiting == 0 {
		return
	}
	fmt.Fprintf(w, "%d inserts waiting for an order lock", o.Waiting)
	for k, h := range o.Holders {
		sep := ", held by "
		if k > 0 {
			sep = "; "
		}
		fmt.Fprintf(w, "%spid %d (role %s, application %s, %s, transaction open %s)", sep, h.PID,
			short(termtext.Sanitize(h.Role), 30), short(termtext.Sanitize(h.Application), 30), h.State, h.Open)
	}
	fmt.Fprintln(w)
}

// approx is a count as status prints it: "~" in front when it is an estimate.
func approx(n int64, estimate bool) string {
	return inspect.Count{Value: n, Estimate: estimate}.String()
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func runEvents(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("events", io)
	var db dbFlags
	db.register(fs)
	state := fs.String("state", "", "ready, scheduled, pending, leased, failed, published or archived (required without --aggregate)")
	aggregate := fs.String("aggregate", "", "TYPE/ID: every event of one aggregate in seq order, its blocker and what waits behind it")
	var ff filterFlags
	ff.register(fs)
	sort := fs.String("sort", "seq", "order by seq, created_at, available_at, lease_until, failed_at, published_at, archived_at or attempts")
	desc := fs.Bool("desc", false, "descending order")
	limit := fs.Int("limit", 50, "events per page (at most 1000)")
	after := fs.String("after", "", "continue after this cursor (printed as next: by the previous page)")
	asJSON := fs.Bool("json", false, "print the page as JSON")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if *aggregate != "" {
		return runTimeline(ctx, &db, *aggregate, *limit, *asJSON, io)
	}
	st := wire.State(*state)
	if st != inspect.Archived {
		if _, err := wire.Parse(*state); err != nil {
			return usagef("--state: %v", err)
		}
	}
	f, err := ff.filter()
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return usagef("--limit must be between 1 and 1000")
	}
	in, pool, err := db.inspector(ctx, io)
	if err != nil {
		return err
	}
	defer pool.Close()
	page, err := in.List(ctx, inspect.ListOptions{State: st, Filter: f, Sort: inspect.Sort(*sort), Desc: *desc, Limit: *limit, After: *after})
	if err != nil {
		if errors.Is(err, inspect.ErrInvalidRequest) {
			return usagef("%v", err)
		}
		return err
	}
	noteSearch(io, st, page)
	behind, err := waitingBehind(ctx, in, page.Events)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeEventsJSON(ctx, io, in, page, behind)
	}
	now := time.Now()
	fmt.Fprintf(io.Out, "%-36s  %-9s  %-20s  %-28s  %8s  %10s  %s\n", "EVENT ID", "STATE", "EVENT TYPE", "AGGREGATE", "ATTEMPTS", "AGE", "LAST ERROR")
	for _, e := range page.Events {
		state := string(e.State)
		if _, ok := behind[e.EventID]; ok {
			state = "waiting" // ready by its available_at, held behind its aggregate's head
		}
		fmt.Fprintf(io.Out, "%-36s  %-9s  %-20s  %-28s  %8d  %10s  %s\n", e.EventID, state,
			short(termtext.Sanitize(e.EventType), 20), short(termtext.Sanitize(e.AggregateType+"/"+e.AggregateID), 28), e.Attempts,
			ageText(e, now), short(termtext.Sanitize(e.LastError), 60))
	}
	if len(behind) > 0 {
		fmt.Fprintln(io.Out, "waiting: ready by its available_at, but behind its aggregate's failed or scheduled head ('outboxtop events --aggregate TYPE/ID' shows it)")
	}
	if page.Next != "" {
		fmt.Fprintf(io.Out, "next: %s\n", page.Next)
	}
	return nil
}

// waitingBehind is the heads the ready events of evs wait behind, by event id.
func waitingBehind(ctx context.Context, in *inspect.Inspector, evs []inspect.Event) (map[string]inspect.Head, error) {
	var ids []string
	for _, e := range evs {
		if e.State == wire.Ready && e.ArchivedAt == nil {
			ids = append(ids, e.EventID)
		}
	}
	return in.WaitingBehind(ctx, ids)
}

// writeEventsJSON prints a page of events with each event's attempt history
// (by event id; a role that may not read it gets the reason instead).
func writeEventsJSON(ctx context.Context, io IO, in *inspect.Inspector, page inspect.Page, behind map[string]inspect.Head) error {
	ids := make([]string, len(page.Events))
	for k, e := range page.Events {
		ids[k] = e.EventID
	}
	out := struct {
		inspect.Page
		AttemptHistory map[string][]inspect.Attempt `json:"attempt_history"`
		HistoryError   string                       `json:"attempt_history_error,omitempty"`
		// WaitingBehind: by event id, the failed or scheduled head of its
		// aggregate that a ready event waits behind.
		WaitingBehind map[string]inspect.Head `json:"waiting_behind"`
	}{Page: page, WaitingBehind: behind}
	h, err := in.AttemptHistory(ctx, ids)
	switch {
	case errors.Is(err, inspect.ErrHistoryRefused):
		out.HistoryError, out.AttemptHistory = err.Error(), map[string][]inspect.Attempt{}
	case err != nil:
		return err
	default:
		out.AttemptHistory = h
	}
	return writeJSON(io.Out, out)
}
