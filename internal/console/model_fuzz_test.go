package console

import (
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"reflect"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// FuzzModelUpdate drives the root Model as the program would, but with every
// command dropped and the messages those commands produce synthesized instead:
// random keys and window sizes, and load results delivered late, twice, out of
// order, for another event or aggregate than the one on screen, or as errors,
// with hostile text (escapes, control characters, wide runes, long words) in
// every field the database or the broker fills. Nothing may panic, and at
// MinWidth×MinHeight or more no drawn line may be wider than the window nor the
// screen taller.
//
// The input is a program of operations (see fuzzOp); a seed reads as one.
func FuzzModelUpdate(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newFuzzHarness(t, data)
		h.run()
	})
}

// fuzzOp is one step of a fuzz program; the bytes after it are its arguments.
type fuzzOp byte

const (
	opKey      fuzzOp = iota // a key from fuzzKeys
	opRune                   // a typed rune
	opSize                   // a window size
	opLoaded                 // a finished load (loadedMsg)
	opTimeline               // a timeline read (timelineMsg)
	opDetail                 // an event's detail (detailMsg)
	opTrace                  // an event's trace (traceMsg)
	opAudit                  // an audit log read (auditMsg)
	opAction                 // an action's outcome (actionDoneMsg)
	opStatus                 // a status line from a command (statusMsg)
	opLag                    // a consumer lag read (lagLoadedMsg)
	opTick                   // a tick of the current chain
	opLate                   // deliver a message held back earlier
	opAgain                  // deliver a message delivered before again
	opCount
)

// fuzzKeys are every key of the KeyMap and the keys around them.
var fuzzKeys = func() []string {
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	km := reflect.ValueOf(DefaultKeyMap())
	for i := range km.NumField() {
		if b, ok := km.Field(i).Interface().(key.Binding); ok {
			for _, k := range b.Keys() {
				add(k)
			}
		}
	}
	for _, k := range []string{"esc", "enter", "tab", "shift+tab", "up", "down", "left", "right", "home", "end",
		"pgup", "pgdown", "backspace", "delete", "space", "ctrl+u", "ctrl+b", "ctrl+f", "y", "n", "i", "Y", "N"} {
		add(k)
	}
	return out
}()

// fuzzReader reads a program's arguments; past the end every read is zero.
type fuzzReader struct{ b []byte }

func (z *fuzzReader) empty() bool { return len(z.b) == 0 }

func (z *fuzzReader) byte() byte {
	if len(z.b) == 0 {
		return 0
	}
	c := z.b[0]
	z.b = z.b[1:]
	return c
}

// take is the next n bytes (fewer at the end).
func (z *fuzzReader) take(n int) []byte {
	n = min(n, len(z.b))
	b := z.b[:n]
	z.b = z.b[n:]
	return b
}

func (z *fuzzReader) n(k int) int { return int(z.byte()) % k }

func (z *fuzzReader) bit() bool { return z.byte()&1 == 1 }

// num is a non-negative count, now and then a huge one.
func (z *fuzzReader) num() int64 {
	switch c := z.byte(); {
	case c < 200:
		return int64(c)
	case c < 240:
		return int64(c) * 997
	case c < 255:
		return int64(c) * 1_000_003
	}
	return 1 << 53
}

func (z *fuzzReader) dur() time.Duration {
	switch c := z.byte(); {
	case c < 128:
		return time.Duration(c) * 10 * time.Millisecond
	case c < 250:
		return time.Duration(c) * time.Minute
	}
	return 400 * 24 * time.Hour
}

// hostile are pieces of text the database or a broker may hand over.
var hostile = []string{
	"", "boom", "ord-1", "kafka: broker not available", "\x1b[31mred\x1b[0m", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
	"\x1b[2J\x1b[H", "\r\n", "\t", "\x00\x01\x7f", "\u202eevil", "界界界界", "👍🏽👨‍👩‍👧", "e\u0301", "\u200b",
	"1000000000000000000000000", "a b c d e f g h i j", strings.Repeat("x", 300), strings.Repeat("界", 120),
	strings.Repeat("word ", 60), "\xff\xfe", "Bestellung_Ä", `say "no"`, `back\slash`,
}

