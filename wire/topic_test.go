package wire_test

import (
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/wire"
)

// legalTopic is Kafka's rule written independently of ValidateTopic.
func legalTopic(s string) bool {
	if len(s) == 0 || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// FuzzValidateTopic: ValidateTopic accepts exactly Kafka's legal names.
func FuzzValidateTopic(f *testing.F) {
	for _, s := range []string{"outbox.order", "", ".", "..", "a b", "ünï", "x\x00y", string(make([]byte, 250))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := wire.ValidateTopic(s) == nil, legalTopic(s); got != want {
			t.Fatalf("ValidateTopic(%q) accepted=%v, Kafka's rule says %v", s, got, want)
		}
	})
}

func TestValidateTopicTemplate(t *testing.T) {
	for _, c := range []struct{ tmpl, err string }{
		{wire.DefaultTopicTemplate, ""},
		{"{aggregate_type}.{event_type}", ""},
		{"plain", ""},
		{"t.{unknown}", "unknown placeholder {unknown}"},
		{"{aggregate_type", "unclosed {"},
		{"a/{aggregate_type}", "illegal character '/'"},
		{"", "empty topic name"},
	} {
		err := wire.ValidateTopicTemplate(c.tmpl)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %v, want %q", c.tmpl, err, c.err)
		}
	}
	if got := wire.Topic("{aggregate_type}.{event_type}.{aggregate_type}", "order", "Paid"); got != "order.Paid.order" {
		t.Errorf("Topic = %q", got)
	}
}

// Topic expands in one pass, as strings.Replacer does: a value holding a
// placeholder is not expanded again, and stray braces stay as they are.
func TestTopicExpandsOnce(t *testing.T) {
	for _, c := range []struct{ tmpl, agg, ev, want string }{
		{"outbox.{aggregate_type}", "{event_type}", "Paid", "outbox.{event_type}"},
		{"{event_type}{aggregate_type}", "a{", "}b", "}ba{"},
		{"{{aggregate_type}}", "x", "y", "{x}"},
		{"{aggregate_typ", "x", "y", "{aggregate_typ"},
		{"plain", "x", "y", "plain"},
		{"", "x", "y", ""},
	} {
		if got := wire.Topic(c.tmpl, c.agg, c.ev); got != c.want {
			t.Errorf("Topic(%q, %q, %q) = %q, want %q", c.tmpl, c.agg, c.ev, got, c.want)
		}
	}
}

// FuzzTopicMatchesReplacer: Topic expands exactly as a strings.Replacer of the
// two placeholders does (what it was before it had to be fast).
func FuzzTopicMatchesReplacer(f *testing.F) {
	f.Add("outbox.{aggregate_type}.{event_type}", "order", "Paid")
	f.Add("{{aggregate_type}{event_type", "{event_type}", "{")
	f.Fuzz(func(t *testing.T, tmpl, agg, ev string) {
		want := strings.NewReplacer(wire.PlaceholderAggregateType, agg, wire.PlaceholderEventType, ev).Replace(tmpl)
		if got := wire.Topic(tmpl, agg, ev); got != want {
			t.Errorf("Topic(%q, %q, %q) = %q, the replacer gives %q", tmpl, agg, ev, got, want)
		}
	})
}
