package relay

import (
	"fmt"
	"strings"

	"github.com/outboxtop/outboxtop/wire"
)

// A row's topic column is written by the producing service, so without a bound
// any service that can insert an event can write to any topic the relay's
// credentials reach. Config.Topics is that bound. Without it the relay still
// refuses the topics Kafka and its ecosystem keep for themselves
// (internalTopics: __consumer_offsets and every "__" name, the schema
// registry's _schemas, Confluent's _confluent…, Kafka Connect's default
// connect-configs, connect-offsets and connect-status), which no event belongs
// in and a write to which can break every consumer group, every schema or
// every connector. An event to a topic outside the bound fails at once, as a
// record that can never be published: retrying would not change the answer.

// internalTopics are the topics Kafka and the tools around it keep for
// themselves, as patterns (* for any run of characters), each with whose they
// are. Only a --topics pattern that is itself such a name opens one.
var internalTopics = []struct{ pattern, whose string }{
	{"__*", `Kafka (names starting with "__")`},
	{"_schemas", "the schema registry (its storage topic)"},
	{"_confluent*", `Confluent Platform (names starting with "_confluent")`},
	{"connect-configs", "Kafka Connect (its default configuration topic)"},
	{"connect-offsets", "Kafka Connect (its default offsets topic)"},
	{"connect-status", "Kafka Connect (its default status topic)"},
}

// internalTopic says whose internal topic name is, or "" when it is none.
func internalTopic(name string) string {
	for _, t := range internalTopics {
		if globMatch(t.pattern, name) {
			return t.whose
		}
	}
	return ""
}

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
// no patterns every topic but the internal ones (internalTopics) is allowed.
// With patterns, a topic must match one; an internal topic only matches a
// pattern that is itself an internal name ("__audit.*", "_schemas"), so "*" or
// "connect-*" does not open them by accident.
func topicRefused(patterns []string, topic string) string {
	whose := internalTopic(topic)
	if len(patterns) == 0 {
		if whose != "" {
			return fmt.Sprintf("topic %q is refused: it is internal to %s; to write to it, name it in --topics beside the relay's other topics", topic, whose)
		}
		return ""
	}
	for _, p := range patterns {
		if whose != "" && internalTopic(p) == "" {
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
