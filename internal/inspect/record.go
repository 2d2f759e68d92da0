package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaClient makes a Kafka client with the caller's connection settings (brokers,
// TLS, SASL) plus opts. CheckRecord makes one per check and closes it.
type KafkaClient func(opts ...kgo.Opt) (*kgo.Client, error)

// RecordCheck is what Kafka holds at an event's coordinates.
type RecordCheck struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Found: a record is at exactly that offset. Missing says why not when the
	// partition could be read; Err when it could not (broker unreachable, no
	// such topic, not authorized).
	Found   bool   `json:"found"`
	Missing string `json:"missing,omitempty"`
	Err     string `json:"error,omitempty"`
	// The partition's log start offset and high watermark, when read.
	LogStart      int64 `json:"log_start_offset"`
	HighWatermark int64 `json:"high_watermark"`
	// The record, when found.
	Key        string         `json:"key,omitempty"`
	Headers    []RecordHeader `json:"headers,omitempty"`
	ValueBytes int            `json:"value_bytes,omitempty"`
	Timestamp  *time.Time     `json:"timestamp,omitempty"`
	// Mismatches name what in the record disagrees with the row: a key that is not
	// the aggregate_id, an event_id header that is not the event's id. Either means
	// the row points at another event's record.
	Mismatches []string `json:"mismatches,omitempty"`
}

// RecordHeader is one Kafka record header; values are the bytes as text.
type RecordHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ValueNote says how the record's value differs in size from the event's
// payload (Event.PayloadBytes, its JSON text, which is what the relay writes
// as the value): "" when they are the same size, or when the record was not
// found.
func (c *RecordCheck) ValueNote(payloadBytes int) string {
	if c == nil || !c.Found || c.ValueBytes == payloadBytes {
		return ""
	}
	return fmt.Sprintf("the value is not the payload's %d bytes as JSON text: another writer's serialization, or the payload changed since", payloadBytes)
}

// OK reports whether the record is where the row says, and is this event's.
func (c *RecordCheck) OK() bool { return c != nil && c.Found && len(c.Mismatches) == 0 }

// CheckRecord reads the record at ev's Kafka coordinates and compares it with the
// row. It returns nil when the row has no coordinates (it was never marked
// published). Failures to reach Kafka are in the result's Err, not an error: the
// database side of a trace stays useful without Kafka. timeout bounds the whole
// check.
func CheckRecord(ctx context.Context, newClient KafkaClient, ev Event, timeout time.Duration) *RecordCheck {
	if ev.KafkaTopic == "" || ev.KafkaPartition == nil || ev.KafkaOffset == nil {
		return nil
	}
	c := &RecordCheck{Topic: ev.KafkaTopic, Partition: *ev.KafkaPartition, Offset: *ev.KafkaOffset}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rec, err := c.read(ctx, newClient)
	switch {
	case err != nil:
		c.Err = err.Error()
	case rec != nil:
		c.compare(rec, ev)
	}
	return c
}

// read fills the partition's bounds and returns the record at the offset, or nil
// with Missing set.
func (c *RecordCheck) read(ctx context.Context, newClient KafkaClient) (*kgo.Record, error) {
	// The record is fetched only when the offsets say it can be there: a fetch past
	// the high watermark waits for a record that may never come, and one below the
	// log start would be reset to another offset.
	cl, err := newClient(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: {c.Partition: kgo.NewOffset().At(c.Offset)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxWait(time.Second),
	)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, c.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("reading the log start of %s: %w", c.Topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, c.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("reading the end of %s: %w", c.Topic, err)
	}
	start, ok1 := starts.Lookup(c.Topic, c.Partition)
	end, ok2 := ends.Lookup(c.Topic, c.Partition)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("topic %s has no partition %d", c.Topic, c.Partition)
	}
	c.LogStart, c.HighWatermark = start.Offset, end.Offset
	switch {
	case c.Offset < c.LogStart:
		c.Missing = fmt.Sprintf("deleted: offset %d is below the partition's log start %d (retention, DeleteRecords or a recreated topic)", c.Offset, c.LogStart)
		return nil, nil
	case c.Offset >= c.HighWatermark:
		c.Missing = fmt.Sprintf("not in the log: offset %d is at or past the partition's end %d (a recreated topic, or another cluster)", c.Offset, c.HighWatermark)
		return nil, nil
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s[%d]@%d: %w", c.Topic, c.Partition, c.Offset, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("reading %s[%d]@%d: %w", c.Topic, c.Partition, c.Offset, ferr)
		}
		for _, r := range fs.Records() {
			if r.Offset == c.Offset {
				return r, nil
			}
			if r.Offset > c.Offset {
				c.Missing = fmt.Sprintf("not in the log: the partition holds offsets %d to %d but the next record after %d is at %d (compacted away, or an aborted transaction)",
					c.LogStart, c.HighWatermark-1, c.Offset, r.Offset)
				return nil, nil
			}
		}
	}
}

func (c *RecordCheck) compare(r *kgo.Record, ev Event) {
	c.Found = true
	c.Key = string(r.Key)
	c.ValueBytes = len(r.Value)
	ts := r.Timestamp.UTC()
	c.Timestamp = &ts
	var eventID []string
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, RecordHeader{Key: h.Key, Value: string(h.Value)})
		// The relay's contract: every record carries its event_id header.
		if h.Key == "event_id" {
			eventID = append(eventID, string(h.Value))
		}
	}
	if c.Key != ev.AggregateID {
		c.Mismatches = append(c.Mismatches, fmt.Sprintf("record key %q is not the event's aggregate_id %q", c.Key, ev.AggregateID))
	}
	switch {
	case len(eventID) == 0:
		c.Mismatches = append(c.Mismatches, "the record has no event_id header")
	case len(eventID) > 1:
		c.Mismatches = append(c.Mismatches, fmt.Sprintf("the record has %d event_id headers", len(eventID)))
	case eventID[0] != ev.EventID:
		c.Mismatches = append(c.Mismatches, fmt.Sprintf("the record's event_id header is %s, not %s: the row points at another event's record", eventID[0], ev.EventID))
	}
}
