package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// runTrace prints one event's life: the row, the operators' actions on it, its
// record read back from Kafka at the coordinates the relay recorded, and the
// inboxes that applied it. It exits 1 when the record is not there or is another
// event's: that is the answer to "was it really written to Kafka?".
func runTrace(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("trace", io)
	fs.Usage = func() {
		printFlags(io.Err, fs, "Usage: outboxtop trace EVENT_ID [flags]\n\nEVENT_ID is an event id or its start (or, from 6 hex digits, its end).\n", false)
	}
	var db dbFlags
	db.register(fs)
	var kf relayFlags // only how to reach Kafka
	kf.registerKafka(fs)
	timeout := fs.Duration("kafka-timeout", 10*time.Second, "give up reading the record back from Kafka after this long")
	asJSON := fs.Bool("json", false, "print the trace as JSON")
	id, err := parseOneArg(fs, args, io, "EVENT_ID")
	if err != nil {
		return err
	}
	if *timeout <= 0 {
		return usagef("--kafka-timeout must be positive")
	}
	if err := kf.resolveKafka(io); err != nil {
		return err
	}
	withKafka := len(kf.kafka.Brokers) > 0
	in, pool, err := db.inspector(ctx, io, inspect.ReadOnly())
	if err != nil {
		return err
	}
	defer pool.Close()
	t, err := in.Trace(ctx, id)
	switch {
	case errors.Is(err, inspect.ErrAmbiguous):
		return exitError{code: ExitUsage, msg: termtext.Sanitize(err.Error())}
	case errors.Is(err, inspect.ErrNotFound):
		return exitError{code: ExitFailure, msg: termtext.Sanitize(err.Error())}
	case err != nil:
		return err
	}
	if withKafka {
		t.Kafka = inspect.CheckRecord(ctx, kafkaClientFor(kf.kafka), t.Event, *timeout)
	}
	heads, err := waitingBehind(ctx, in, []inspect.Event{t.Event})
	if err != nil {
		return err
	}
	var behind *inspect.Head
	if h, ok := heads[t.EventID]; ok {
		behind = &h
	}
	if *asJSON {
		// waiting_behind: the failed or scheduled head of its aggregate a ready
		// event waits behind (absent when it does not).
		if err := writeJSON(io.Out, struct {
			inspect.Trace
			WaitingBehind *inspect.Head `json:"waiting_behind,omitempty"`
		}{t, behind}); err != nil {
			return err
		}
	} else {
		printTrace(io.Out, t, behind, withKafka, time.Now())
	}
	switch k := t.Kafka; {
	case k == nil || k.OK():
		return nil
	case k.Err != "":
		return exitError{code: ExitFailure, msg: "could not read the record back: " + termtext.OneLine(termtext.Sanitize(k.Err))}
	case !k.Found:
		return exitError{code: ExitFailure, msg: fmt.Sprintf("record MISSING at %s[%d]@%d", termtext.Sanitize(k.Topic), k.Partition, k.Offset)}
	}
	return exitError{code: ExitFailure, msg: fmt.Sprintf("the record at %s[%d]@%d is NOT this event's", termtext.Sanitize(t.Kafka.Topic), t.Kafka.Partition, t.Kafka.Offset)}
}

// parseOneArg is parse for a command that takes exactly one positional argument.
func parseOneArg(fs *pflag.FlagSet, args []string, io IO, name string) (string, error) {
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return "", err
		}
		return "", usagef("%v (see 'outboxtop %s --help')", err, fs.Name())
	}
	rest := fs.Args()
	if err := parse(fs, nil, io); err != nil { // the OUTBOXTOP_<FLAG> variables
		return "", err
	}
	switch {
	case len(rest) == 0:
		return "", usagef("name the %s (see 'outboxtop %s --help')", name, fs.Name())
	case len(rest) > 1:
		return "", usagef("unexpected argument %q: one %s only", rest[1], name)
	}
	return rest[0], nil
}

