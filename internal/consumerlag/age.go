package consumerlag

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type position struct {
	topic     string
	partition int32
	offset    int64
}

// readAges fills in the oldest unconsumed record's timestamp of every partition
// with lag, and the ages of topics and groups. A client consumes a partition at
// one offset, so groups at different offsets of one partition take rounds: round
// k reads every partition at its k-th distinct offset. All rounds share
// AgeTimeout; what is not read by then has no age.
func (c *Checker) readAges(ctx context.Context, r *Report) error {
	want := map[position]*time.Time{}
	for _, g := range r.Groups {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.Error == "" && p.Lag > 0 && len(want) < c.opts.MaxAgeReads {
					// No commit: the group starts from the beginning of the log.
					want[position{t.Topic, p.Partition, max(p.Committed, p.Start)}] = nil
				}
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.AgeTimeout)
	defer cancel()
	var rounds []map[string]map[int32]int64
	for pos := range want {
		k := 0
		for ; k < len(rounds); k++ {
			if _, taken := rounds[k][pos.topic][pos.partition]; !taken {
				break
			}
		}
		if k == len(rounds) {
			rounds = append(rounds, map[string]map[int32]int64{})
		}
		if rounds[k][pos.topic] == nil {
			rounds[k][pos.topic] = map[int32]int64{}
		}
		rounds[k][pos.topic][pos.partition] = pos.offset
	}
	var firstErr error
	for _, round := range rounds {
		if err := c.readRound(ctx, round, want); err != nil && firstErr == nil {
			firstErr = err
		}
	}

	now := r.TakenAt
	for gi := range r.Groups {
		g := &r.Groups[gi]
		for ti := range g.Topics {
			t := &g.Topics[ti]
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				if p.Error != "" || p.Lag <= 0 {
					continue
				}
				at := want[position{t.Topic, p.Partition, max(p.Committed, p.Start)}]
				if at == nil {
					continue
				}
				p.OldestAt = at
				age := Seconds(max(now.Sub(*at), 0))
				if t.OldestAge == nil || age > *t.OldestAge {
					t.OldestAge = &age
				}
			}
			if t.OldestAge != nil && (g.OldestAge == nil || *t.OldestAge > *g.OldestAge) {
				g.OldestAge = t.OldestAge
			}
		}
	}
	if ctx.Err() != nil && firstErr == nil {
		for _, at := range want {
			if at == nil {
				return ctx.Err()
			}
		}
	}
	return firstErr
}

// readRound consumes the partitions of one round at their offsets until it has
// the first record of each, or ctx ends. A committed offset past a deleted or
// compacted record yields the next record after it: still the oldest unconsumed.
func (c *Checker) readRound(ctx context.Context, round map[string]map[int32]int64, want map[position]*time.Time) error {
	consume := map[string]map[int32]kgo.Offset{}
	left := 0
	for t, ps := range round {
		consume[t] = map[int32]kgo.Offset{}
		for p, o := range ps {
			consume[t][p] = kgo.NewOffset().At(o)
			left++
		}
	}
	cl, err := c.dial(kgo.ConsumePartitions(consume), kgo.FetchMaxWait(250*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var refused error
	for left > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		// A refusal that retrying cannot change (no Read ACL on the topic) ends the
		// wait for what it refused instead of letting it run into the timeout.
		for _, fe := range fs.Errors() {
			ke, ok := errors.AsType[*kerr.Error](fe.Err)
			if !ok || ke.Retriable {
				continue
			}
			refused = fmt.Errorf("%s: %w", fe.Topic, fe.Err)
			for p := range round[fe.Topic] {
				if fe.Partition < 0 || p == fe.Partition {
					delete(round[fe.Topic], p)
					left--
				}
			}
		}
		fs.EachRecord(func(rec *kgo.Record) {
			o, ok := round[rec.Topic][rec.Partition]
			if !ok {
				return
			}
			ts := rec.Timestamp
			want[position{rec.Topic, rec.Partition, o}] = &ts
			delete(round[rec.Topic], rec.Partition)
			left--
			cl.PauseFetchPartitions(map[string][]int32{rec.Topic: {rec.Partition}})
		})
	}
	return refused
}
