package console

import (
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// viewID names the six views, in tab order.
type viewID int

const (
	viewOverview viewID = iota
	viewPending
	viewLeased
	viewFailed
	viewPublished
	viewInbox
	viewCount
)

// viewArchived is tab 5's other list: a key toggles Published ⇄ Archived there (a
// seventh tab would not fit 80 columns).
const viewArchived = viewCount

// tab is the tab a view belongs to.
func (v viewID) tab() viewID {
	if v == viewArchived {
		return viewPublished
	}
	return v
}

// listView describes a view that lists events.
type listView struct {
	title   string
	state   wire.State
	sorts   []inspect.Sort // the first is the default
	desc    bool           // default direction
	actions []inspect.Action
	columns []column
}

var listViews = map[viewID]*listView{
	viewPending: {
		title: "Pending", state: wire.Pending,
		// The relay's order first: it is also the one an index serves when a
		// million failed rows sit in the available_at index.
		sorts:   []inspect.Sort{inspect.SortSeq, inspect.SortAvailableAt, inspect.SortCreatedAt, inspect.SortAttempts},
		actions: []inspect.Action{inspect.Retry, inspect.Park, inspect.Skip},
		columns: []column{colID, colType, colAggregate, colState, colNext, colAttempts, colAge, colError},
	},
	viewLeased: {
		title: "Leased", state: wire.Leased,
		sorts:   []inspect.Sort{inspect.SortLeaseUntil, inspect.SortCreatedAt, inspect.SortAttempts, inspect.SortSeq},
		actions: []inspect.Action{inspect.ResetLease, inspect.Park},
		columns: []column{colID, colType, colAggregate, colExpires, colHolder, colAttempts, colAge},
	},
	viewFailed: {
		title: "Failed", state: wire.Failed, desc: true,
		sorts:   []inspect.Sort{inspect.SortFailedAt, inspect.SortCreatedAt, inspect.SortAttempts, inspect.SortSeq},
		actions: []inspect.Action{inspect.Retry, inspect.Skip},
		columns: []column{colID, colType, colAggregate, colAttempts, colFailed, colError},
	},
	viewPublished: {
		title: "Published", state: wire.Published, desc: true,
		sorts:   []inspect.Sort{inspect.SortPublishedAt, inspect.SortCreatedAt, inspect.SortSeq},
		actions: []inspect.Action{inspect.Archive, inspect.Replay},
		columns: []column{colID, colType, colAggregate, colTopic, colPartition, colOffset, colPublished},
	},
	viewArchived: {
		title: "Archived", state: inspect.Archived, desc: true,
		sorts:   []inspect.Sort{inspect.SortArchivedAt, inspect.SortPublishedAt, inspect.SortCreatedAt, inspect.SortSeq},
		actions: []inspect.Action{inspect.Replay},
		columns: []column{colID, colType, colAggregate, colPublishedOrSkipped, colArchived, colError},
	},
}

var viewTitles = [viewCount]string{"Overview", "Pending", "Leased", "Failed", "Published", "Consumers"}

// viewShortTitles replace the titles of the tabs not open when the tabs would
// not fit otherwise (empty: the title is short already).
var viewShortTitles = [viewCount]string{viewOverview: "Over", viewPublished: "Pub", viewInbox: "Cons"}

// row is one event as the view model holds it: every text field sanitized once,
// here, when it enters.
type row struct {
	id, short     string
	seq           int64
	eventType     string
	aggregate     string // type/id
	state         wire.State
	attempts      int32
	createdAt     time.Time
	availableAt   time.Time
	leaseUntil    *time.Time
	leaseExpired  bool
	holder        string
	failedAt      *time.Time
	publishedAt   *time.Time
	topic         string
	partition     *int32
	offset        *int64
	lastError     string
	payloadBytes  int
	aggregateType string
	aggregateID   string
	// rawType and rawID are the aggregate as stored, never drawn: the aggregate
	// timeline's query arguments.
	rawType, rawID string
	// archivedAt is set for rows of the archive; replayOf names the event a
	// replay came from.
	archivedAt *time.Time
	replayOf   string
	// behind is the seq of the failed or scheduled head a ready row waits
	// behind (markWaiting), 0 when it waits for nothing.
	behind int64
}

func newRow(e inspect.Event) row {
	id := termtext.Sanitize(e.EventID)
	return row{
		id:            id,
		short:         shortID(id),
		seq:           e.Seq,
		eventType:     termtext.Sanitize(e.EventType),
		aggregate:     termtext.Sanitize(e.AggregateType) + "/" + termtext.Sanitize(e.AggregateID),
		aggregateType: termtext.Sanitize(e.AggregateType),
		aggregateID:   termtext.Sanitize(e.AggregateID),
		rawType:       e.AggregateType,
		rawID:         e.AggregateID,
		state:         e.State,
		attempts:      e.Attempts,
		createdAt:     e.CreatedAt,
		availableAt:   e.AvailableAt,
		leaseUntil:    e.LeaseUntil,
		leaseExpired:  e.LeaseExpired,
		holder:        holderName(e),
		failedAt:      e.FailedAt,
		publishedAt:   e.PublishedAt,
		topic:         termtext.Sanitize(e.KafkaTopic),
		partition:     e.KafkaPartition,
		offset:        e.KafkaOffset,
		lastError:     termtext.Sanitize(e.LastError),
		payloadBytes:  e.PayloadBytes,
		archivedAt:    e.ArchivedAt,
		replayOf:      termtext.Sanitize(e.ReplayOf),
	}
}

// holderName is the relay a leased row names (lease_holder, "host:pid"); a row
// claimed by a relay older than migration 009 names none, and shows its batch's
// lease token instead, as before.
func holderName(e inspect.Event) string {
	if e.LeaseHolder != "" {
		return termtext.Sanitize(e.LeaseHolder)
	}
	if e.LeaseToken != "" {
		return "token " + shortID(termtext.Sanitize(e.LeaseToken))
	}
	return ""
}

// fitHolder fits a relay's "host:pid" into w cells keeping what tells relays
// apart: the pid stays, the host's domain goes first (not an IP address's), then
// the middle of its name (pods differ at the end of theirs, hosts often at the
// start).
func fitHolder(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	host, pid := s, ""
	if i := strings.LastIndexByte(s, ':'); i > 0 {
		host, pid = s[:i], s[i:]
	}
	if i := strings.IndexByte(host, '.'); i > 0 && strings.Trim(host, "0123456789.") != "" {
		host = host[:i]
	}
	room := w - ansi.StringWidth(pid)
	if room < 5 {
		return fitEnd(s, w)
	}
	if n := ansi.StringWidth(host); n > room {
		head := (room - 1) / 2
		host = ansi.Truncate(host, head, "") + "…" + ansi.TruncateLeft(host, n-(room-1-head), "")
	}
	return host + pid
}

// shortID is the part of an id that tells events apart. A UUIDv7 begins with its
// millisecond timestamp, the same for every event of a batch, and ends in random
// bits: its last 8 hex digits. Other ids: the first 8. A filter's id: term accepts
// either (inspect.Filter.IDPart matches the start or the end).
func shortID(id string) string {
	if len(id) == 36 && id[14] == '7' && id[8] == '-' {
		return id[28:]
	}
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// column is one table column: a header, a width (0: shares the rest) and how a
// row fills it at a given moment (countdowns move with the clock).
type column struct {
	title string
	width int
	// maxWidth caps a shared column (0: none): the room it would waste goes to the
	// columns without a cap (LAST ERROR, TOPIC).
	maxWidth int
	// keepEnd cuts a value that does not fit at its start: aggregates differ at
	// their end (ord-480 … ord-499).
	keepEnd bool
	// cut fits a value that does not fit (nil: fit, or fitEnd with keepEnd).
	cut   func(s string, w int) string
	right bool
	cell  func(r row, now time.Time) string
}

var (
	colID        = column{title: "ID", width: 8, cell: func(r row, _ time.Time) string { return r.short }}
	colType      = column{title: "TYPE", maxWidth: 28, cell: func(r row, _ time.Time) string { return r.eventType }}
	colAggregate = column{title: "AGGREGATE", maxWidth: 32, keepEnd: true, cell: func(r row, _ time.Time) string { return r.aggregate }}
	colState     = column{title: "STATE", width: 7, cell: func(r row, _ time.Time) string {
		switch {
		case r.leaseExpired:
			return "expired" // a lease ran out: claimable again
		case r.state == wire.Scheduled:
			return "sched"
		case r.behind != 0:
			return "waiting" // ready, behind a failed or scheduled head
		}
		return string(r.state)
	}}
	colNext = column{title: "NEXT", width: 9, right: true, cell: func(r row, now time.Time) string {
		if r.behind != 0 {
			return "blocked"
		}
		if !r.availableAt.After(now) {
			return "now"
		}
		return "in " + inspect.Until(r.availableAt, now)
	}}
	colAttempts = column{title: "ATT", width: 3, right: true, cell: func(r row, _ time.Time) string { return strconv.Itoa(int(r.attempts)) }}
	colAge      = column{title: "AGE", width: 6, right: true, cell: func(r row, now time.Time) string { return inspect.Ago(r.createdAt, now) }}
	colError    = column{title: "LAST ERROR", cell: func(r row, _ time.Time) string { return r.lastError }}
	colExpires  = column{title: "EXPIRES", width: 8, right: true, cell: func(r row, now time.Time) string {
		if r.leaseUntil == nil {
			return ""
		}
		if !r.leaseUntil.After(now) {
			return "EXPIRED"
		}
		return "in " + inspect.Until(*r.leaseUntil, now)
	}}
	colHolder    = column{title: "HOLDER", maxWidth: 24, cut: fitHolder, cell: func(r row, _ time.Time) string { return r.holder }}
	colFailed    = column{title: "FAILED", width: 6, right: true, cell: func(r row, now time.Time) string { return ago(r.failedAt, now) }}
	colTopic     = column{title: "TOPIC", cell: func(r row, _ time.Time) string { return r.topic }}
	colPartition = column{title: "PART", width: 4, right: true, cell: func(r row, _ time.Time) string {
		if r.partition == nil {
			return ""
		}
		return strconv.Itoa(int(*r.partition))
	}}
	colOffset = column{title: "OFFSET", width: 8, right: true, cell: func(r row, _ time.Time) string {
		if r.offset == nil {
			return ""
		}
		return strconv.FormatInt(*r.offset, 10)
	}}
	colPublished = column{title: "PUBLISHED", width: 9, right: true, cell: func(r row, now time.Time) string { return ago(r.publishedAt, now) }}
	colArchived  = column{title: "ARCHIVED", width: 8, right: true, cell: func(r row, now time.Time) string { return ago(r.archivedAt, now) }}
	// colPublishedOrSkipped: an archived event was published (archive) or never
	// was (skip, or a correction replaced it).
	colPublishedOrSkipped = column{title: "PUBLISHED", width: 9, right: true, cell: func(r row, now time.Time) string {
		if r.publishedAt == nil {
			return inspect.UnpublishedLabel(r.lastError)
		}
		return ago(r.publishedAt, now)
	}}
)

func ago(t *time.Time, now time.Time) string {
	if t == nil {
		return ""
	}
	return inspect.Ago(*t, now)
}

// age is a compact duration: 45s, 3m05s, 2h10m, 3d04h (inspect.Compact).
// Negative durations (clock skew between this host and the database) read as
// 0s. A span between two times is inspect.Ago's or inspect.Until's: those go on
// in years where a Duration overflows.
func age(d time.Duration) string { return inspect.Compact(d) }
