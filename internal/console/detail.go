package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// detailModel shows one event: every column, the payload pretty-printed, headers,
// Kafka coordinates and the inboxes that hold it, in a scrollable viewport whose
// long lines wrap. It is read again with every refresh, so ages and state move.
type detailModel struct {
	id      string
	title   string
	loading bool
	vp      viewport.Model
	// big: the event's payload is past what the view shows; it is read again every
	// 10 s rather than every refresh (megabytes a second for a poison event).
	big    bool
	readAt time.Time
	// content is the row as last read; trace the Kafka record and the audit rows,
	// read once when the event is opened (a fetch from Kafka per refresh would be
	// a consumer per viewer per second).
	content string
	trace   string
	// failed is the text shown instead of the row when it could not be read.
	failed string
	// wrappedAt is the width the viewport's text was wrapped for.
	wrappedAt int
}

type detailMsg struct {
	id      string
	title   string
	content string // sanitized
	big     bool
	err     error
}

// refreshDetail reads the open event again (nil when none is open or a read runs).
func (m *Model) refreshDetail() tea.Cmd {
	if m.mode != modeDetail || m.detail.id == "" || m.detail.loading {
		return nil
	}
	if m.detail.big && m.now().Sub(m.detail.readAt) < 10*time.Second {
		return nil
	}
	return m.openDetail(m.detail.id)
}

func (m *Model) openDetail(id string) tea.Cmd {
	var trace tea.Cmd
	if m.detail.id != id {
		m.detail.vp = viewport.New()
		// Wrapped, not cut: a long error or payload string is read whole.
		m.detail.vp.SoftWrap = true
		m.detail.content, m.detail.trace = "", traceLoading
		m.layout()
		in, ctx, now, kafka := m.opts.Inspector, m.opts.Context, m.opts.Now, m.opts.Kafka
		trace = func() tea.Msg { return loadTrace(ctx, in, kafka, now, id) }
	}
	m.detail.id, m.detail.loading, m.detail.readAt = id, true, m.now()
	m.mode = modeDetail
	in, ctx, now := m.opts.Inspector, m.opts.Context, m.opts.Now
	return tea.Batch(func() tea.Msg { return loadDetail(ctx, in, now, id) }, trace)
}

func loadDetail(ctx context.Context, in *inspect.Inspector, now func() time.Time, id string) detailMsg {
	d, err := in.Detail(ctx, id)
	if errors.Is(err, inspect.ErrNotFound) {
		return detailMsg{id: id, content: "This event is gone: neither the outbox nor the archive holds it."}
	}
	if err != nil {
		return detailMsg{id: id, err: err}
	}
	return detailMsg{id: id, title: termtext.Sanitize(d.EventType) + " " + termtext.Sanitize(d.EventID), content: detailText(d, now()),
		big: d.PayloadBytes > detailMaxText}
}

