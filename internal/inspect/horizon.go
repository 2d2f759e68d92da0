package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The xmin horizon is the oldest transaction this database must still keep
// rows visible to: vacuum removes no dead row newer than it, in outbox_event and
// in every other table. Whatever holds it back — a long transaction anywhere in
// the database, a session idle in transaction, a writer holding an xid, a
// prepared transaction, a replication slot nobody reads, a standby's
// hot_standby_feedback — makes every table bloat, the outbox's claim among the
// first to feel it (every claim reads through the dead rows of the rows it has
// updated). Horizon names the holders; the defaults below say when the
// horizon counts as held, for status, the console and the alert rule alike.
const (
	// HorizonWarnAfter and HorizonCritAfter are the oldest holder's transaction
	// age past which the horizon is held: WARNING and CRITICAL in status (its
	// --warn-horizon and --crit-horizon), the console's line, and the
	// OutboxtopXminHorizonHeld rule (deploy/prometheus). A pg_dump or a report
	// of a few minutes stays under them.
	HorizonWarnAfter = 5 * time.Minute
	HorizonCritAfter = 30 * time.Minute
	// HorizonHeldXids is the xmin age (transactions) past which a holder with no
	// transaction time of its own — a replication slot, a standby's feedback, or
	// a session whose start this role may not read — holds the horizon.
	HorizonHeldXids = 1_000_000
	// HorizonLimit bounds Horizon.Holders.
	HorizonLimit = 5
)

// The kinds of XminHolder.
const (
	HolderSession  = "session"              // a snapshot only (backend_xmin), no xid
	HolderWriter   = "writer"               // a transaction holding an xid (backend_xid)
	HolderPrepared = "prepared transaction" // pg_prepared_xacts: survives restarts
	HolderSlot     = "replication slot"     // pg_replication_slots.xmin or catalog_xmin
	HolderStandby  = "standby feedback"     // a walsender's backend_xmin: hot_standby_feedback
)

// Horizon is what holds back this database's xmin horizon, read from
// pg_stat_activity (sessions of this database and walsenders),
// pg_prepared_xacts (of this database) and pg_replication_slots: small
// views, whatever the size of the tables. Sessions of other databases of the
// cluster are left out: since PostgreSQL 14 they hold back only the shared
// catalogs, not this database's tables.
type Horizon struct {
	// Holders are the HorizonLimit holders with the oldest xmin, oldest first:
	// Holders[0] is what the horizon waits for.
	Holders []XminHolder `json:"holders"`
	// OutboxDeadRows is n_dead_tup of outbox_event now (pg_stat_user_tables):
	// the dead rows vacuum has not removed, which a held horizon keeps. Not the
	// rows this holder alone keeps: PostgreSQL does not count those.
	OutboxDeadRows int64 `json:"outbox_dead_rows_now"`
}

// XminHolder is one holder of the xmin horizon.
type XminHolder struct {
	// Kind is HolderSession, HolderWriter, HolderPrepared, HolderSlot or
	// HolderStandby.
	Kind string `json:"kind"`
	// PID is the backend's pid (sessions, writers, walsenders).
	PID int32 `json:"pid,omitempty"`
	// Name is the user and application of a session, a prepared transaction's gid, or
	// the slot's name.
	Name string `json:"name"`
	// State is a session's state ("idle in transaction", "active", …); empty
	// when Hidden.
	State string `json:"state,omitempty"`
	// XminAge is age(xmin) in transactions: of the backend's xmin or xid,
	// whichever is older, of a prepared transaction's xid, of a slot's xmin (or
	// catalog_xmin when it has only that).
	XminAge int64 `json:"xmin_age"`
	// Age is how long the transaction has been open (sessions, writers, prepared
	// transactions); 0 for slots and standbys, which have none, and when Hidden.
	Age   Age    `json:"age_seconds"`
	Query string `json:"query,omitempty"`
	// User, Application and Client are the session's usename, application_name
	// and client_addr (a prepared transaction's owner is User).
	User        string `json:"user,omitempty"`
	Application string `json:"application,omitempty"`
	Client      string `json:"client_addr,omitempty"`
	// BackendStart and XactStart identify the backend and its transaction:
	// TerminateBackend ends a pid only while both are still these.
	BackendStart *time.Time `json:"backend_start,omitempty"`
	XactStart    *time.Time `json:"xact_start,omitempty"`
	// SlotType is "physical" or "logical" (slots); Holds is "xmin" or
	// "catalog_xmin": a slot holding only catalog_xmin (a logical slot) holds
	// back the system catalogs' vacuum, not the tables'. SlotActive: a
	// walsender reads the slot.
	SlotType   string `json:"slot_type,omitempty"`
	Holds      string `json:"holds,omitempty"`
	SlotActive *bool  `json:"slot_active,omitempty"`
	// Hidden: pg_stat_activity hides this session's state, start, transaction
	// start, client and query from this role (it is another role's, and this one
	// lacks pg_read_all_stats); its xmin still shows. Age is then unknown, not 0.
	Hidden bool `json:"hidden,omitempty"`
}