func (z *fuzzReader) text() string {
	var b strings.Builder
	for range z.n(4) + 1 {
		b.WriteString(hostile[z.n(len(hostile))])
	}
	return b.String()
}

var fuzzIDs = []string{
	"d1000000-0000-4000-8000-000000000001", "d2000000-0000-4000-8000-000000000002",
	"01a23392-0001-7000-8000-0000ab858c44", "01a23392-0001-7000-8000-0000cd12ef34",
}

var fuzzAggregates = [][2]string{{"Order", "ord-1"}, {"Order", "ord-2"}, {"Acc\x1b[31mount", "界界界界界界界界界界界界界界界界界界界界"}}

var fuzzStates = []wire.State{wire.Ready, wire.Scheduled, wire.Leased, wire.Failed, wire.Published, inspect.Archived, wire.Pending}

// offset is a duration either side of zero: two reads, the first less the second.
func (z *fuzzReader) offset() time.Duration {
	later := z.dur()
	return later - z.dur()
}

func (z *fuzzReader) event() inspect.Event {
	at := offlineNow.Add(-z.dur())
	agg := fuzzAggregates[z.n(len(fuzzAggregates))]
	e := inspect.Event{
		EventID: fuzzIDs[z.n(len(fuzzIDs))], Seq: z.num(), State: fuzzStates[z.n(len(fuzzStates))],
		AggregateType: agg[0], AggregateID: agg[1], EventType: z.text(), Topic: z.text(),
		CreatedAt: at, AvailableAt: offlineNow.Add(z.offset()), Attempts: int32(z.num() % 1_000_000),
	}
	if z.bit() {
		e.EventID = z.text()
	}
	switch e.State {
	case wire.Leased:
		until := offlineNow.Add(z.offset())
		e.LeaseUntil, e.LeaseToken, e.LeaseHolder, e.LeaseExpired = &until, z.text(), z.text(), z.bit()
	case wire.Failed:
		e.FailedAt, e.LastError = &at, z.text()
	case wire.Published, inspect.Archived:
		if z.bit() {
			p, o := int32(z.num()%100), z.num()
			e.PublishedAt, e.KafkaTopic, e.KafkaPartition, e.KafkaOffset = &at, z.text(), &p, &o
		}
		if e.State == inspect.Archived {
			e.ArchivedAt = &at
		}
	}
	if z.bit() {
		e.LastError, e.ReplayOf = z.text(), z.text()
	}
	return e
}

func (z *fuzzReader) events(most int) []inspect.Event {
	out := make([]inspect.Event, z.n(most+1))
	for i := range out {
		out[i] = z.event()
	}
	return out
}

func (z *fuzzReader) err() error {
	switch z.n(4) {
	case 2:
		return errors.New(z.text())
	case 3:
		return fmt.Errorf("%w: %s", inspect.ErrNotFound, z.text())
	}
	return nil
}

func (z *fuzzReader) count() inspect.Count { return inspect.Count{Value: z.num(), Estimate: z.bit()} }

