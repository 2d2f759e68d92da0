package console

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
)

func (b *testBundle) text() string { return ansi.Strip(b.m.View().Content) }

// count runs a count query against the test database.
func (b *testBundle) count(sql string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}

func TestFilterMarkRetryConfirm(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("4", "/")
	b.typeText("order")
	b.keys("enter")
	if got := len(b.m.tables[viewFailed].rows); got != 2 {
		t.Fatalf("filter 'order' lists %d failed events, want 2:\n%s", got, b.text())
	}
	b.keys("ctrl+a")
	// The list re-sorts under the marks: the action still names the marked ids.
	b.keys("O", "j")
	b.keys("r")
	if b.m.mode != modeConfirm {
		t.Fatalf("r did not open the confirm prompt:\n%s", b.text())
	}
	prompt := b.text()
	for _, want := range []string{"Retry 2 events? type yes + enter: █", shortID(seed.ID('d', 1)), shortID(seed.ID('d', 2))} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	b.keys("y", "e", "s")
	if n := b.count(`SELECT count(*) FROM outbox_audit`); n != 0 || b.m.mode != modeConfirm {
		t.Fatalf("yes without enter: %d audit rows, mode %d", n, b.m.mode)
	}
	b.keys("enter")
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE event_id = ANY($1::uuid[]) AND failed_at IS NULL AND attempts = 0`,
		[]string{seed.ID('d', 1), seed.ID('d', 2)}); n != 2 {
		t.Errorf("%d of 2 events were retried", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE failed_at IS NOT NULL`); n != 1 {
		t.Errorf("%d events still failed, want 1 (the unmarked one)", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'retry' AND rows = 2 AND actor = 'tester' AND event_ids @> $1::uuid[]`,
		[]string{seed.ID('d', 1), seed.ID('d', 2)}); n != 1 {
		t.Errorf("%d matching audit rows, want 1", n)
	}
	if s := b.text(); !strings.Contains(s, "retry: 2 of 2 events done (audit #") {
		t.Errorf("status line does not report the outcome:\n%s", s)
	}
	if got := len(b.m.tables[viewFailed].markOrder); got != 0 {
		t.Errorf("%d marks left after the action", got)
	}
}

func TestCancelLeavesEverything(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("4", "space", "r", "n")
	if b.m.mode != modeNormal || !strings.Contains(b.text(), "cancelled: nothing changed") {
		t.Fatalf("n did not cancel:\n%s", b.text())
	}
	// Any key that does not continue yes cancels, including enter, Y and
	// enter after part of it; so does a key after the whole of it.
	b.keys("x") // park does not apply to failed events: refused without a prompt
	for _, keys := range [][]string{{"enter"}, {"y", "n"}, {"Y"}, {"y", "enter"}, {"y", "e", "enter"}, {"y", "e", "s", "s"},
		{"y", "e", "s", "space"}, {"y", "e", "s", "esc"}, {"y", "backspace"}, {"ctrl+y"}, {"1"}} {
		b.keys(append([]string{"r"}, keys...)...)
		if b.m.mode != modeNormal || !strings.Contains(b.text(), "cancelled: nothing changed") {
			t.Fatalf("r then %v did not cancel:\n%s", keys, b.text())
		}
	}
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE failed_at IS NOT NULL`); n != 3 {
		t.Errorf("%d failed events after cancelling, want 3", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit`); n != 0 {
		t.Errorf("%d audit rows after cancelling, want 0", n)
	}
}

func TestReadOnlyRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{ReadOnly: true})
	b.keys("4")
	if s := b.text(); strings.Contains(s, "r retry") {
		t.Errorf("read-only footer offers retry:\n%s", s)
	}
	b.keys("space", "r")
	if b.m.mode == modeConfirm || !strings.Contains(b.text(), "read-only console: actions are refused") {
		t.Fatalf("read-only console did not refuse r:\n%s", b.text())
	}
	b.keys("p", "3", "l", "5", "a")
	b.keys("?")
	help := b.text()
	for _, absent := range []string{"retry", "reset lease", "archive", "park", "pause"} {
		if strings.Contains(help, absent) {
			t.Errorf("read-only help lists %q:\n%s", absent, help)
		}
	}
	if !strings.Contains(help, "READ-ONLY") {
		t.Errorf("help does not say read-only:\n%s", help)
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit`); n != 0 {
		t.Errorf("%d audit rows in read-only mode", n)
	}
}

func TestResetLeaseFromDetail(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("3", "enter")
	if !strings.Contains(b.text(), seed.ID('c', 1)) {
		t.Fatalf("detail does not show the leased event:\n%s", b.text())
	}
	b.keys("l")
	if !strings.Contains(b.text(), "Reset the lease of 1 event? type yes + enter: █ (c0000001)") {
		t.Fatalf("prompt:\n%s", b.text())
	}
	b.keys("y", "e", "s", "enter")
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE event_id = $1 AND lease_until <= now()`, seed.ID('c', 1)); n != 1 {
		t.Error("the lease was not reset")
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'reset-lease' AND rows = 1`); n != 1 {
		t.Errorf("%d reset-lease audit rows, want 1", n)
	}
	if b.m.mode != modeDetail {
		t.Errorf("mode %d after the action, want the detail view still open", b.m.mode)
	}
}

