package console

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// fleetBundle is the fleet console over three outboxes: "orders" healthy (one
// event just added), "billing" in a poison storm (40 failed events, each
// blocking its aggregate with one event behind it), "search" unreachable.
type fleetBundle struct {
	t      *testing.T
	m      *FleetModel
	poller *fleet.Poller
	opened []string
}

// steadyRows are the poller's rows without what moves between runs (ages below
// a minute, rates, timings), so golden files hold still.
type steadyRows struct{ p *fleet.Poller }

func (s steadyRows) Rows() []fleet.Row {
	rows := s.p.Rows()
	for k := range rows {
		r := &rows[k]
		r.OldestPublishableAge = inspect.Age(r.OldestPublishableAge.Duration().Truncate(time.Minute))
		r.RateIn, r.RateOut, r.Took = nil, 0, 0
	}
	return rows
}

func setupFleet(t *testing.T) *fleetBundle {
	t.Helper()
	ctx := context.Background()
	orders, ordersDSN := testenv.Pool(t)
	billing, billingDSN := testenv.Pool(t)
	if _, err := orders.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		VALUES (gen_random_uuid(), 'order', '1', 'OrderPlaced', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := billing.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'invoice', g::text, 'InvoiceIssued', '{}', now() - interval '20 minutes', 5, now(), 'MESSAGE_TOO_LARGE'
		FROM generate_series(1, 40) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'invoice', g::text, 'InvoicePaid', '{}' FROM generate_series(1, 40) g`); err != nil {
		t.Fatal(err)
	}
	text := `timeout = "3s"
[[outbox]]
name = "orders"
dsn_env = "ORDERS_DSN"
labels = { team = "payments", tier = "1" }
[[outbox]]
name = "billing"
dsn_env = "BILLING_DSN"
labels = { team = "payments", tier = "2" }
[[outbox]]
name = "search"
dsn = "postgres://outboxtop@127.0.0.1:1/search"
labels = { team = "discovery" }
`
	env := map[string]string{"ORDERS_DSN": ordersDSN, "BILLING_DSN": billingDSN}
	f, err := fleet.Parse(filepath.Join(t.TempDir(), "fleet.toml"), text, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	p, err := fleet.NewPoller(f, fleet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Poll(ctx)
	b := &fleetBundle{t: t, poller: p}
	b.m = NewFleet(FleetOptions{
		Source: steadyRows{p},
		Title:  "fleet.toml",
		Open: func(ctx context.Context, name string) (Options, func(), error) {
			b.opened = append(b.opened, name)
			pool, o, err := p.Open(ctx, name, 4)
			if err != nil {
				return Options{}, nil, err
			}
			in, err := inspect.New(pool, o.Schema)
			if err != nil {
				pool.Close()
				return Options{}, nil, err
			}
			return Options{Inspector: in, Actor: "tester"}, pool.Close, nil
		},
	})
	t.Cleanup(b.m.Close)
	b.size(80, 24)
	return b
}

func (b *fleetBundle) size(w, h int) {
	_, cmd := b.m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	b.run(cmd)
}

// run executes cmd and feeds its messages back, as the program would, until no
// command is left; ticks (the fleet's and the open console's) are dropped.
func (b *fleetBundle) run(cmd tea.Cmd) {
	b.t.Helper()
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		switch msg := msg.(type) {
		case nil, fleetTickMsg, tea.QuitMsg:
			continue
		case tea.BatchMsg:
			queue = append(queue, msg...)
			continue
		case innerMsg:
			switch inner := msg.msg.(type) {
			case tickMsg:
				continue
			case loadedMsg:
				normalize(&inner)
				msg.msg = inner
			}
			_, next := b.m.Update(msg)
			queue = append(queue, next)
			continue
		}
		_, next := b.m.Update(msg)
		queue = append(queue, next)
	}
}

func (b *fleetBundle) keys(keys ...string) {
	b.t.Helper()
	for _, k := range keys {
		_, cmd := b.m.Update(keyMsg(k))
		b.run(cmd)
	}
}

func (b *fleetBundle) typeText(s string) {
	for _, r := range s {
		b.m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// screen is the content with the ASCII colour profile, as testBundle.screen.
func (b *fleetBundle) screen() string {
	var buf bytes.Buffer
	w := &colorprofile.Writer{Forward: &buf, Profile: colorprofile.ASCII}
	_, _ = w.WriteString(b.m.View().Content)
	return buf.String()
}

func stripANSI(s string) string { return ansi.Strip(s) }

func TestFleetGolden(t *testing.T) {
	t.Parallel()
	b := setupFleet(t)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		b.size(size[0], size[1])
		golden(t, fmt.Sprintf("fleet-%dx%d", size[0], size[1]), b.screen())
	}
	b.size(80, 24)
	b.keys("/")
	b.typeText("team=payments")
	golden(t, "fleet-filter-typing-80x24", b.screen())
	b.keys("enter")
	golden(t, "fleet-filtered-80x24", b.screen())
}

func TestFleetRowsWorstFirstUnreachableDimmed(t *testing.T) {
	t.Parallel()
	b := setupFleet(t)
	lines := strings.Split(b.m.Render(), "\n")
	var order []string
	for _, l := range lines[2:5] {
		order = append(order, strings.Fields(stripANSI(l))[1])
	}
	if strings.Join(order, " ") != "search billing orders" {
		t.Fatalf("rows %v, want unreachable, poison storm, healthy:\n%s", order, b.screen())
	}
	search := stripANSI(lines[2])
	if !strings.Contains(search, "unreachable: ") || !strings.Contains(search, "connection refused") {
		t.Errorf("unreachable row without its reason: %q", search)
	}
	// The cursor is on the first row (reverse); the unreachable row, once the
	// cursor leaves it, is faint.
	b.keys("j")
	if l := strings.Split(b.m.Render(), "\n")[2]; !strings.Contains(l, "\x1b[2m") && !strings.Contains(l, ";2m") {
		t.Errorf("unreachable row not dimmed: %q", l)
	}
	billing := stripANSI(strings.Split(b.m.Render(), "\n")[3])
	if f := strings.Fields(billing); f[0] != "WARN" || f[6] != "40" || f[7] != "40" || !strings.Contains(billing, "failed 40 > 0") {
		t.Errorf("billing row %q", billing)
	}
}

func TestFleetDrillInAndBack(t *testing.T) {
	t.Parallel()
	b := setupFleet(t)
	// On the unreachable outbox, enter says why it cannot open and stays.
	b.keys("enter")
	if b.m.inner != nil || !strings.Contains(b.screen(), `outbox "search"`) {
		t.Fatalf("unreachable opened, or no reason:\n%s", b.screen())
	}
	b.keys("j", "enter")
	if b.m.inner == nil || b.m.innerName != "billing" {
		t.Fatalf("billing not opened (opened %v):\n%s", b.opened, b.screen())
	}
	s := stripANSI(b.screen())
	if !strings.Contains(s, "billing (esc: fleet)") || !strings.Contains(s, "Failed 40") {
		t.Fatalf("billing's console:\n%s", s)
	}
	// Inside, keys are the console's: the failed list, a filter that esc clears
	// before esc leaves.
	b.keys("4")
	b.keys("/")
	b.typeText("type:InvoiceIssued")
	b.keys("enter")
	b.keys("esc")
	if b.m.inner == nil {
		t.Fatal("esc left the console while it had a filter to clear")
	}
	b.keys("esc")
	if b.m.inner != nil {
		t.Fatalf("esc did not return to the fleet:\n%s", b.screen())
	}
	s = stripANSI(b.screen())
	if !strings.Contains(s, "outboxtop fleet") || !strings.Contains(strings.Split(s, "\n")[3], "billing") {
		t.Fatalf("back at the fleet, cursor on billing:\n%s", s)
	}
	// A message of the closed console is dropped, not shown in the fleet.
	_, cmd := b.m.Update(innerMsg{gen: b.m.gen - 1, msg: statusMsg{text: "stale"}})
	b.run(cmd)
	if strings.Contains(b.screen(), "stale") {
		t.Errorf("a closed console's message reached the screen")
	}
	// Open again: a new console.
	b.keys("enter")
	if b.m.inner == nil || len(b.opened) != 3 {
		t.Fatalf("reopen: opened %v", b.opened)
	}
}

func TestFleetFilterByLabel(t *testing.T) {
	t.Parallel()
	b := setupFleet(t)
	b.keys("/")
	b.typeText("team=payments tier=2")
	b.keys("enter")
	if len(b.m.shown) != 1 || b.m.shown[0].Name != "billing" {
		t.Fatalf("shown %+v", b.m.shown)
	}
	b.keys("esc")
	if len(b.m.shown) != 3 {
		t.Fatalf("esc did not clear the filter: %d shown", len(b.m.shown))
	}
	b.keys("/")
	b.typeText("sea")
	b.keys("enter")
	if len(b.m.shown) != 1 || b.m.shown[0].Name != "search" {
		t.Fatalf("name filter: %+v", b.m.shown)
	}
}