func (z *fuzzReader) snapshot() inspect.Snapshot {
	s := inspect.Snapshot{TakenAt: offlineNow.Add(-z.dur()), Schema: z.text(), Partial: z.bit(), FailedGroupsOf: z.num()}
	c := &s.Counts
	c.Ready, c.Waiting, c.Scheduled, c.Leased, c.Failed, c.Skipped = z.num(), z.num(), z.num(), z.num(), z.num(), z.num()
	c.Pending = c.Ready + c.Scheduled
	c.Published, c.Archived = z.count(), z.count()
	c.Approx = inspect.Approx{Ready: z.bit(), Pending: z.bit(), Leased: z.bit(), Failed: z.bit(), Scheduled: z.bit()}
	s.ExpiredLeases = z.num()
	s.OldestPendingAge, s.OldestReadyAge, s.OldestPublishableAge = inspect.Age(z.dur()), inspect.Age(z.dur()), inspect.Age(z.dur())
	s.OldestPublishableApprox = z.bit()
	if z.bit() {
		at := offlineNow.Add(z.dur())
		s.NextScheduledAt = &at
	}
	s.Published = inspect.PublishedRecent{Last1m: z.count(), Last5m: z.count(), Last1h: z.count(), Last10s: z.num(),
		RatePerSecond: float64(z.num()) / 7, CurrentPerSecond: float64(z.num()) / 3}
	if z.bit() {
		n := z.num()
		s.Inserted = &n
	}
	for range z.n(4) {
		s.FailedByType = append(s.FailedByType, inspect.Group{Key: z.text(), Count: z.num()})
		s.FailedByError = append(s.FailedByError, inspect.Group{Key: z.text(), Count: z.num()})
		s.Attempts = append(s.Attempts, inspect.AttemptsBucket{Label: z.text(), Count: z.num()})
		s.ByEventType = append(s.ByEventType, inspect.TypeCounts{EventType: z.text(), Ready: z.num(), Scheduled: z.num(),
			Leased: z.num(), Failed: z.num(), OldestPendingAge: inspect.Age(z.dur())})
		s.Inbox = append(s.Inbox, inspect.Consumer{Name: z.text(), Total: z.count(), Last5m: z.num()})
		s.Health.Tables = append(s.Health.Tables, inspect.TableHealth{Table: z.text(), LiveTuples: z.num(), DeadTuples: z.num(),
			TableBytes: z.num() << 20, IndexBytes: z.num() << 10})
		st := offlineNow.Add(-z.dur())
		s.Relays = append(s.Relays, inspect.RelaySeen{Holder: z.text(), State: z.text(), SeenAge: inspect.Age(z.dur()), StartedAt: &st,
			Interval: inspect.Age(z.dur()), Version: z.text(), Ordering: z.text(), BatchSize: int(z.num()), InFlight: z.num(),
			Leases: z.num(), LeasesApprox: z.bit()})
	}
	s.Blocked = inspect.Blocked{Count: z.num(), Estimate: z.bit()}
	for range z.n(6) {
		agg := fuzzAggregates[z.n(len(fuzzAggregates))]
		s.Blocked.Aggregates = append(s.Blocked.Aggregates, inspect.BlockedAggregate{AggregateType: agg[0], AggregateID: agg[1],
			Waiting: z.num(), Blocker: z.event()})
	}
	if z.bit() {
		s.Health.OldestXmin = &inspect.XminHolder{Kind: z.text(), PID: int32(z.num()), Name: z.text(), State: z.text(),
			XminAge: z.num(), Age: inspect.Age(z.dur()), Query: z.text()}
	}
	// The horizon's holders: every kind, with text from the database to
	// sanitize, hidden or not, past the held bounds or under them.
	kinds := []string{inspect.HolderSession, inspect.HolderWriter, inspect.HolderPrepared, inspect.HolderSlot, inspect.HolderStandby, z.text()}
	for range z.n(4) {
		start := time.Unix(z.num(), 0)
		s.Health.Horizon.Holders = append(s.Health.Horizon.Holders, inspect.XminHolder{Kind: kinds[z.n(len(kinds))],
			PID: int32(z.num()), Name: z.text(), State: z.text(), XminAge: z.num(), Age: inspect.Age(z.dur()), User: z.text(),
			Application: z.text(), Client: z.text(), BackendStart: &start, SlotType: z.text(), Holds: z.text(), Hidden: z.bit()})
	}
	s.Health.Horizon.OutboxDeadRows = z.num()
	if z.bit() {
		s.RelaysError = z.text()
	}
	return s
}

// fuzzRelay is an embedded relay whose status the program sets.
type fuzzRelay struct{ st RelayStatus }

func (r *fuzzRelay) Pause()              { r.st.Paused = true }
func (r *fuzzRelay) Resume()             { r.st.Paused = false }
func (r *fuzzRelay) Status() RelayStatus { return r.st }

type fuzzHarness struct {
	t     *testing.T
	z     fuzzReader
	m     *Model
	relay *fuzzRelay
	// held are messages produced but not delivered yet; sent those delivered.
	held, sent []tea.Msg
	trail      []string
}

func newFuzzHarness(t *testing.T, data []byte) *fuzzHarness {
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	h := &fuzzHarness{t: t, z: fuzzReader{data}, relay: &fuzzRelay{}}
	extras := []Extra{{Key: keyBinding("b", "broker outage"), State: func() string { return "on \x1b[31m界界界" }}}
	h.m = New(Options{Inspector: in, Relay: h.relay, Now: func() time.Time { return offlineNow }, Actor: "fuzz", Extras: extras})
	return h
}

