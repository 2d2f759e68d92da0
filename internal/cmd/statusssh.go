package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/termtext"
)

// defaultStatusThresholds are status's thresholds when no flag sets one (the
// defaults of its flags), the consumer lag left out: `ssh … status` checks the
// outbox as `outboxtop status` with no flags and no brokers does.
func defaultStatusThresholds() fleet.Thresholds {
	return fleet.Thresholds{WarnOldest: time.Minute, CritOldest: 5 * time.Minute, WarnFailed: 0, CritFailed: -1,
		WarnBlocked: 0, CritBlocked: -1, WarnLag: -1, CritLag: -1,
		WarnHorizon: inspect.HorizonWarnAfter, CritHorizon: inspect.HorizonCritAfter}
}

// sshExit ends an SSH status session with status's exit code (sshserve.ExitStatus).
type sshExit struct{ exitError }

func (e sshExit) ExitStatus() int { return e.code }

// statusWriter is `ssh … status` of outboxtop serve: what `outboxtop status`
// prints with its default thresholds, the monitoring-plugin line first, and
// its level as the session's exit status (0 OK, 1 WARNING, 2 CRITICAL, 3
// UNKNOWN), so a check run over SSH reads as one run locally.
func statusWriter(in *inspect.Inspector, pool *pgxpool.Pool) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		fail := func(err error) error {
			msg := termtext.Sanitize(termtext.OneLine(err.Error()))
			fmt.Fprintf(w, "OUTBOXTOP UNKNOWN - %s\n", msg)
			return sshExit{exitError{code: ExitUnknown, msg: "UNKNOWN: " + msg}}
		}
		s, err := in.Snapshot(ctx)
		if err != nil {
			return fail(err)
		}
		publishable, err := in.OldestPublishableAge(ctx)
		if err != nil {
			return fail(err)
		}
		th := defaultStatusThresholds()
		verdict := th.Check(s, publishable)
		missing, _, err := checkMissingTopics(ctx, pool, in.Schema(), "", nil, verdict)
		if err != nil {
			return fail(err)
		}
		check := statusCheck{Crossed: verdict.Crossed, Thresholds: verdict.Thresholds, Unsure: verdict.Unsure}
		level := int(verdict.Level)
		check.Level, check.Healthy = levelNames[level], level == 0
		fmt.Fprintln(w, statusSummary(check, s, publishable, nil))
		printStatus(w, s, heldAfter(th.WarnHorizon, th.CritHorizon))
		printMissingTopics(w, missing, "")
		fmt.Fprintf(w, "oldest publishable %s (ready events not waiting behind a failed or scheduled one)\n", publishable)
		if level != 0 {
			return sshExit{exitError{code: level, msg: check.Level + ": " + strings.Join(check.Crossed, "; ")}}
		}
		return nil
	}
}
