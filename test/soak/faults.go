package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/outboxtop/outboxtop/internal/demo"
)

// A step of the fault schedule: at a fraction of the run, do something and say
// when the fault ended (recovery is measured from there).
type step struct {
	at   float64
	name string
	do   func(ctx context.Context, f *faultResult) (end time.Time)
}

func (s *soak) schedule() []step {
	lease := s.cfg.lease
	return []step{
		{0.06, "poison event injected", s.poison},
		{0.12, "SIGKILL relay-1, restarted 1s later", func(ctx context.Context, f *faultResult) time.Time {
			r := s.relays[0]
			f.Note = fmt.Sprintf("pid %d", r.pid())
			if err := r.kill(); err != nil {
				s.problem("SIGKILL relay-1: %v", err)
			}
			time.Sleep(time.Second)
			if err := r.start(); err != nil {
				s.problem("restarting relay-1: %v", err)
			}
			return time.Now()
		}},
		{0.22, fmt.Sprintf("SIGSTOP relay-2 holding a batch for %v (lease %v), SIGCONT", lease+2*time.Second, lease), func(ctx context.Context, f *faultResult) time.Time {
			r := s.relays[1]
			ids, tries := s.stopHolding(ctx, r)
			if len(ids) == 0 {
				_ = r.signal(syscall.SIGSTOP) // a zombie all the same
			}
			time.Sleep(lease + 2*time.Second)
			_ = r.signal(syscall.SIGCONT)
			f.Note = fmt.Sprintf("caught on try %d holding %d events", tries, len(ids))
			return time.Now()
		}},
		{0.36, fmt.Sprintf("Kafka broker stopped, restarted %v later", s.cfg.outage), func(ctx context.Context, f *faultResult) time.Time {
			if s.cfg.kafkaCtl == "" {
				f.Note = "skipped: no --kafka-ctl"
				return time.Now()
			}
			s.kafka("stop")
			time.Sleep(s.cfg.outage)
			if err := s.kafka("restart"); err != nil {
				// Try once more: the rest of the run (and of CI) needs the broker.
				time.Sleep(2 * time.Second)
				if err := s.kafka("restart"); err != nil {
					s.problem("the broker did not come back: %v", err)
				}
			}
			return time.Now()
		}},
		{0.50, "PostgreSQL restarted (fast shutdown)", func(ctx context.Context, f *faultResult) time.Time {
			if err := s.cluster.Restart(ctx); err != nil {
				s.problem("restarting PostgreSQL: %v", err)
			}
			return time.Now()
		}},
		{0.58, "poison event injected", s.poison},
		{0.62, "operator: retry --from failed --all", func(ctx context.Context, f *faultResult) time.Time {
			f.Note = s.cli("retry", "retry", "--from", "failed", "--all", "--yes")
			return time.Now()
		}},
		{0.68, "operator: reset-lease of relay-3's batch while it hangs (SIGSTOP)", s.resetHungLease},
		{0.76, "operator: archive --older-than 5s --all", func(ctx context.Context, f *faultResult) time.Time {
			f.Note = s.cli("archive", "archive", "--older-than", "5s", "--all", "--yes")
			return time.Now()
		}},
		{0.84, "operator: skip the poison events", func(ctx context.Context, f *faultResult) time.Time {
			f.Note = s.cli("skip", "skip", "--event-type", demo.OrderPoisoned, "--reason", "soak: poison event", "--yes")
			return time.Now()
		}},
	}
}

// runSchedule runs the steps in order, each no earlier than its time.
func (s *soak) runSchedule(ctx context.Context, loadStart time.Time) {
	steps := s.schedule()
	s.report.Faults = make([]faultResult, len(steps))
	for i, st := range steps {
		at := loadStart.Add(time.Duration(st.at * float64(s.cfg.duration)))
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return
		}
		// Faults one at a time: a recovery still under way would be charged to the
		// next fault. Wait for it, a while.
		for wait := time.Now().Add(20 * time.Second); time.Now().Before(wait) && !s.recovered(i); {
			time.Sleep(100 * time.Millisecond)
		}
		f := &s.report.Faults[i]
		began := time.Now()
		s.mu.Lock()
		f.Name, f.At, f.Recovery = st.name, began.Sub(s.start).Seconds(), -1
		s.mu.Unlock()
		s.logf("fault: %s", st.name)
		end := st.do(ctx, f)
		s.mu.Lock()
		f.Outage = end.Sub(began).Seconds()
		s.mu.Unlock()
		if !strings.HasPrefix(st.name, "poison") {
			s.measureRecovery(ctx, f, end)
		}
	}
}