// fuzzSteps bounds a program, so that one input runs in bounded time;
// fuzzArgs is the number of argument bytes of a message.
const (
	fuzzSteps = 256
	fuzzArgs  = 96
)

func (h *fuzzHarness) run() {
	h.deliver(tea.WindowSizeMsg{Width: 80, Height: 24}, "size 80x24")
	for i := 0; i < fuzzSteps && !h.z.empty(); i++ {
		h.step()
	}
}

func (h *fuzzHarness) step() {
	z, m := &h.z, h.m
	op := fuzzOp(z.byte()) % opCount
	var msg tea.Msg
	hold := false
	if op >= opLoaded && op <= opLag {
		// A message's arguments are a fixed number of bytes (zeros past the end),
		// so that a program reads the same after a mutation inside one of them.
		// Their last byte says whether the message is held back for opLate.
		b := z.take(fuzzArgs)
		hold = len(b) == fuzzArgs && b[fuzzArgs-1]%4 == 3
		rest := h.z
		h.z = fuzzReader{b}
		defer func() { h.z = rest }()
	}
	switch op {
	case opKey:
		k := fuzzKeys[z.n(len(fuzzKeys))]
		h.deliver(keyMsg(k), "key "+k)
		return
	case opRune:
		r := []rune(hostile[z.n(len(hostile))] + "q")[0]
		if z.bit() {
			r = rune(z.byte())<<8 | rune(z.byte())
		}
		h.deliver(tea.KeyPressMsg{Code: r, Text: string(r)}, fmt.Sprintf("rune %q", r))
		return
	case opSize:
		sizes := [][2]int{{80, 24}, {79, 24}, {80, 23}, {100, 30}, {120, 40}, {200, 60}, {81, 25}, {40, 10}, {0, 0}, {300, 24}, {80, 100}}
		s := sizes[z.n(len(sizes))]
		if z.bit() {
			s = [2]int{MinWidth + z.n(120), MinHeight + z.n(40)}
		}
		h.deliver(tea.WindowSizeMsg{Width: s[0], Height: s[1]}, fmt.Sprintf("size %dx%d", s[0], s[1]))
		return
	case opLoaded:
		msg = h.loaded()
	case opTimeline:
		msg = h.timeline()
	case opDetail:
		msg = h.detailMsg()
	case opTrace:
		msg = h.trace()
	case opAudit:
		msg = h.auditMsg()
	case opAction:
		msg = h.action()
	case opStatus:
		msg = statusMsg{text: termtext.Sanitize(z.text()), bad: z.bit()}
	case opLag:
		msg = h.lag()
	case opTick:
		h.relay.st = RelayStatus{Paused: z.bit(), BrokerReachable: z.bit(), Published: uint64(z.num()), LastError: z.text(),
			LastErrorAt: offlineNow.Add(-z.dur()), InFlight: int(z.num())}
		h.deliver(tickMsg{gen: m.tickGen}, "tick")
		return
	case opLate:
		if len(h.held) > 0 {
			i := z.n(len(h.held))
			msg := h.held[i]
			h.held = append(h.held[:i], h.held[i+1:]...)
			h.deliver(msg, fmt.Sprintf("late %T", msg))
		}
		return
	case opAgain:
		if len(h.sent) > 0 {
			msg := h.sent[z.n(len(h.sent))]
			h.deliver(msg, fmt.Sprintf("again %T", msg))
		}
		return
	}
	if hold {
		h.held = append(h.held, msg)
		return
	}
	h.deliver(msg, fmt.Sprintf("%T", msg))
}

// deliver hands msg to Update, drops the command it returns (it would read the
// database: the program synthesizes what it would have read) and checks the
// screen.
func (h *fuzzHarness) deliver(msg tea.Msg, what string) {
	h.trail = append(h.trail, what)
	if len(h.trail) > 40 {
		h.trail = h.trail[1:]
	}
	defer func() {
		if r := recover(); r != nil {
			h.t.Fatalf("panic: %v\nafter: %s", r, strings.Join(h.trail, " · "))
		}
	}()
	h.m.Update(msg)
	switch msg.(type) {
	case tea.KeyPressMsg, tea.WindowSizeMsg, tickMsg:
	default:
		h.sent = append(h.sent, msg)
	}
	h.check()
}

