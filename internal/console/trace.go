package console

import (
	"context"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// traceMsg is the part of an event's detail read once when it opens: its record
// read back from Kafka, as sanitized text (the operators' actions on it are in
// the detail's history, read with every refresh).
type traceMsg struct {
	id   string
	text string
}

const traceLoading = "KAFKA RECORD\n  reading…"

// traceTimeout bounds the read-back from Kafka.
const traceTimeout = 5 * time.Second

func loadTrace(ctx context.Context, in *inspect.Inspector, kafka inspect.KafkaClient, now func() time.Time, id string) traceMsg {
	t, err := in.Trace(ctx, id)
	if err != nil {
		return traceMsg{id: id, text: "KAFKA RECORD\n  could not trace the event: " + termtext.Sanitize(err.Error())}
	}
	if kafka != nil {
		t.Kafka = inspect.CheckRecord(ctx, kafka, t.Event, traceTimeout)
	}
	return traceMsg{id: id, text: traceText(t, kafka != nil, now())}
}

// traceText lays out the record. Every piece of event data
// passes through Sanitize here.
func traceText(t inspect.Trace, withKafka bool, now time.Time) string {
	var b strings.Builder
	when := func(at time.Time) string {
		return inspect.DisplayTime(at) + " (" + inspect.Relative(at, now) + ")"
	}
	b.WriteString("KAFKA RECORD\n")
	k := t.Kafka
	switch {
	case t.KafkaTopic == "" || t.KafkaPartition == nil || t.KafkaOffset == nil:
		b.WriteString("  none: the relay has not marked this event published\n")
	case !withKafka:
		fmt.Fprintf(&b, "  %s [%d] @%d: not read back (this console has no Kafka connection)\n", termtext.Sanitize(t.KafkaTopic), *t.KafkaPartition, *t.KafkaOffset)
	case k.Err != "":
		fmt.Fprintf(&b, "  COULD NOT READ %s [%d] @%d: %s\n", termtext.Sanitize(k.Topic), k.Partition, k.Offset, termtext.Sanitize(k.Err))
	case !k.Found:
		fmt.Fprintf(&b, "  MISSING at %s [%d] @%d: %s\n", termtext.Sanitize(k.Topic), k.Partition, k.Offset, termtext.Sanitize(k.Missing))
	default:
		fmt.Fprintf(&b, "  found at %s [%d] @%d · key %s · value %d bytes\n", termtext.Sanitize(k.Topic), k.Partition, k.Offset, termtext.Sanitize(k.Key), k.ValueBytes)
		if note := k.ValueNote(t.PayloadBytes); note != "" {
			b.WriteString("  " + note + "\n")
		}
		if k.Timestamp != nil {
			b.WriteString("  written at " + when(*k.Timestamp) + "\n")
		}
		for _, m := range k.Mismatches {
			b.WriteString("  MISMATCH: " + termtext.Sanitize(m) + "\n")
		}
		for _, h := range k.Headers {
			fmt.Fprintf(&b, "  %-16s %s\n", termtext.Sanitize(h.Key), bounded(termtext.Sanitize(h.Value)))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (d *detailModel) setTrace(msg traceMsg) {
	if msg.id != d.id {
		return
	}
	d.trace = msg.text
	d.show()
}