// Timed reports whether x has a transaction age to go by (Age): a session,
// writer or prepared transaction whose start this role can read.
func (x XminHolder) Timed() bool {
	return !x.Hidden && (x.Kind == HolderSession || x.Kind == HolderWriter || x.Kind == HolderPrepared)
}

// Backend reports whether x is a backend that TerminateBackend can end: a
// session, a writer or a walsender.
func (x XminHolder) Backend() bool {
	return x.PID != 0 && (x.Kind == HolderSession || x.Kind == HolderWriter || x.Kind == HolderStandby)
}

// HeldAfter reports whether x holds the horizon past after: its transaction is
// older than after, or, without a transaction time (Timed), its xmin is older
// than HorizonHeldXids.
func (x XminHolder) HeldAfter(after time.Duration) bool {
	if x.Timed() {
		return after > 0 && x.Age.Duration() > after
	}
	return x.XminAge > HorizonHeldXids
}

// Held returns the holder that holds the horizon past after (HeldAfter), the
// one with the oldest xmin among them, and whether there is one. A slot that
// holds only catalog_xmin comes last: it holds back the system catalogs, not
// the tables, so a transaction held as long is the one to name.
func (h Horizon) Held(after time.Duration) (XminHolder, bool) {
	for _, catalogOnly := range []bool{false, true} {
		for _, x := range h.Holders {
			if (x.Holds == "catalog_xmin") == catalogOnly && x.HeldAfter(after) {
				return x, true
			}
		}
	}
	return XminHolder{}, false
}

// OldestAge is the longest transaction age among the timed holders (0: none).
func (h Horizon) OldestAge() Age {
	var a Age
	for _, x := range h.Holders {
		if x.Timed() {
			a = max(a, x.Age)
		}
	}
	return a
}

// Oldest is the holder with the oldest xmin, or nil.
func (h Horizon) Oldest() *XminHolder {
	if len(h.Holders) == 0 {
		return nil
	}
	x := h.Holders[0]
	return &x
}

// readHorizon reads the holders and the outbox's dead rows in tx.
func (i *Inspector) readHorizon(ctx context.Context, tx pgx.Tx) (Horizon, error) {
	rows, err := tx.Query(ctx, i.q.SQL("horizon"), HorizonLimit)
	if err != nil {
		return Horizon{}, err
	}
	h := Horizon{}
	h.Holders, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (XminHolder, error) {
		var x XminHolder
		var secs *float64
		err := r.Scan(&x.Kind, &x.PID, &x.Name, &x.State, &x.XminAge, &secs, &x.Query, &x.User, &x.Application,
			&x.Client, &x.BackendStart, &x.XactStart, &x.SlotType, &x.Holds, &x.SlotActive, &x.Hidden)
		if secs != nil && !x.Hidden {
			x.Age = seconds(*secs)
		}
		return x, err
	})
	if err != nil {
		return Horizon{}, err
	}
	if h.Holders == nil {
		h.Holders = []XminHolder{}
	}
	err = tx.QueryRow(ctx, i.q.SQL("dead_rows"), i.outbox).Scan(&h.OutboxDeadRows)
	return h, err
}

// Horizon reads what holds back the xmin horizon, in a read-only transaction
// of its own (the relay's role may: every view it reads is readable by any
// role, with another role's session details hidden without pg_read_all_stats).
func (i *Inspector) Horizon(ctx context.Context) (Horizon, error) {
	tx, err := i.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return Horizon{}, fmt.Errorf("horizon: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	h, err := i.readHorizon(ctx, tx)
	if err != nil {
		return Horizon{}, fmt.Errorf("horizon: %w", err)
	}
	return h, nil
}

// snapHorizon is the Snapshot's step: Health.Horizon and its oldest holder.
func (i *Inspector) snapHorizon(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	h, err := i.readHorizon(ctx, tx)
	if err != nil {
		return err
	}
	s.Health.Horizon = h
	s.Health.OldestXmin = h.Oldest()
	return nil
}
