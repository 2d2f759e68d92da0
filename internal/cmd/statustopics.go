package cmd

import (
	"context"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/relay"
)

// checkMissingTopics is status's missing-topic condition: unpublished events
// waiting for a Kafka topic that does not exist make it a WARNING naming the
// topic. No threshold captures it: such events are scheduled again between
// attempts, so none is publishable (the oldest publishable age stays 0) and
// none is failed, however long nothing goes out. The read is the rows'
// last_error (relay.WaitingForMissingTopics), as status runs without a relay.
func checkMissingTopics(ctx context.Context, q relay.Querier, schema string, c *fleet.Check) ([]relay.TopicWait, error) {
	waits, err := relay.WaitingForMissingTopics(ctx, q, schema)
	if err != nil {
		return nil, err
	}
	for _, w := range waits {
		c.Note(fmt.Sprintf("topic %q does not exist: %d events wait for it", termtext.Sanitize(w.Topic), w.Events), fleet.Warning)
	}
	return waits, nil
}

// printMissingTopics is the missing topics in status's long output.
func printMissingTopics(w io.Writer, waits []relay.TopicWait) {
	if len(waits) == 0 {
		return
	}
	fmt.Fprintf(w, "waiting for topics that do not exist (create them, or run the relay with --kafka-auto-create-topics; of the oldest %d pending events):\n", relay.WaitWindow)
	for _, t := range waits {
		fmt.Fprintf(w, "  %6d  %s\n", t.Events, short(termtext.Sanitize(t.Topic), 100))
	}
}