// recovered reports whether the faults before step i have recovered.
func (s *soak) recovered(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.report.Faults[:i] {
		if f.Recovery < 0 {
			return false
		}
	}
	return true
}

func (s *soak) poison(ctx context.Context, f *faultResult) time.Time {
	id, err := s.orders.InjectPoison(ctx)
	if err != nil {
		s.problem("injecting poison: %v", err)
		return time.Now()
	}
	f.Note = "event " + id.String()
	s.measureDead(ctx, f, id, time.Now())
	return time.Now()
}

var resultLine = regexp.MustCompile(`^(retried|reset the lease|archived|skipped|parked|nothing)`)

// cli runs an operator action with the outboxtop binary and returns its output
// on one line.
func (s *soak) cli(label string, args ...string) string {
	args = append(args, "--dsn", s.dsn, "--actor", "soak")
	out, err := exec.Command(s.bin, args...).CombinedOutput()
	text := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; ")), " ")
	if err != nil {
		s.problem("outboxtop %s: %v: %s", label, err, text)
	}
	s.logf("outboxtop %s: %s", label, text)
	// The note is the result line, not the list of ids.
	for _, part := range strings.Split(text, "; ") {
		if resultLine.MatchString(part) {
			return part
		}
	}
	return text
}

func (s *soak) kafka(verb string) error {
	cmd := exec.Command(s.cfg.kafkaCtl, verb)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	s.logf("%s %s: %s", s.cfg.kafkaCtl, verb, strings.TrimSpace(strings.ReplaceAll(string(out), "\n", "; ")))
	if err != nil {
		return fmt.Errorf("%s %s: %v", s.cfg.kafkaCtl, verb, err)
	}
	return nil
}

// resetHungLease stops relay-3 until it is caught holding a lease, then resets those events' leases with the CLI, as an operator
// rescuing a hung relay's batch would, and continues it: its late marks must be
// fenced off.
func (s *soak) resetHungLease(ctx context.Context, f *faultResult) time.Time {
	r := s.relays[2]
	ids, tries := s.stopHolding(ctx, r)
	if len(ids) == 0 {
		_ = r.signal(syscall.SIGCONT)
		f.Note = "never caught relay-3 holding a lease; nothing reset"
		return time.Now()
	}
	args := []string{"reset-lease", "--from", "leased", "--yes"}
	for _, id := range ids[:min(len(ids), 100)] {
		args = append(args, "--id", id)
	}
	out := s.cli("reset-lease", args...)
	time.Sleep(time.Second)
	_ = r.signal(syscall.SIGCONT)
	f.Note = fmt.Sprintf("caught on try %d holding %d events: %s", tries, len(ids), out)
	return time.Now()
}

// stopHolding SIGSTOPs r until it is caught holding leased events and returns
// them with r still stopped (or none, r continued, after 40 tries). Leases that
// do not move while r is stopped are its own: the live relays settle theirs in
// milliseconds.
func (s *soak) stopHolding(ctx context.Context, r *relay) (ids []string, tries int) {
	for tries = 1; tries <= 40 && ctx.Err() == nil; tries++ {
		_ = r.signal(syscall.SIGSTOP)
		before := s.leases(ctx)
		time.Sleep(400 * time.Millisecond)
		after := s.leases(ctx)
		for tok, evs := range before {
			if len(after[tok]) == len(evs) {
				ids = append(ids, evs...)
			}
		}
		if len(ids) > 0 {
			return ids, tries
		}
		_ = r.signal(syscall.SIGCONT)
		time.Sleep(150 * time.Millisecond)
	}
	return nil, tries
}

// leases maps each live lease token to its events.
func (s *soak) leases(ctx context.Context) map[string][]string {
	out := map[string][]string{}
	rows, err := s.pool.Query(ctx, `SELECT lease_token::text, event_id::text FROM outbox_event
		WHERE published_at IS NULL AND failed_at IS NULL AND lease_until > now()`)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var tok, id string
		if rows.Scan(&tok, &id) == nil {
			out[tok] = append(out[tok], id)
		}
	}
	return out
}
