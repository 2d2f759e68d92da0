package wire

import "fmt"

// State is one of the event states (see the package doc).
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