func (h *fuzzHarness) check() {
	m := h.m
	screen := m.View().Content
	if m.width < MinWidth || m.height < MinHeight {
		return
	}
	lines := strings.Split(screen, "\n")
	if len(lines) > m.height {
		h.t.Fatalf("%d lines on a %dx%d screen\nafter: %s\n%s", len(lines), m.width, m.height, strings.Join(h.trail, " · "), ansi.Strip(screen))
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > m.width {
			h.t.Fatalf("line %d is %d cells on a %dx%d screen: %q\nafter: %s\n%s", i, w, m.width, m.height, ansi.Strip(l),
				strings.Join(h.trail, " · "), ansi.Strip(screen))
		}
	}
}

// loaded is a load's result for some view; now and then it is for the view,
// sort and filter on screen, as the load just started would be.
func (h *fuzzHarness) loaded() tea.Msg {
	z, m := &h.z, h.m
	v := m.view
	if z.bit() {
		v = viewID(z.n(int(viewArchived) + 1))
	}
	req := loadRequest{view: v, list: listViews[v], want: m.opts.Limit}
	if t := m.tables[v]; t != nil && z.n(4) != 3 {
		req.filter, req.sort, req.desc = m.filters[v], t.sort, t.desc
	}
	msg := loadedMsg{req: req, took: z.dur() / 100}
	if err := z.err(); err != nil {
		msg.err = err
		return msg
	}
	events := z.events(30)
	if req.list != nil {
		for _, e := range events {
			msg.rows = append(msg.rows, newRow(e))
		}
		msg.more, msg.total = z.bit(), z.count()
		if !msg.total.Estimate || msg.total.Value < int64(len(msg.rows)) {
			msg.total.Value = max(msg.total.Value, int64(len(msg.rows)))
		}
	}
	msg.overview = newOverviewVM(z.snapshot(), h.relay, m.opts.Extras)
	return msg
}

// target is the aggregate on screen, or another one.
func (h *fuzzHarness) target() (string, string) {
	if h.z.n(4) != 3 {
		return h.m.aggregate.typ, h.m.aggregate.id
	}
	a := fuzzAggregates[h.z.n(len(fuzzAggregates))]
	return a[0], a[1]
}

func (h *fuzzHarness) timeline() tea.Msg {
	z := &h.z
	typ, id := h.target()
	msg := timelineMsg{typ: typ, id: id, err: z.err()}
	if msg.err != nil {
		return msg
	}
	tl := inspect.Timeline{AggregateType: typ, AggregateID: id, Before: z.num(), After: z.num(), Waiting: z.num()}
	for i, e := range z.events(12) {
		e.Seq = int64(i + 1)
		te := inspect.TimelineEvent{Event: e}
		for range z.n(3) {
			te.Consumed = append(te.Consumed, inspect.Consumption{Consumer: z.text(), ConsumedAt: offlineNow.Add(-z.dur())})
		}
		tl.Events = append(tl.Events, te)
	}
	for range z.n(3) {
		tl.Consumers = append(tl.Consumers, z.text())
	}
	if len(tl.Events) > 0 && z.bit() {
		b := tl.Events[z.n(len(tl.Events))].Event
		tl.Blocker = &b
	} else if z.bit() {
		b := z.event()
		tl.Blocker = &b
	}
	if z.bit() {
		at := offlineNow.Add(-z.dur())
		tl.WaitingSince = &at
	}
	msg.tl = tl
	return msg
}

// eventID is the event on screen (the detail's), or another one.
func (h *fuzzHarness) eventID() string {
	if h.z.n(4) != 3 && h.m.detail.id != "" {
		return h.m.detail.id
	}
	if h.z.bit() {
		if t := h.m.tables[h.m.view]; t != nil {
			if r, ok := t.current(); ok {
				return r.id
			}
		}
	}
	return fuzzIDs[h.z.n(len(fuzzIDs))]
}