// fakeRelay stands in for the embedded relay: the interface is the console's
// boundary, and pausing is in memory.
type fakeRelay struct {
	mu     sync.Mutex
	paused bool
}

func (f *fakeRelay) Pause()  { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fakeRelay) Resume() { f.mu.Lock(); f.paused = false; f.mu.Unlock() }
func (f *fakeRelay) Status() RelayStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return RelayStatus{Paused: f.paused, BrokerReachable: true, LastBatch: 50, LastPublish: 12 * time.Millisecond}
}

func TestPausedRelayIsImpossibleToMiss(t *testing.T) {
	t.Parallel()
	r := &fakeRelay{}
	b := setup(t, Options{Relay: r})
	b.keys("p")
	if !strings.Contains(b.text(), "Pause the relay? Nothing is published until it is resumed; type yes + enter: █") {
		t.Fatalf("p does not ask first:\n%s", b.text())
	}
	b.keys("y", "enter")
	if r.paused {
		t.Fatal("p paused the relay although the prompt was answered y, enter")
	}
	b.keys("p", "y", "e", "s", "enter")
	if !r.paused {
		t.Fatal("p, yes, enter did not pause the relay")
	}
	for _, v := range []string{"1", "2", "3", "4", "5", "6", "?"} {
		b.keys(v)
		lines := strings.Split(b.text(), "\n")
		if !strings.Contains(lines[2], "RELAY PAUSED") || !strings.Contains(lines[0], "PAUSED") {
			t.Errorf("after %q the paused relay is not on lines 1 and 3:\n%s", v, b.text())
		}
		b.keys("esc")
	}
	b.keys("1")
	golden(t, "paused-80x24", b.screen())
	b.keys("p")
	if !strings.Contains(b.text(), "Resume the relay? type yes + enter: █") {
		t.Fatalf("p does not ask before resuming:\n%s", b.text())
	}
	b.keys("y", "e", "s", "enter")
	if r.paused || strings.Contains(b.text(), "RELAY PAUSED") {
		t.Errorf("p did not resume the relay:\n%s", b.text())
	}
}

func TestSizes(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.size(0, 0)
	if s := b.m.View().Content; s != "" {
		t.Errorf("0×0 renders %q", s)
	}
	b.size(79, 24)
	if s := b.text(); !strings.Contains(s, "needs 80×24") {
		t.Errorf("79×24 renders:\n%s", s)
	}
	b.size(80, 23)
	if s := b.text(); !strings.Contains(s, "needs 80×24") {
		t.Errorf("80×23 renders:\n%s", s)
	}
	for _, size := range [][2]int{{80, 24}, {100, 30}, {200, 60}} {
		b.size(size[0], size[1])
		for _, v := range []string{"1", "2", "3", "4", "5", "6"} {
			b.keys(v)
			lines := strings.Split(b.text(), "\n")
			if len(lines) != size[1] {
				t.Errorf("view %s at %v: %d lines", v, size, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("view %s at %v: line %d is %d wide", v, size, i, w)
				}
			}
		}
	}
	if v := b.m.View(); v.WindowTitle != "outboxtop" || v.MouseMode != 0 {
		t.Errorf("title %q, mouse mode %v", v.WindowTitle, v.MouseMode)
	}
}

func TestLoadsNeverOverlapAndGoStale(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	first := b.m.startLoad()
	if first == nil {
		t.Fatal("no load started")
	}
	if again := b.m.startLoad(); again != nil {
		t.Fatal("a second load started while one runs")
	}
	b.clock = b.clock.Add(7 * time.Second) // the query is slow
	if s := b.text(); !strings.Contains(s, "stale 7s") {
		t.Errorf("slow load is not shown as stale:\n%s", s)
	}
	b.run(first) // finishing it runs the one asked for meanwhile
	if b.m.loading || b.m.reloadWanted {
		t.Errorf("loading %v, reload wanted %v after both loads", b.m.loading, b.m.reloadWanted)
	}
	if s := b.text(); strings.Contains(s, "stale") {
		t.Errorf("still stale after the load:\n%s", s)
	}
}

func TestExtrasAppearInHelpAndRun(t *testing.T) {
	t.Parallel()
	ran := make(chan struct{}, 1)
	b := setup(t, Options{})
	b.keys("?")
	if strings.Contains(b.text(), "EXTRAS") {
		t.Error("help shows an extras section without extras")
	}
	b = setup(t, Options{Extras: []Extra{{
		Key:   keyBinding("F", "broker outage"),
		Run:   func(context.Context) (string, error) { ran <- struct{}{}; return "broker down", nil },
		State: func() string { return "off" },
	}}})
	b.keys("?")
	if !strings.Contains(b.text(), "broker outage") {
		t.Errorf("help lacks the extra:\n%s", b.text())
	}
	b.keys("esc", "F")
	select {
	case <-ran:
	default:
		t.Fatal("the extra did not run")
	}
	if s := b.text(); !strings.Contains(s, "broker down") || !strings.Contains(s, "broker outage: off") {
		t.Errorf("status or state of the extra missing:\n%s", s)
	}
}
