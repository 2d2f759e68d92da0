package inspect

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The states of a RelaySeen beyond the ones a relay writes in its heartbeat
// (running, paused, draining, broker-down, stopping, stopped; relay.Beat*).
const (
	// RelayGone: a heartbeat row not stopped and not written for
	// RelayGoneAfter intervals: the process died, froze, or lost its database.
	RelayGone = "gone"
	// RelayStopped: the relay's last beat said it exited cleanly.
	RelayStopped = "stopped"
	// RelayLeasing: a holder named by live leases that has no heartbeat row (a
	// relay older than migration 010, one without the heartbeat grant, or one
	// run with the heartbeat off). Counted live: it holds leases now.
	RelayLeasing = "leasing"
)

// RelayGoneAfter is how many heartbeat intervals without a beat make a relay gone.
const RelayGoneAfter = 3

// RelaysLimit bounds the heartbeat rows a Snapshot reads (newest beat first).
const RelaysLimit = 50

// RelaySeen is one relay process the outbox knows of, by its holder name
// ("host:pid", relay.Config.Holder): from its heartbeat row in outbox_relay
// (migration 010), from the live leases naming it, or both.
type RelaySeen struct {
	Holder string `json:"holder"`
	// State is what its heartbeat said, RelayGone when that is stale, or
	// RelayLeasing for a holder seen only in leases.
	State string `json:"state"`
	// SeenAge is now() − its last beat (0 for RelayLeasing).
	SeenAge   Age        `json:"seen_age_seconds"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	// Interval is its heartbeat interval.
	Interval  Age    `json:"heartbeat_interval_seconds,omitempty"`
	Version   string `json:"version,omitempty"`
	Ordering  string `json:"ordering,omitempty"`
	BatchSize int    `json:"batch_size,omitempty"`
	// InFlight is the events in its in-flight batches at its last beat, as the
	// relay counted them.
	InFlight int64 `json:"in_flight"`
	// Leases is the live leased rows naming it, counted by the snapshot's pass
	// over unpublished rows; LeasesApprox: the pass did not reach every
	// unpublished row (Snapshot.Partial), so there may be more.
	Leases       int64 `json:"leases"`
	LeasesApprox bool  `json:"leases_approx,omitempty"`
}

// Live reports whether the relay is running as far as the outbox can tell: it
// beat recently (and not "stopped"), or it holds a live lease.
func (r RelaySeen) Live() bool {
	return r.State != RelayGone && r.State != RelayStopped || r.Leases > 0
}

// RelaysLive counts the live relays of s (RelaySeen.Live).
func (s Snapshot) RelaysLive() int {
	n := 0
	for _, r := range s.Relays {
		if r.Live() {
			n++
		}
	}
	return n
}

// NoRelayFor is how long no relay has been live: 0 when one is, else the age
// of the freshest heartbeat. seen is false when no relay was ever seen (no
// heartbeat row, no lease) — or the heartbeats could not be read.
func (s Snapshot) NoRelayFor() (age Age, seen bool) {
	for k, r := range s.Relays {
		if r.Live() {
			return 0, true
		}
		if k == 0 || r.SeenAge < age {
			age = r.SeenAge
		}
	}
	return age, len(s.Relays) > 0
}

// snapRelays reads the heartbeat rows and joins them with the leases the pass
// counted by holder (s.leasesBy). It reads outbox_relay only — a small table
// the relays keep bounded — never outbox_event. A role without SELECT on it (a
// console role set up before 010 and not upgraded) gets the leases' holders and
// RelaysError, not a failed snapshot.
func (i *Inspector) snapRelays(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	seen := map[string]bool{}
	s.Relays = []RelaySeen{}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	rows, err := readRelays(ctx, sp, i.relaysSQL())
	if err != nil {
		_ = sp.Rollback(ctx)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "42501" && pgErr.Code != "42P01") {
			return err
		}
		s.RelaysError = "heartbeats unreadable (" + pgErr.Message + "): relays are seen only by their leases"
	} else if err := sp.Commit(ctx); err != nil {
		return err
	}
	for _, r := range rows {
		r.Leases, r.LeasesApprox = s.leasesBy[r.Holder], s.Partial
		seen[r.Holder] = true
		s.Relays = append(s.Relays, r)
	}
	for h, n := range s.leasesBy {
		if !seen[h] && h != "" {
			s.Relays = append(s.Relays, RelaySeen{Holder: h, State: RelayLeasing, Leases: n, LeasesApprox: s.Partial})
		}
	}
	s.leasesBy = nil
	slices.SortFunc(s.Relays, func(a, b RelaySeen) int {
		// Live first, then the freshest; the holder breaks ties.
		if a.Live() != b.Live() {
			if a.Live() {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.SeenAge, b.SeenAge); c != 0 && !a.Live() {
			return c
		}
		return strings.Compare(a.Holder, b.Holder)
	})
	return nil
}

// relaysSQL reads the heartbeats (sql/relays.sql).
func (i *Inspector) relaysSQL() string {
	return i.q.SQL("relays", map[string]any{"goneAfter": RelayGoneAfter, "limit": RelaysLimit})
}
func readRelays(ctx context.Context, tx pgx.Tx, query string) ([]RelaySeen, error) {
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (RelaySeen, error) {
		var r RelaySeen
		var age float64
		var started time.Time
		var intervalMS int64
		err := row.Scan(&r.Holder, &r.State, &age, &started, &intervalMS, &r.Version, &r.Ordering, &r.BatchSize, &r.InFlight)
		r.SeenAge, r.StartedAt, r.Interval = seconds(age), &started, Age(time.Duration(intervalMS)*time.Millisecond)
		return r, err
	})
}
