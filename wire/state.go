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

// HeadSQL is the condition that row heads its aggregate: no earlier event of
// the aggregate is unpublished. table is the sanitized, schema-qualified
// outbox_event; row is how the enclosing query names the row (an alias, or
// table itself), not p, which the condition uses for the earlier events. It
// walks outbox_aggregate_idx.
func HeadSQL(table, row string) string {
	return `NOT EXISTS (SELECT 1 FROM ` + table + ` p
			WHERE p.published_at IS NULL AND p.aggregate_type = ` + row + `.aggregate_type
			AND p.aggregate_id = ` + row + `.aggregate_id AND p.seq < ` + row + `.seq)`
}

// BlockerSQL is the condition that row blocks its aggregate: it is failed or
// scheduled and heads the aggregate, so the aggregate's later events wait
// behind it. A blocked aggregate is one that has a blocker. The arguments are
// HeadSQL's; the state conditions use bare column names, which must resolve to
// row.
func BlockerSQL(table, row string) string {
	return `(` + FailedSQL + ` OR ` + ScheduledSQL + `) AND ` + HeadSQL(table, row)
}

// WaitingSQL is the condition that row waits behind a blocker: the first
// unpublished event of its aggregate before it (the aggregate's head) is failed
// or scheduled, so the ordered relay will not take row yet. It is one probe of
// outbox_aggregate_idx for that head (LIMIT 1), so its cost does not grow with
// the aggregate's backlog: asking instead whether any earlier event is failed
// or scheduled read every earlier event of the aggregate, 10,000 for a hot
// aggregate's newest row (0.85 s for a 500-row sample beside a storm). An event
// behind a ready or leased head with a blocker further on is not waiting yet:
// it is once the relay has published the head, which it does next. The
// arguments are HeadSQL's.
func WaitingSQL(table, row string) string {
	return `coalesce((SELECT p.failed_at IS NOT NULL OR (p.available_at > now() AND (p.lease_until IS NULL OR p.lease_until <= now()))
			FROM ` + table + ` p
			WHERE p.published_at IS NULL AND p.aggregate_type = ` + row + `.aggregate_type
			  AND p.aggregate_id = ` + row + `.aggregate_id AND p.seq < ` + row + `.seq
			ORDER BY p.seq LIMIT 1), false)`
}

// TroubledAggregatesSQL is a query for the aggregates of table that have a
// failed or scheduled unpublished event: what the planner estimates for it
// (EXPLAIN, not run) is the blocked-aggregates count once too many events
// exist to probe each (an upper bound in the usual case, where the first such
// event heads its aggregate). table must be a sanitized, schema-qualified
// identifier.
func TroubledAggregatesSQL(table string) string {
	return `SELECT DISTINCT aggregate_type, aggregate_id FROM ` + table + `
		WHERE published_at IS NULL AND (failed_at IS NOT NULL OR available_at > now())`
}

// OldestPublishableSQL is a query for the age in seconds (0 when none) of the
// longest-waiting publishable event of table: ready, and not waiting behind a
// failed or scheduled head of its aggregate (WaitingSQL), so one poison event
// does not make it grow. It walks the ordered claim's index (outbox_claim_idx),
// which holds no failed, scheduled or known-waiting row, so its cost is that of
// a claim's first row, not the size of a storm. table must be a sanitized,
// schema-qualified identifier.
func OldestPublishableSQL(table string) string {
	return `SELECT coalesce((SELECT extract(epoch FROM now() - greatest(c.created_at, c.available_at))::float8
		FROM ` + table + ` c
		WHERE c.published_at IS NULL AND c.failed_at IS NULL AND NOT c.blocked
		  AND c.available_at <= now() AND (c.lease_until IS NULL OR c.lease_until <= now())
		  AND NOT ` + WaitingSQL(table, "c") + `
		ORDER BY c.available_at, c.seq
		LIMIT 1), 0)`
}