func (h *fuzzHarness) eventDetail(id string) inspect.EventDetail {
	z := &h.z
	d := inspect.EventDetail{Event: z.event()}
	d.EventID = id
	d.PayloadBytes = int(z.num())
	d.Payload = []byte(`{"note":` + fmt.Sprintf("%q", z.text()) + `,"n":1000000}`)
	if z.bit() {
		d.Payload = []byte(z.text())
	}
	if z.bit() {
		d.Headers = []byte(`{"h":` + fmt.Sprintf("%q", z.text()) + `}`)
	}
	for range z.n(3) {
		d.Consumed = append(d.Consumed, inspect.Consumption{Consumer: z.text(), ConsumedAt: offlineNow.Add(-z.dur())})
	}
	for range z.n(2) {
		d.Replays = append(d.Replays, z.text())
	}
	return d
}

func (h *fuzzHarness) detailMsg() tea.Msg {
	z := &h.z
	id := h.eventID()
	switch z.n(5) {
	case 3:
		return detailMsg{id: id, err: errors.New(z.text())}
	case 4:
		return detailMsg{id: id, content: "This event is gone: neither the outbox nor the archive holds it."}
	}
	d := h.eventDetail(id)
	return detailMsg{id: id, title: termtext.Sanitize(d.EventType) + " " + termtext.Sanitize(d.EventID), content: detailText(d, offlineNow),
		big: d.PayloadBytes > detailMaxText}
}

func (h *fuzzHarness) trace() tea.Msg {
	z := &h.z
	id := h.eventID()
	if z.n(4) == 3 {
		return traceMsg{id: id, text: "KAFKA RECORD\n  could not trace the event: " + termtext.Sanitize(z.text())}
	}
	tr := inspect.Trace{EventDetail: h.eventDetail(id)}
	for range z.n(3) {
		tr.Audit = append(tr.Audit, inspect.AuditEntry{ID: z.num(), At: offlineNow.Add(-z.dur()), Actor: z.text(), Action: z.text(),
			Rows: int(z.num()), Reason: z.text()})
	}
	withKafka := z.bit()
	if withKafka {
		ts := offlineNow.Add(-z.dur())
		tr.Kafka = &inspect.RecordCheck{Topic: z.text(), Partition: int32(z.num()), Offset: z.num(), Found: z.bit(), Missing: z.text(),
			Key: z.text(), ValueBytes: int(z.num()), Timestamp: &ts, Mismatches: []string{z.text()},
			Headers: []inspect.RecordHeader{{Key: z.text(), Value: z.text()}}}
		if z.bit() {
			tr.Kafka.Err = z.text()
		}
	}
	return traceMsg{id: id, text: traceText(tr, withKafka, offlineNow)}
}

func (h *fuzzHarness) auditMsg() tea.Msg {
	z := &h.z
	text := h.m.audit.text
	if z.n(4) == 3 {
		text = z.text()
	}
	msg := auditMsg{text: text}
	if z.n(5) == 4 {
		msg.err = errors.New(z.text())
		return msg
	}
	for range z.n(8) {
		r := inspect.AuditRecord{AuditEntry: inspect.AuditEntry{ID: z.num(), At: offlineNow.Add(-z.dur()), Actor: z.text(),
			Action: z.text(), Rows: int(z.num()), Reason: z.text()}}
		for range z.n(3) {
			r.EventIDs = append(r.EventIDs, fuzzIDs[z.n(len(fuzzIDs))])
		}
		msg.recs = append(msg.recs, r)
	}
	return msg
}

func (h *fuzzHarness) action() tea.Msg {
	z, m := &h.z, h.m
	var req pendingAction
	if m.confirm != nil && z.bit() {
		req = *m.confirm
	} else {
		acts := []inspect.Action{inspect.Retry, inspect.ResetLease, inspect.Archive, inspect.Park, inspect.Skip, inspect.Replay}
		req = pendingAction{action: acts[z.n(len(acts))], view: viewID(z.n(int(viewArchived) + 1)), from: fuzzStates[z.n(len(fuzzStates))]}
		for range z.n(5) {
			req.ids = append(req.ids, fuzzIDs[z.n(len(fuzzIDs))])
		}
	}
	msg := actionDoneMsg{req: req, newID: z.bit(), result: inspect.Result{Action: req.action, Rows: z.num(), AuditID: z.num()}}
	for range z.n(5) {
		msg.result.EventIDs = append(msg.result.EventIDs, fuzzIDs[z.n(len(fuzzIDs))])
	}
	if z.n(4) == 3 {
		msg.err = errors.New(z.text())
	}
	return msg
}

