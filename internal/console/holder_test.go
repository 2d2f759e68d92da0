package console

import (
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

func TestFitHolderKeepsWhatTellsRelaysApart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"relay-a:4242", 15, "relay-a:4242"},
		{"ip-10-0-1-23.eu-west-1.compute.internal:12345", 20, "ip-10-0-1-23:12345"},
		{"10.20.30.40:12345", 15, "10.2…0.40:12345"},
		{"outboxtop-relay-5d8f7b9c4-x2kqz:1", 15, "outbox…-x2kqz:1"},
		{"a-very-long-host-name:1234567890", 8, "…4567890"},
	} {
		got := fitHolder(c.in, c.w)
		if got != c.want || ansi.StringWidth(got) > c.w {
			t.Errorf("fitHolder(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
	}
}

func TestHolderNameFallsBackToTheToken(t *testing.T) {
	t.Parallel()
	if got := holderName(inspect.Event{LeaseHolder: "relay-a:1\x1b[31m", LeaseToken: "c0ffee00-0000-4000-8000-000000000001"}); got != termtext.Sanitize("relay-a:1\x1b[31m") {
		t.Errorf("holder %q, want the sanitized lease_holder", got)
	}
	if got := holderName(inspect.Event{LeaseToken: "c0ffee00-0000-4000-8000-000000000001"}); got != "token c0ffee00" {
		t.Errorf("holder of a row claimed before migration 009: %q", got)
	}
}

func TestHolderLabelSaysWhatTheHolderDid(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, c := range []struct {
		e    inspect.Event
		want string
	}{
		{inspect.Event{State: wire.Leased}, "holder"},
		{inspect.Event{State: wire.Published, PublishedAt: &now}, "published by"},
		{inspect.Event{State: inspect.Archived, PublishedAt: &now}, "published by"},
		{inspect.Event{State: wire.Failed}, "last relay"},
		{inspect.Event{State: wire.Ready, LeaseExpired: true}, "last relay"},
	} {
		if got := holderLabel(c.e); got != c.want {
			t.Errorf("%s: label %q, want %q", c.e.State, got, c.want)
		}
	}
	d := detailText(inspect.EventDetail{Event: inspect.Event{State: wire.Leased, LeaseHolder: "relay-a:1", LeaseUntil: &now}}, now)
	if !strings.Contains(d, "attempts         0 · holder relay-a:1\n") {
		t.Errorf("detail of a leased event does not name its holder:\n%s", d)
	}
}