func printTrace(w io.Writer, t inspect.Trace, behind *inspect.Head, withKafka bool, now time.Time) {
	ts := func(p *time.Time) string {
		if p == nil {
			return "-"
		}
		return inspect.DisplayTime(*p) + "  (" + inspect.Relative(*p, now) + ")"
	}
	kv := func(k, v string) { fmt.Fprintf(w, "%-15s %s\n", k, v) }
	fmt.Fprintf(w, "EVENT %s  %s  %s/%s\n", t.EventID, termtext.Sanitize(t.EventType), termtext.Sanitize(t.AggregateType), termtext.Sanitize(t.AggregateID))
	state := string(t.State)
	if t.LeaseExpired {
		state += " (lease expired: claimable again)"
	}
	if behind != nil {
		state += ", " + behind.Label(now) // ready by its available_at, not published before its head
	}
	kv("state", fmt.Sprintf("%s · seq %d · attempts %d", state, t.Seq, t.Attempts))
	kv("created_at", ts(&t.CreatedAt))
	kv("available_at", ts(&t.AvailableAt))
	if t.LeaseUntil != nil {
		kv("lease_until", ts(t.LeaseUntil)+" · token "+termtext.Sanitize(t.LeaseToken))
	}
	if t.LeaseHolder != "" {
		// lease_holder names the relay of the latest claim and is kept after it.
		switch {
		case t.State == wire.Leased:
			kv("held by", termtext.Sanitize(t.LeaseHolder))
		case t.PublishedAt != nil:
			kv("published by", termtext.Sanitize(t.LeaseHolder))
		default:
			kv("last relay", termtext.Sanitize(t.LeaseHolder))
		}
	}
	kv("published_at", ts(t.PublishedAt))
	if t.FailedAt != nil {
		kv("failed_at", ts(t.FailedAt))
	}
	if t.ArchivedAt != nil {
		kv("archived_at", ts(t.ArchivedAt))
	}
	if t.LastError != "" {
		if t.PublishedAt != nil {
			// The relay clears last_error when it marks an event published; a row
			// published by an older one kept an earlier attempt's error.
			kv("earlier error", short(termtext.Sanitize(t.LastError), 300)+" (before it was published)")
		} else {
			kv("last_error", short(termtext.Sanitize(t.LastError), 300))
		}
	}
	if t.ReplayOf != "" {
		kv("replay_of", termtext.Sanitize(t.ReplayOf))
	}
	if t.CorrectionOf != "" {
		kv("correction_of", termtext.Sanitize(t.CorrectionOf)+" (the failed event this corrected copy replaces, archived)")
	}
	for _, r := range t.Replays {
		kv("replayed as", r)
	}

	fmt.Fprintln(w)
	switch k := t.Kafka; {
	case t.KafkaTopic == "" || t.KafkaPartition == nil || t.KafkaOffset == nil:
		kv("KAFKA", "no coordinates: the relay has not marked this event published")
	default:
		kv("KAFKA", fmt.Sprintf("%s [partition %d] @ offset %d", termtext.Sanitize(t.KafkaTopic), *t.KafkaPartition, *t.KafkaOffset))
		switch {
		case !withKafka:
			kv("record", "not checked: no --brokers or KAFKA_BROKERS")
		case k.Err != "":
			kv("record", "COULD NOT READ: "+termtext.OneLine(termtext.Sanitize(k.Err)))
		case !k.Found:
			kv("record", "MISSING: "+termtext.Sanitize(k.Missing))
			kv("partition", fmt.Sprintf("log start %d · end %d", k.LogStart, k.HighWatermark))
		default:
			kv("record", fmt.Sprintf("found · key %s · value %d bytes · written %s", termtext.Sanitize(k.Key), k.ValueBytes, ts(k.Timestamp)))
			if note := k.ValueNote(t.PayloadBytes); note != "" {
				kv("", note)
			}
			var hs []string
			for _, h := range k.Headers {
				hs = append(hs, termtext.Sanitize(h.Key)+"="+short(termtext.Sanitize(h.Value), 60))
			}
			kv("headers", strings.Join(hs, " "))
			for _, m := range k.Mismatches {
				kv("MISMATCH", termtext.Sanitize(m))
			}
		}
	}

	fmt.Fprintln(w)
	kv("CONSUMERS", fmt.Sprintf("%d applied it", len(t.Consumed)))
	for _, c := range t.Consumed {
		fmt.Fprintf(w, "  %-28s %s\n", short(termtext.Sanitize(c.Consumer), 28), ts(&c.ConsumedAt))
	}
	fmt.Fprintln(w)
	items := t.Timeline()
	kv("HISTORY", fmt.Sprintf("%d tries that did not end published, %d operator actions", len(t.AttemptHistory), len(t.Audit)))
	if t.HistoryError != "" {
		fmt.Fprintln(w, "  "+termtext.Sanitize(t.HistoryError))
	}
	for _, h := range items {
		fmt.Fprintf(w, "  %s  %s\n", ts(&h.At), short(termtext.OneLine(termtext.Sanitize(h.What(0))), 300))
	}
}