func (h *fuzzHarness) lag() tea.Msg {
	z := &h.z
	r := consumerlag.Report{TakenAt: offlineNow.Add(-z.dur()), AgeError: z.text()}
	for range z.n(3) {
		r.Topics = append(r.Topics, z.text())
		r.Errors = append(r.Errors, z.text())
	}
	for range z.n(4) {
		age := consumerlag.Seconds(z.dur())
		g := consumerlag.Group{Name: z.text(), State: z.text(), Members: int(z.num()), Lag: z.num(), OldestAge: &age, Error: z.text()}
		for range z.n(3) {
			g.Topics = append(g.Topics, consumerlag.Topic{Topic: z.text(), Lag: z.num(), OldestAge: &age,
				Partitions: []consumerlag.Partition{{Partition: 1, Lag: z.num()}}})
		}
		r.Groups = append(r.Groups, g)
	}
	return lagLoadedMsg{sanitizeReport(r)}
}

// fuzzProgram writes a program: ops and their arguments.
type fuzzProgram []byte

func (p fuzzProgram) key(keys ...string) fuzzProgram {
	for _, k := range keys {
		for i, fk := range fuzzKeys {
			if fk == k {
				p = append(p, byte(opKey), byte(i))
				break
			}
		}
	}
	return p
}

// op writes an operation; a message's arguments are padded to fuzzArgs.
func (p fuzzProgram) op(op fuzzOp, args ...byte) fuzzProgram {
	p = append(append(p, byte(op)), args...)
	if op >= opLoaded && op <= opLag {
		p = append(p, make([]byte, fuzzArgs-len(args))...)
	}
	return p
}

func fuzzSeeds() [][]byte {
	// A one-row list loaded for the view on screen (its first argument bytes:
	// this view, its sort and filter, no delay, no error, one event), then A, esc
	// and the timeline read arriving after esc: a closed view's late result.
	oneRow := []byte{0, 0, 0, 0, 1}
	crash := fuzzProgram(nil).key("4").op(opLoaded, oneRow...).key("A", "esc").op(opTimeline)
	// The same with the read held back (its last argument byte is 3) and
	// delivered after the timeline closed.
	heldTimeline := make([]byte, fuzzArgs)
	heldTimeline[fuzzArgs-1] = 3
	late := fuzzProgram(nil).key("4").op(opLoaded, oneRow...).key("A").op(opTimeline, heldTimeline...).key("esc").op(opLate, 0)
	return [][]byte{
		crash, late,
		fuzzProgram(nil).key("4").op(opLoaded, 0, 0, 0, 0, 3).key("enter").op(opDetail).op(opTrace, 0, 0, 1).key("j", "j", "esc", "j", "enter").op(opAgain, 0),
		fuzzProgram(nil).key("4").op(opLoaded, 0, 0, 0, 0, 3).key("j", "A").op(opTimeline, 0, 0, 5, 4, 3, 6).key("j", "enter", "esc", "s", "esc"),
		fuzzProgram(nil).key("L").op(opAudit, 0, 0, 5, 7).key("/", "q", "enter", "esc", "esc").op(opAgain, 0),
		fuzzProgram(nil).op(opSize, 0, 0).key("2").op(opLoaded, 0, 0, 0, 0, 4).key("space", "r", "y").op(opAction, 1, 1, 2, 3).key("?", "x"),
		fuzzProgram(nil).op(opLoaded, 1, 0, 2).op(opSize, 5, 0).key("tab", "tab", "6").op(opLag, 2, 4, 6, 8).op(opTick, 1, 0, 3),
		fuzzProgram(nil).key("3", "/").op(opRune, 4, 0).op(opRune, 11, 0).key("enter", "5", "v", "o", "O", "G", "g"),
	}
}
