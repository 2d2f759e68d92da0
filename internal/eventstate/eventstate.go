// Package eventstate is the one definition of an outbox event's state, shared by the
// relay, inspect, the console and status. Each state is a SQL condition on an
// outbox_event row (aliased or not: the conditions use bare column names) and the
// same rule in Go for rows already in memory.
//
//	published  published_at IS NOT NULL
//	failed     not published, failed_at IS NOT NULL (dead: out of attempts, an error
//	           that can never succeed, or parked by an operator)
//	leased     not published, not failed, lease_until > now()
//	ready      not published, not failed, not leased, available_at <= now()
//	scheduled  not published, not failed, not leased, available_at > now()
//	pending    ready + scheduled
//
// An expired lease (lease_token set, lease_until past) is claimable again: such a row
// is ready (or scheduled), and ExpiredLease picks it out for display.
package eventstate

import (
	"fmt"
	"time"
)

// State is one of the event states.
type State string

// The states. Pending is the union of Ready and Scheduled.
const (
	Published State = "published"
	Failed    State = "failed"
	Leased    State = "leased"
	Ready     State = "ready"
	Scheduled State = "scheduled"
	Pending   State = "pending"
)

// All lists the states that partition the table, in the order a person reads them.
var All = []State{Ready, Scheduled, Leased, Failed, Published}

// SQL conditions for each state, on outbox_event's columns.
const (
	PublishedSQL = `published_at IS NOT NULL`
	FailedSQL    = `published_at IS NULL AND failed_at IS NOT NULL`
	LeasedSQL    = `published_at IS NULL AND failed_at IS NULL AND lease_until > now()`
	ReadySQL     = `published_at IS NULL AND failed_at IS NULL AND (lease_until IS NULL OR lease_until <= now()) AND available_at <= now()`
	ScheduledSQL = `published_at IS NULL AND failed_at IS NULL AND (lease_until IS NULL OR lease_until <= now()) AND available_at > now()`
	PendingSQL   = `published_at IS NULL AND failed_at IS NULL AND (lease_until IS NULL OR lease_until <= now())`
	// ExpiredLeaseSQL: a lease that ran out without a mark; the row is claimable.
	ExpiredLeaseSQL = `published_at IS NULL AND failed_at IS NULL AND lease_token IS NOT NULL AND lease_until <= now()`
)

// SQL returns the condition for s.
func SQL(s State) (string, error) {
	switch s {
	case Published:
		return PublishedSQL, nil
	case Failed:
		return FailedSQL, nil
	case Leased:
		return LeasedSQL, nil
	case Ready:
		return ReadySQL, nil
	case Scheduled:
		return ScheduledSQL, nil
	case Pending:
		return PendingSQL, nil
	}
	return "", fmt.Errorf("unknown state %q (want ready, scheduled, pending, leased, failed or published)", string(s))
}

// Parse turns a user's word into a State.
func Parse(s string) (State, error) {
	st := State(s)
	_, err := SQL(st)
	return st, err
}

// Of computes the state of a row from its columns as of now. Zero times mean NULL.
func Of(now time.Time, publishedAt, failedAt, leaseUntil, availableAt time.Time) State {
	switch {
	case !publishedAt.IsZero():
		return Published
	case !failedAt.IsZero():
		return Failed
	case !leaseUntil.IsZero() && leaseUntil.After(now):
		return Leased
	case availableAt.After(now):
		return Scheduled
	default:
		return Ready
	}
}
