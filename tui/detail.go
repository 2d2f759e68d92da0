package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/inspect"
)

// detailModel shows one event: every column, the payload pretty-printed, headers,
// Kafka coordinates and the inboxes that hold it, in a scrollable viewport.
type detailModel struct {
	id      string
	title   string
	loading bool
	vp      viewport.Model
}

type detailMsg struct {
	id      string
	title   string
	content string // sanitized
	err     error
}

func (m *Model) openDetail(id string) tea.Cmd {
	if m.detail.id != id {
		m.detail.vp = viewport.New()
		m.layout()
	}
	m.detail.id, m.detail.loading = id, true
	m.mode = modeDetail
	in, ctx, now := m.opts.Inspector, m.opts.Context, m.opts.Now
	return func() tea.Msg { return loadDetail(ctx, in, now, id) }
}

func loadDetail(ctx context.Context, in *inspect.Inspector, now func() time.Time, id string) detailMsg {
	d, err := in.Detail(ctx, id)
	if errors.Is(err, inspect.ErrNotFound) {
		return detailMsg{id: id, content: "This event is gone: neither the outbox nor the archive holds it."}
	}
	if err != nil {
		return detailMsg{id: id, err: err}
	}
	return detailMsg{id: id, title: Sanitize(d.EventType) + " " + Sanitize(d.EventID), content: detailText(d, now())}
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
		rel := now.Sub(*t)
		when := age(rel) + " ago"
		if rel < 0 {
			when = "in " + age(-rel)
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z") + "  (" + when + ")"
	}
	line("event_id", Sanitize(d.EventID))
	line("state", string(d.State))
	line("seq", fmt.Sprint(d.Seq))
	line("event_type", Sanitize(d.EventType))
	line("aggregate", Sanitize(d.AggregateType)+"/"+Sanitize(d.AggregateID))
	line("topic", Sanitize(d.Topic))
	line("attempts", fmt.Sprint(d.Attempts))
	line("created_at", ts(&d.CreatedAt))
	line("available_at", ts(&d.AvailableAt))
	line("lease_token", Sanitize(d.LeaseToken))
	line("lease_until", ts(d.LeaseUntil))
	if d.LeaseExpired {
		line("lease", "EXPIRED: claimable again")
	}
	line("failed_at", ts(d.FailedAt))
	line("published_at", ts(d.PublishedAt))
	line("archived_at", ts(d.ArchivedAt))
	if d.KafkaTopic != "" || d.KafkaPartition != nil {
		coord := Sanitize(d.KafkaTopic)
		if d.KafkaPartition != nil {
			coord += fmt.Sprintf(" [%d]", *d.KafkaPartition)
		}
		if d.KafkaOffset != nil {
			coord += fmt.Sprintf(" @%d", *d.KafkaOffset)
		}
		line("kafka", coord)
	}
	line("replay_of", Sanitize(d.ReplayOf))
	if d.LastError != "" {
		b.WriteString("\nLAST ERROR\n")
		b.WriteString(indent(SanitizeText(d.LastError)))
	}
	if len(d.Headers) > 0 && string(d.Headers) != "null" {
		b.WriteString("\nHEADERS\n")
		b.WriteString(indent(SanitizeText(pretty(d.Headers))))
	}
	fmt.Fprintf(&b, "\nPAYLOAD (%d bytes)\n", d.PayloadBytes)
	b.WriteString(indent(SanitizeText(pretty(d.Payload))))
	if len(d.Consumed) > 0 {
		b.WriteString("\nINBOXES\n")
		for _, c := range d.Consumed {
			fmt.Fprintf(&b, "  %-30s %s\n", Sanitize(c.Consumer), c.ConsumedAt.UTC().Format("2006-01-02 15:04:05.000Z"))
		}
	}
	if len(d.Replays) > 0 {
		b.WriteString("\nREPLAYED AS\n")
		for _, r := range d.Replays {
			b.WriteString("  " + Sanitize(r) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

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
	d.loading = false
	if msg.err != nil {
		d.vp.SetContent("could not load the event: " + Sanitize(msg.err.Error()))
		return
	}
	d.title = msg.title
	y := d.vp.YOffset()
	d.vp.SetContent(msg.content)
	d.vp.SetYOffset(y)
}

func (d *detailModel) setSize(w, h int) {
	d.vp.SetWidth(w)
	d.vp.SetHeight(max(h-1, 1))
}

func (d *detailModel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Back), key.Matches(msg, k.Detail):
		m.mode = modeNormal
		d.id = ""
	case key.Matches(msg, k.Up):
		d.vp.ScrollUp(1)
	case key.Matches(msg, k.Down):
		d.vp.ScrollDown(1)
	case key.Matches(msg, k.PageUp):
		d.vp.PageUp()
	case key.Matches(msg, k.PageDown):
		d.vp.PageDown()
	case key.Matches(msg, k.Top):
		d.vp.GotoTop()
	case key.Matches(msg, k.Bottom):
		d.vp.GotoBottom()
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
