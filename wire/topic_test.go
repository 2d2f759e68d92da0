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
