package cmd

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// progressEvery is how often a paced run without a terminal prints its line.
const progressEvery = 5 * time.Second

// progress shows a paced run as it goes: on a terminal one bar redrawn in
// place, else one plain line every progressEvery (and at the end), so a log
// or a pipe gets a readable history rather than carriage returns.
type progress struct {
	out   io.Writer
	tty   bool
	width int
	every time.Duration
	now   func() time.Time
	last  time.Time
	drawn bool
}

// newProgress writes to out's terminal when it has one. The lines are the
// run's own numbers, so they bypass the line cap (a bar redrawn with \r is
// one endless line to it), as JSON does.
func newProgress(out io.Writer) *progress {
	if c, ok := out.(*lineCapWriter); ok {
		c.endLine()
		out = c.w
	}
	p := &progress{out: out, width: 80, every: progressEvery, now: time.Now}
	if f, ok := out.(*os.File); ok && term.IsTerminal(f.Fd()) {
		p.tty = true
		if w, _, err := term.GetSize(f.Fd()); err == nil && w > 20 {
			p.width = w
		}
	}
	return p
}

// update shows pr: always on a terminal, else when progressEvery has passed
// since the last line.
func (p *progress) update(pr inspect.Progress) {
	if p.tty {
		fmt.Fprint(p.out, "\r"+progressBar(pr, p.width)+"\x1b[K")
		p.drawn = true
		return
	}
	if now := p.now(); p.last.IsZero() || now.Sub(p.last) >= p.every {
		p.last = now
		fmt.Fprintln(p.out, progressLine(pr))
	}
}

// finish ends the bar's line, or prints the last plain line.
func (p *progress) finish(pr inspect.Progress) {
	if p.tty {
		fmt.Fprint(p.out, "\r"+progressBar(pr, p.width)+"\x1b[K\n")
		return
	}
	fmt.Fprintln(p.out, progressLine(pr))
}

// progressBar is the terminal's line, at most width cells:
//
//	retry [██████████░░░░░░░░░░]  8500/20000  42%  500/s  eta 23s
func progressBar(pr inspect.Progress, width int) string {
	tail := fmt.Sprintf(" %d/%d %3d%% %s eta %s", pr.Done, pr.Total, percent(pr), rateText(pr), etaText(pr))
	head := string(pr.Action) + " "
	room := width - len([]rune(head)) - len([]rune(tail)) - 3 // the brackets, and a cell spare
	if room < 5 {
		return truncateCells(head+tail[1:], width-1)
	}
	room = min(room, 40)
	full := 0
	if pr.Total > 0 {
		full = int(float64(room) * float64(min(pr.Done, pr.Total)) / float64(pr.Total))
	}
	return head + "[" + strings.Repeat("█", full) + strings.Repeat("░", room-full) + "]" + tail
}

// progressLine is the plain line of a run without a terminal:
//
//	retry run 6930a1b2-3f9a2c: 8500/20000 done (42%), 500/s, eta 23s
func progressLine(pr inspect.Progress) string {
	return fmt.Sprintf("%s run %s: %d/%d done (%d%%), %s, eta %s", pr.Action, pr.Run, pr.Done, pr.Total, percent(pr), rateText(pr), etaText(pr))
}

func percent(pr inspect.Progress) int {
	if pr.Total <= 0 {
		return 100
	}
	return int(100 * min(pr.Done, pr.Total) / pr.Total)
}

// rateText is the measured rate, else the target ("500/s"), "–/s" when
// neither is known yet.
func rateText(pr inspect.Progress) string {
	r := pr.Rate
	if r <= 0 {
		r = pr.Target
	}
	if r <= 0 {
		return "–/s"
	}
	return formatRate(r)
}

// formatRate is a rate of events a second, whole when it is one ("500/s",
// "0.5/s").
func formatRate(r float64) string {
	if r >= 100 || r == math.Trunc(r) {
		return strconv.FormatFloat(math.Round(r), 'f', -1, 64) + "/s"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "/s"
}

func etaText(pr inspect.Progress) string {
	switch {
	case pr.Done >= pr.Total:
		return "0s"
	case pr.ETA < 0:
		return "–"
	}
	return shortDuration(pr.ETA)
}

// shortDuration is d to the second, in at most two units: 23s, 1m40s, 2h05m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func truncateCells(s string, n int) string {
	r := []rune(s)
	if n < 0 {
		n = 0
	}
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// parseRate reads --rate: events a second ("500", "500/s"), a minute
// ("30/m", "30/min") or an hour ("3600/h").
func parseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), "/")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, usagef("--rate %q: a positive number of events a second, like 500/s (or 30/m, 3600/h)", s)
	}
	switch strings.TrimSpace(unit) {
	case "", "s", "sec":
		return v, nil
	case "m", "min":
		return v / 60, nil
	case "h":
		return v / 3600, nil
	}
	return 0, usagef("--rate %q: the unit is /s, /m or /h", s)
}
