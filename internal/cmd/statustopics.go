package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"github.com/outboxtop/outboxtop/relay"
)

// topicsAsker says which of topics do not exist, asking the brokers (nil: no
// brokers given).
type topicsAsker func(ctx context.Context, topics []string) (missing map[string]bool, err error)

// brokerTopics asks the brokers k names which topics exist: a metadata request
// that asks for no topic to be created (auto-creation on the brokers does not
// make a topic of the question).
func brokerTopics(k relay.KafkaConfig) topicsAsker {
	return func(ctx context.Context, topics []string) (map[string]bool, error) {
		cl, err := relay.NewKafkaClient(k)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		details, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
		if err != nil {
			return nil, err
		}
		missing := map[string]bool{}
		for _, t := range topics {
			d, ok := details[t]
			if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				missing[t] = true
			}
		}
		return missing, nil
	}
}

// missingTopicsTimeout bounds the brokers' answer, within a check plugin's
// usual 10 s.
const missingTopicsTimeout = 5 * time.Second

// checkMissingTopics is status's missing-topic condition: unpublished events
// waiting for a Kafka topic that does not exist make it a WARNING naming the
// topic. No threshold captures it: such events are scheduled again between
// attempts, so none is publishable (the oldest publishable age stays 0) and
// none is failed, however long nothing goes out. Two reads find them, as
// status runs without a relay: the rows' last_error
// (relay.WaitingForMissingTopics: the events a relay found the topic missing
// for), and, when ask is set (brokers given), the brokers' answer for the
// topics the pending events go to (relay.PendingTopics: the rows' own topics,
// and, when template is the relay's topic template, the others'): that finds
// the events no relay has tried yet, or that wait behind one that was. A topic both find counts the larger
// number of events. It returns the topics, and why the brokers could not say
// ("" when they did or were not asked): the last_error's topics still count.
func checkMissingTopics(ctx context.Context, q relay.Querier, schema, template string, ask topicsAsker, c *fleet.Check) ([]relay.TopicWait, string, error) {
	waits, err := relay.WaitingForMissingTopics(ctx, q, schema)
	if err != nil {
		return nil, "", err
	}
	var askErr string
	if ask != nil {
		var fromBrokers []relay.TopicWait
		fromBrokers, askErr, err = missingByBrokers(ctx, q, schema, template, ask)
		if err != nil {
			return nil, "", err
		}
		waits = mergeTopicWaits(waits, fromBrokers)
	}
	for _, w := range waits {
		c.Note(fmt.Sprintf("topic %q does not exist: %d events wait for it", termtext.Sanitize(w.Topic), w.Events), fleet.Warning)
	}
	return waits, askErr, nil
}

// missingByBrokers is the topics of the pending events that the brokers say do
// not exist, and why the brokers could not say ("" when they did).
func missingByBrokers(ctx context.Context, q relay.Querier, schema, template string, ask topicsAsker) ([]relay.TopicWait, string, error) {
	pending, err := relay.PendingTopics(ctx, q, schema, template)
	if err != nil || len(pending) == 0 {
		return nil, "", err
	}
	topics := make([]string, len(pending))
	for k, p := range pending {
		topics[k] = p.Topic
	}
	actx, cancel := context.WithTimeout(ctx, missingTopicsTimeout)
	defer cancel()
	missing, err := ask(actx, topics)
	if err != nil {
		return nil, termtext.OneLine(err.Error()), nil
	}
	var out []relay.TopicWait
	for _, p := range pending {
		if missing[p.Topic] {
			p.FoundBy = relay.FoundByBrokers
			out = append(out, p)
		}
	}
	return out, "", nil
}

// mergeTopicWaits joins the topics found from last_error and from the
// brokers: one entry a topic, the larger count of events and the later next
// try, most events first, at most relay.MaxTopicWaits.
func mergeTopicWaits(a, b []relay.TopicWait) []relay.TopicWait {
	out := append([]relay.TopicWait(nil), a...)
	for _, w := range b {
		found := false
		for k := range out {
			if out[k].Topic == w.Topic {
				found = true
				out[k].Events = max(out[k].Events, w.Events)
				if w.NextTry.After(out[k].NextTry) {
					out[k].NextTry = w.NextTry
				}
				out[k].FoundBy = relay.FoundByBoth
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(x, y relay.TopicWait) int {
		if c := cmp.Compare(y.Events, x.Events); c != 0 {
			return c
		}
		return cmp.Compare(x.Topic, y.Topic)
	})
	return out[:min(len(out), relay.MaxTopicWaits)]
}

// printMissingTopics is the missing topics in status's long output.
func printMissingTopics(w io.Writer, waits []relay.TopicWait, askErr string) {
	if askErr != "" {
		fmt.Fprintf(w, "could not ask the brokers which topics exist: %s\n", termtext.Sanitize(askErr))
	}
	if len(waits) == 0 {
		return
	}
	fmt.Fprintf(w, "waiting for topics that do not exist (create them, or run the relay with --kafka-auto-create-topics; events counted among those read, at most %d of each window):\n",
		relay.WaitWindow)
	for _, t := range waits {
		how := "their last_error says so"
		switch t.FoundBy {
		case relay.FoundByBrokers:
			how = "the brokers say so"
		case relay.FoundByBoth:
			how = "their last_error and the brokers say so"
		}
		fmt.Fprintf(w, "  %6d  %s (%s)\n", t.Events, short(termtext.Sanitize(t.Topic), 100), how)
	}
}