// detailText lays out an event. Every piece of event data passes through Sanitize
// or SanitizeText here.
func detailText(d inspect.EventDetail, now time.Time) string {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-16s %s\n", k, v)
		}
	}
	ts := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return inspect.DisplayTime(*t) + "  (" + inspect.Relative(*t, now) + ")"
	}
	line("event_id", termtext.Sanitize(d.EventID))
	line("state", string(d.State))
	line("seq", fmt.Sprint(d.Seq))
	line("event_type", termtext.Sanitize(d.EventType))
	line("aggregate", termtext.Sanitize(d.AggregateType)+"/"+termtext.Sanitize(d.AggregateID))
	line("topic", termtext.Sanitize(d.Topic))
	// The relay shares the attempts line: at 80×24 a failed event's payload
	// heading must stay on the first screen.
	attempts := fmt.Sprint(d.Attempts)
	if d.LeaseHolder != "" {
		attempts += " · " + holderLabel(d.Event) + " " + termtext.Sanitize(d.LeaseHolder)
	}
	line("attempts", attempts)
	line("created_at", ts(&d.CreatedAt))
	line("available_at", ts(&d.AvailableAt))
	line("lease_token", termtext.Sanitize(d.LeaseToken))
	line("lease_until", ts(d.LeaseUntil))
	if d.LeaseExpired {
		line("lease", "EXPIRED: claimable again")
	}
	line("failed_at", ts(d.FailedAt))
	line("published_at", ts(d.PublishedAt))
	line("archived_at", ts(d.ArchivedAt))
	if d.KafkaTopic != "" || d.KafkaPartition != nil {
		coord := termtext.Sanitize(d.KafkaTopic)
		if d.KafkaPartition != nil {
			coord += fmt.Sprintf(" [%d]", *d.KafkaPartition)
		}
		if d.KafkaOffset != nil {
			coord += fmt.Sprintf(" @%d", *d.KafkaOffset)
		}
		line("kafka", coord)
	}
	line("replay_of", termtext.Sanitize(d.ReplayOf))
	line("correction_of", termtext.Sanitize(d.CorrectionOf))
	if d.LastError != "" {
		b.WriteString("\nLAST ERROR\n")
		b.WriteString(indent(bounded(termtext.SanitizeText(d.LastError))))
	}
	b.WriteString(historyText(d, now))
	if len(d.Headers) > 0 && string(d.Headers) != "null" {
		b.WriteString("\nHEADERS\n")
		b.WriteString(indent(bounded(termtext.SanitizeText(pretty(d.Headers)))))
	}
	// The payload's one size, as every view shows it (inspect.Event.PayloadBytes);
	// the pretty print below is longer, and where it is cut says no other.
	fmt.Fprintf(&b, "\nPAYLOAD (%s)\n", payloadSize(d.PayloadBytes))
	b.WriteString(indent(boundedPayload(termtext.SanitizeText(pretty(d.Payload)))))
	// Always, as outboxtop trace does: that no inbox holds a failed or pending
	// event is part of what its detail says.
	b.WriteString("\nINBOXES\n")
	if len(d.Consumed) == 0 {
		b.WriteString("  none applied it\n")
	}
	for _, c := range d.Consumed {
		fmt.Fprintf(&b, "  %-30s %s\n", termtext.Sanitize(c.Consumer), inspect.DisplayTime(c.ConsumedAt))
	}
	if len(d.CorrectedAs) > 0 {
		b.WriteString("\nCORRECTED AS\n")
		for _, c := range d.CorrectedAs {
			b.WriteString("  " + termtext.Sanitize(c) + "\n")
		}
	}
	if len(d.Replays) > 0 {
		b.WriteString("\nREPLAYED AS\n")
		for _, r := range d.Replays {
			b.WriteString("  " + termtext.Sanitize(r) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// historyText is the event's timeline: every try that did not end published
// and every operator action on it, oldest first, one entry a line (wrapped by
// the view), each with its time; nothing when there is none, so that an
// event that never went wrong keeps its payload on the first screen.
func historyText(d inspect.EventDetail, now time.Time) string {
	items := d.Timeline()
	if len(items) == 0 && d.HistoryError == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nHISTORY (%d)\n", len(items))
	if d.HistoryError != "" {
		b.WriteString("  " + termtext.Sanitize(d.HistoryError) + "\n")
	}
	for _, h := range items {
		fmt.Fprintf(&b, "  %s %8s ago  %s\n", h.At.UTC().Format("15:04:05.000"), inspect.Ago(h.At, now),
			bounded(termtext.OneLine(termtext.Sanitize(h.What(historyErrorRunes)))))
	}
	return b.String()
}

// historyErrorRunes bounds a try's error in the detail's history: the whole
// of the last one is under LAST ERROR, and every one is in outboxtop trace.
const historyErrorRunes = 60

// holderLabel names what lease_holder means for e: the relay holding its lease,
// the one that published it, or the last one that claimed it.
func holderLabel(e inspect.Event) string {
	switch {
	case e.State == wire.Leased:
		return "holder"
	case e.PublishedAt != nil:
		return "published by"
	}
	return "last relay"
}

// Bounds on the text the detail view wraps: wrapping measures every line on each
// draw, and a poison event's payload can be megabytes on one line.
const (
	detailMaxLine = 4096
	detailMaxText = 64 << 10
)

// bounded cuts lines past detailMaxLine bytes and the text past detailMaxText, and
// says so where it cut, in bytes of s.
func bounded(s string) string {
	return cutText(s, func(more int) string { return fmt.Sprintf(" … (line cut: %d more bytes)", more) },
		func(total int) string { return fmt.Sprintf("\n… (cut: %d of %d bytes shown)", detailMaxText, total) })
}

// boundedPayload is bounded for a payload's pretty print, whose marks count no
// bytes: the print is longer than the payload, whose size (payloadSize) is the
// one the detail gives.
func boundedPayload(s string) string {
	return cutText(s, func(int) string { return " … (line cut)" },
		func(int) string { return "\n… (cut: the rest of the payload is not shown)" })
}

// cutText cuts s as bounded does, with lineMark(bytes left out of the line) and
// textMark(len(s)) where it cuts.
func cutText(s string, lineMark, textMark func(int) string) string {
	total := len(s)
	cut := false
	if len(s) > detailMaxText {
		s, cut = s[:detailMaxText], true
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > detailMaxLine {
			lines[i] = strings.ToValidUTF8(l[:detailMaxLine], "") + lineMark(len(l)-detailMaxLine)
		}
	}
	s = strings.Join(lines, "\n")
	if cut {
		s = strings.ToValidUTF8(s, "") + textMark(total)
	}
	return s
}

// payloadSize is a payload's size as every view of the console says it:
// inspect.Event.PayloadBytes, the bytes of its JSON text, what the relay puts
// in the record's value.
func payloadSize(n int) string { return fmt.Sprintf("%d bytes as JSON text", n) }

func pretty(raw json.RawMessage) string {
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return string(raw)
	}
	return out.String()
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

func (d *detailModel) set(msg detailMsg) {
	if msg.id != d.id {
		return // the operator moved on
	}
	d.loading, d.big = false, msg.big
	d.failed = ""
	if msg.err != nil {
		d.failed = "could not load the event: " + termtext.Sanitize(msg.err.Error())
		d.show()
		return
	}
	d.title = msg.title
	d.content = msg.content
	d.show()
}

// show puts the row and the trace in the viewport, where the reader left it,
// wrapped to its width.
func (d *detailModel) show() {
	text := d.content + "\n\n" + d.trace
	if d.failed != "" {
		text = d.failed
	}
	y := d.vp.YOffset()
	d.wrappedAt = d.vp.Width()
	d.vp.SetContent(wrapWords(text, d.wrappedAt))
	d.vp.SetYOffset(y)
}

func (d *detailModel) setSize(w, h int) {
	d.vp.SetWidth(w)
	d.vp.SetHeight(max(h-1, 1))
	if w != d.wrappedAt && d.id != "" {
		d.show()
	}
}

// wrapWords fits each line of s into w cells, breaking it at spaces and cutting
// a word only when it is wider than a line by itself: the viewport's own wrap
// cuts at the last cell, through "1000000" as through anything (and a hyphen is
// no place to break "--kafka-max-message-bytes"). A wrapped line's continuation
// keeps its indent.
func wrapWords(s string, w int) string {
	if w <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if ansi.StringWidth(l) <= w {
			continue
		}
		body := strings.TrimLeft(l, " ")
		ind := l[:len(l)-len(body)]
		if len(ind) > w/4 {
			ind, body = "", l
		}
		wrapped := wrapLine(body, w-len(ind))
		for j := range wrapped {
			wrapped[j] = ind + wrapped[j]
		}
		lines[i] = strings.Join(wrapped, "\n")
	}
	return strings.Join(lines, "\n")
}

// wrapLine breaks one line of plain text into lines of at most w cells.
func wrapLine(s string, w int) []string {
	var out []string
	cur, curW := "", 0
	flush := func() {
		out = append(out, strings.TrimRight(cur, " "))
		cur, curW = "", 0
	}
	for i, word := range strings.Split(s, " ") {
		ww := ansi.StringWidth(word)
		switch {
		case i == 0:
		case curW+1+ww <= w:
			cur, curW = cur+" ", curW+1
		default:
			flush()
		}
		if ww > w-curW {
			// Wider than what is left of an empty line: cut, the last piece
			// begins the next line.
			pieces := strings.Split(ansi.Hardwrap(word, w, true), "\n")
			out = append(out, pieces[:len(pieces)-1]...)
			word, ww = pieces[len(pieces)-1], ansi.StringWidth(pieces[len(pieces)-1])
		}
		cur, curW = cur+word, curW+ww
	}
	if cur != "" || len(out) == 0 {
		flush()
	}
	return out
}

func (d *detailModel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Back), key.Matches(msg, k.Detail):
		m.mode, m.detailFrom = m.detailFrom, modeNormal
		d.id = ""
		if m.mode == modeAggregate {
			return m.loadAggregate()
		}
	default:
		k.scroll(&d.vp, msg)
	}
	return nil
}

func (d *detailModel) view(st styles, w int) string {
	title := "EVENT " + d.title
	if d.loading && d.title == "" {
		title = "EVENT (loading…)"
	}
	pct := fmt.Sprintf(" %3.0f%% ", d.vp.ScrollPercent()*100)
	return st.section.Render(fit(title, w-len(pct), false)) + st.dim.Render(pct) + "\n" + d.vp.View()
}

// scroll moves a viewport by the movement keys (up, down, page, top, bottom); it
// reports whether msg was one of them.
func (k KeyMap) scroll(vp *viewport.Model, msg tea.KeyPressMsg) bool {
	switch {
	case key.Matches(msg, k.Up):
		vp.ScrollUp(1)
	case key.Matches(msg, k.Down):
		vp.ScrollDown(1)
	case key.Matches(msg, k.PageUp):
		vp.PageUp()
	case key.Matches(msg, k.PageDown):
		vp.PageDown()
	case key.Matches(msg, k.Top):
		vp.GotoTop()
	case key.Matches(msg, k.Bottom):
		vp.GotoBottom()
	default:
		return false
	}
	return true
}
