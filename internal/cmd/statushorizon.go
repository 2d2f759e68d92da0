package cmd

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"strings"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// printHorizon is status's report of the xmin horizon: whether it is held (past
// after: --warn-horizon, inspect.HorizonWarnAfter by default), by whom, then every
// holder read, oldest xmin first. The holder slows the vacuum of every table in
// the database, not only the outbox's. Every text from the database is
// sanitized; what pg_stat_activity hides from this role is said to be hidden.
func printHorizon(w io.Writer, h inspect.Horizon, after time.Duration) {
	if len(h.Holders) == 0 {
		fmt.Fprintln(w, "xmin horizon: nothing holds it back besides this check")
		return
	}
	if x, held := h.Held(after); held {
		what := "vacuum of every table in the database waits for it"
		if x.Holds == "catalog_xmin" {
			what = "vacuum of the system catalogs waits for it"
		}
		fmt.Fprintf(w, "xmin horizon HELD by %s; %d dead rows in outbox_event now — %s\n", holderText(x), h.OutboxDeadRows, what)
	} else {
		fmt.Fprintf(w, "xmin horizon: not held (oldest transaction %s, under %s); %d dead rows in outbox_event now\n",
			h.OldestAge(), after, h.OutboxDeadRows)
	}
	fmt.Fprintln(w, "holders of the xmin horizon, oldest xmin first:")
	for _, x := range h.Holders {
		fmt.Fprintf(w, "  %s\n", holderText(x))
		if q := strings.TrimSpace(x.Query); q != "" && !x.Hidden {
			fmt.Fprintf(w, "    query: %s\n", short(termtext.Sanitize(termtext.OneLine(q)), 100))
		}
	}
	if x, held := h.Held(after); held {
		fmt.Fprintf(w, "to end it: %s\n", endHint(x))
	}
}

// holderText is one holder on one line: kind, who, state, ages.
func holderText(x inspect.XminHolder) string {
	var b strings.Builder
	clean := func(s string) string { return short(termtext.Sanitize(s), 40) }
	hidden := func(s string) string {
		if x.Hidden {
			return "hidden"
		}
		return s
	}
	switch x.Kind {
	case inspect.HolderSlot:
		active := "inactive: nobody reads it"
		if x.SlotActive != nil && *x.SlotActive {
			active = "active"
		}
		fmt.Fprintf(&b, "replication slot %s (%s, %s, %s)", clean(x.Name), x.SlotType, x.Holds, active)
		fmt.Fprintf(&b, ", xmin %d transactions old", x.XminAge)
		if x.Holds == "catalog_xmin" {
			b.WriteString(": holds back the system catalogs' vacuum, not the tables'")
		}
		return b.String()
	case inspect.HolderPrepared:
		fmt.Fprintf(&b, "prepared transaction %s (owner %s), open %s, xmin %d transactions old", clean(x.Name), clean(x.User), x.Age, x.XminAge)
		return b.String()
	}
	state := clean(x.State)
	if x.Hidden {
		state = "state hidden"
	}
	fmt.Fprintf(&b, "%s pid %d user %s application %s client %s (%s)", x.Kind, x.PID, clean(x.User),
		clean(orDash(x.Application)), hidden(orDash(x.Client)), state)
	if x.Kind != inspect.HolderStandby {
		fmt.Fprintf(&b, ", open %s", hidden(x.Age.String()))
	}
	fmt.Fprintf(&b, ", xmin %d transactions old", x.XminAge)
	if x.Hidden {
		b.WriteString(" (details hidden from this role: pg_read_all_stats)")
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// endHint says how to end a holder: the command for a backend, the statement
// for a prepared transaction or a slot.
func endHint(x inspect.XminHolder) string {
	switch x.Kind {
	case inspect.HolderPrepared:
		return "ROLLBACK PREPARED (or COMMIT PREPARED) " + quoteLiteral(termtext.Sanitize(x.Name)) + " as its owner or a superuser"
	case inspect.HolderSlot:
		if x.SlotActive != nil && *x.SlotActive && x.Holds == "xmin" {
			// A standby reads the slot: its hot_standby_feedback sets the xmin.
			return "the standby reading slot " + quoteLiteral(termtext.Sanitize(x.Name)) + " sends this xmin (hot_standby_feedback): end the long query there, or set hot_standby_feedback off"
		}
		return "SELECT pg_drop_replication_slot(" + quoteLiteral(termtext.Sanitize(x.Name)) + ") once nothing needs it (or bring its reader back)"
	case inspect.HolderStandby:
		return fmt.Sprintf("end the long query on the standby %s, or set hot_standby_feedback off there; outboxtop terminate-backend --pid %d only makes it reconnect and send its feedback again",
			short(termtext.Sanitize(x.Application), 40), x.PID)
	}
	return fmt.Sprintf("outboxtop terminate-backend --pid %d (or the console's T)", x.PID)
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
