package relay

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/outboxtop/outboxtop/wire"
)

// A row's topic column is written by the producing service, so without a bound
// any service that can insert an event can write to any topic the relay's
// credentials reach. Config.Topics is that bound. Without it the relay still
// refuses Kafka's internal topics (names starting with "__": __consumer_offsets,
// __transaction_state, …), which no event belongs in and which a write to can
// break every consumer group. An event to a topic outside the bound fails at
// once, as a record that can never be published: retrying would not change the
// answer.

// internalTopicPrefix starts the names Kafka and its tools keep for themselves.
const internalTopicPrefix = "__"

// validateTopicPatterns checks the --topics patterns: a topic name in which *
// stands for any run of characters.
func validateTopicPatterns(patterns []string) error {
	for _, p := range patterns {
		if p == "" {
			return &ConfigError{Field: "Topics", Problem: "holds an empty pattern"}
		}
		if err := wire.ValidateTopic(strings.ReplaceAll(p, "*", "x")); err != nil {
			return &ConfigError{Field: "Topics", Problem: fmt.Sprintf("pattern %q: %v", p, err)}
		}
	}
	return nil
}

// topicRefused says why an event may not go to topic, or "" when it may. With
// no patterns every topic but the internal ones is allowed. With patterns, a
// topic must match one; an internal topic only matches a pattern that itself
// starts with "__", so "*" does not open them by accident.
func topicRefused(patterns []string, topic string) string {
	internal := strings.HasPrefix(topic, internalTopicPrefix)
	if len(patterns) == 0 {
		if internal {
			return fmt.Sprintf("topic %q is refused: names starting with %q are Kafka's internal topics (allow it explicitly with --topics)", topic, internalTopicPrefix)
		}
		return ""
	}
	for _, p := range patterns {
		if internal && !strings.HasPrefix(p, internalTopicPrefix) {
			continue
		}
		if globMatch(p, topic) {
			return ""
		}
	}
	return fmt.Sprintf("topic %q is not allowed by --topics %s", topic, strings.Join(patterns, ","))
}

// globMatch reports whether name matches pattern, in which * matches any run of
// characters (none included) and everything else only itself.
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}

// reservedLookalike returns the reserved header name that name would pass for
// in a consumer that compares names loosely — another case, surrounding
// whitespace, an invisible or format character inside ("Event_ID", "event_id ",
// "aggregate_id\u200b") — or "" when it is none. An exact reserved name is
// wire.CheckHeader's to refuse.
func reservedLookalike(name string) string {
	folded := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, name)
	for _, h := range wire.ReservedHeaders() {
		if h != name && strings.EqualFold(folded, h) {
			return h
		}
	}
	return ""
}
