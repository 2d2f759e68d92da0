package fleet

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Lag is an outbox's consumer lag as its last lag check read it.
type Lag struct {
	CheckedAt time.Time `json:"checked_at"`
	// Took is how long the check ran.
	Took inspect.Age `json:"took_seconds"`
	// MaxLag is the largest lag of a measured group (MaxLagGroup; empty when no
	// group was measured).
	MaxLag      int64  `json:"max_lag"`
	MaxLagGroup string `json:"max_lag_group,omitempty"`
	// OldestAge is the age of the oldest unconsumed record of any group (nil:
	// nothing unconsumed, or no age read).
	OldestAge *consumerlag.Seconds `json:"oldest_unconsumed_age_seconds"`
	// Problem is the first thing the check could not do (brokers that do not
	// answer, a group not described, ages not read), one line, from the
	// brokers: sanitize before showing it. Empty when all went well.
	Problem string `json:"problem,omitempty"`
	// Report is the whole check.
	Report consumerlag.Report `json:"report"`
}

// lagInterval is the least time between two lag checks of o: its poll
// interval, at least 5 s (consumerlag.Cache's floor).
func lagInterval(o Outbox) time.Duration { return max(o.PollInterval, 5*time.Second) }

// lagPause is the wait after a check that took took: a slow cluster is asked
// less often (20 times the check's time, like consumerlag.Cache), but never
// less than once a minute.
func lagPause(o Outbox, took time.Duration) time.Duration {
	return max(lagInterval(o), min(20*took, time.Minute))
}

// plainDial reaches brokers over plain TCP.
func plainDial(brokers []string) consumerlag.Dial {
	return func(opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	}
}

// checkLag runs one lag check of m's outbox within its lag timeout. The topics
// are read from the outbox's database under the same timeout; a database that
// does not answer makes this check report it, not wait longer.
func (m *member) checkLag(ctx context.Context) *Lag {
	lctx, cancel := context.WithTimeout(ctx, m.o.LagTimeout)
	defer cancel()
	start := time.Now()
	r := consumerlag.CheckTopics(lctx, m.checker, consumerlag.OutboxTopics(m.pool, m.o.Schema, nil))
	l := &Lag{CheckedAt: time.Now(), Took: inspect.Age(time.Since(start)), Report: r}
	if errors.Is(lctx.Err(), context.DeadlineExceeded) && len(r.Errors) > 0 {
		// The broker's own words after a cut-short check are "context deadline
		// exceeded": say which deadline.
		r.Errors[0] = strings.Replace(r.Errors[0], context.DeadlineExceeded.Error(), "no answer within "+m.o.LagTimeout.String(), 1)
	}
	l.MaxLag, l.MaxLagGroup = r.MaxLag()
	for _, g := range r.Groups {
		if g.OldestAge != nil && (l.OldestAge == nil || *g.OldestAge > *l.OldestAge) {
			a := *g.OldestAge
			l.OldestAge = &a
		}
	}
	switch {
	case len(r.Errors) > 0:
		l.Problem = r.Errors[0]
	case r.AgeError != "":
		l.Problem = r.AgeError
	default:
		for _, g := range r.Groups {
			if g.Error != "" {
				l.Problem = "group " + g.Name + ": " + g.Error
				break
			}
		}
	}
	l.Problem = strings.Join(strings.Fields(l.Problem), " ")
	return l
}
