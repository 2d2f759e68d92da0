package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/demo"
	"github.com/outboxtop/outboxtop/wire"
)

// dbEvent is what the database says about one event.
type dbEvent struct {
	seq       int64
	aggregate string // aggregate_type/aggregate_id
	eventType string
	published bool
	dead      bool
}

// runCheck is the checker: its own process, its own Kafka client. It reads the
// run's topics from the start to their end offsets, reads every event from
// outbox_event and outbox_event_archive, compares, and prints the table.
func runCheck(args []string) int {
	fs := pflag.NewFlagSet("soak check", pflag.ContinueOnError)
	dsn := fs.String("dsn", "", "the outbox database")
	brokers := fs.String("brokers", "", "Kafka brokers")
	topics := fs.String("topics", "", "topics to read, comma-separated")
	reportPath := fs.String("report", "", "run.json written by the soak (faults, backlog)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rep runReport
	if *reportPath != "" {
		b, err := os.ReadFile(*reportPath)
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak check: reading the run report:", err)
			return 1
		}
	}
	events, err := readEvents(ctx, *dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak check: reading the database:", err)
		return 1
	}
	res, err := readTopics(ctx, strings.Split(*brokers, ","), strings.Split(*topics, ","), events)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak check: reading Kafka:", err)
		return 1
	}
	return printTable(rep, events, res)
}

func readEvents(ctx context.Context, dsn string) (map[string]dbEvent, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	// An event lives in outbox_event or, archived or skipped, in the archive.
	rows, err := conn.Query(ctx, `
		SELECT event_id::text, seq, aggregate_type || '/' || aggregate_id, event_type,
		       published_at IS NOT NULL, published_at IS NULL AND failed_at IS NOT NULL
		FROM outbox_event
		UNION ALL
		SELECT event_id::text, seq, aggregate_type || '/' || aggregate_id, event_type,
		       published_at IS NOT NULL, published_at IS NULL AND failed_at IS NOT NULL
		FROM outbox_event_archive`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := map[string]dbEvent{}
	for rows.Next() {
		var id string
		var e dbEvent
		if err := rows.Scan(&id, &e.seq, &e.aggregate, &e.eventType, &e.published, &e.dead); err != nil {
			return nil, err
		}
		if _, dup := events[id]; dup {
			return nil, fmt.Errorf("event %s is both in outbox_event and in the archive", id)
		}
		events[id] = e
	}
	return events, rows.Err()
}

// kafkaResult is what Kafka holds, compared with the database as it is read.
type kafkaResult struct {
	records    int
	copies     map[string]int
	phantoms   int // records whose event_id is not in the database
	violations []string
	badKey     int // key differs from the event's aggregate_id
}

func readTopics(ctx context.Context, brokers, topics []string, events map[string]dbEvent) (*kafkaResult, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(250*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	remaining := map[string]map[int32]int64{} // partitions not read to their end yet
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if remaining[o.Topic] == nil {
				remaining[o.Topic] = map[int32]int64{}
			}
			remaining[o.Topic][o.Partition] = o.Offset
		}
	})
	left := 0
	for _, ps := range remaining {
		left += len(ps)
	}
	res := &kafkaResult{copies: map[string]int{}}
	lastSeq := map[string]int64{} // aggregate → seq of its latest first delivery
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("records still missing when the time ran out: %v", remaining)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("%s[%d]: %w", t, p, err) })
		if ferr != nil && !errors.Is(ferr, context.DeadlineExceeded) {
			return nil, ferr
		}
		// Records of one partition arrive in offset order, and an aggregate's
		// records all go to one partition (key = aggregate_id).
		fs.EachRecord(func(r *kgo.Record) {
			res.records++
			var id string
			for _, h := range r.Headers {
				if h.Key == wire.HeaderEventID {
					id = string(h.Value)
				}
			}
			e, ok := events[id]
			if !ok {
				res.phantoms++
			} else {
				if !strings.HasSuffix(e.aggregate, "/"+string(r.Key)) {
					res.badKey++
				}
				res.copies[id]++
				if res.copies[id] == 1 {
					if prev, seen := lastSeq[e.aggregate]; seen && e.seq < prev {
						res.violations = append(res.violations, fmt.Sprintf("%s: seq %d first delivered after seq %d (%s[%d]@%d)",
							e.aggregate, e.seq, prev, r.Topic, r.Partition, r.Offset))
					} else {
						lastSeq[e.aggregate] = e.seq
					}
				}
			}
			if end, ok := remaining[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining[r.Topic], r.Partition)
				left--
			}
		})
	}
	return res, nil
}

func printTable(rep runReport, events map[string]dbEvent, res *kafkaResult) int {
	var committed, published, dead, deadPoison, poison, lost int
	var lostIDs, deadOther []string
	for id, e := range events {
		committed++
		isPoison := e.eventType == demo.OrderPoisoned
		if isPoison {
			poison++
		}
		if e.published {
			published++
		}
		if e.dead {
			dead++
			if isPoison {
				deadPoison++
			} else {
				deadOther = append(deadOther, id)
			}
			continue
		}
		if res.copies[id] == 0 {
			lost++
			if len(lostIDs) < 10 {
				lostIDs = append(lostIDs, fmt.Sprintf("%s (%s seq %d, published in db: %v)", id, e.aggregate, e.seq, e.published))
			}
		}
	}
	dups := 0
	for _, c := range res.copies {
		dups += c - 1
	}
	fail := lost > 0 || len(res.violations) > 0 || len(deadOther) > 0 || res.phantoms > 0 || res.badKey > 0 ||
		len(rep.RelayProblems) > 0 || len(rep.Problems) > 0

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "outboxtop soak: %s of load at %.0f events/s, %d relays (--lease %s), Apache Kafka at %s\n\n",
		rep.Duration, rep.Rate, rep.Relays, rep.Lease, rep.Brokers)
	fmt.Fprintf(w, "measure\tvalue\t\t\n")
	fmt.Fprintf(w, "committed events (outbox_event + archive)\t%d\t\t\n", committed)
	fmt.Fprintf(w, "published (marked in the database)\t%d\t\t\n", published)
	fmt.Fprintf(w, "records in Kafka\t%d\t\t\n", res.records)
	fmt.Fprintf(w, "delivered (distinct event ids)\t%d\t\t\n", len(res.copies))
	fmt.Fprintf(w, "duplicates (extra copies)\t%d\t\t\n", dups)
	fmt.Fprintf(w, "lost\t%d\t\t\n", lost)
	fmt.Fprintf(w, "per-aggregate order violations (first deliveries vs seq)\t%d\t\t\n", len(res.violations))
	fmt.Fprintf(w, "records not in the database / with a wrong key\t%d / %d\t\t\n", res.phantoms, res.badKey)
	fmt.Fprintf(w, "dead events (poison / other)\t%d (%d of %d poison / %d)\t\t\n", dead, deadPoison, poison, len(deadOther))
	fmt.Fprintf(w, "max backlog (unpublished, not dead; behind dead)\t%d; %d\t\t\n", rep.MaxBacklog, rep.MaxBlocked)
	fmt.Fprintf(w, "order-service transactions failed (PostgreSQL restart)\t%d\t\t\n", rep.WriteErrors)
	fmt.Fprintf(w, "relays restarted after exiting by themselves\t%d\t\t\n", len(rep.RelayRestarts))
	fmt.Fprintf(w, "drain after the load stopped\t%.1fs\t\t\n", rep.Drain)
	fmt.Fprintf(w, "\t\t\t\n")
	fmt.Fprintf(w, "fault (at: seconds into the run)\tlasted\trecovery\tnote\n")
	for _, f := range rep.Faults {
		rec := "never"
		if f.Recovery >= 0 {
			rec = fmt.Sprintf("%.1fs", f.Recovery)
		}
		fmt.Fprintf(w, "%5.1fs  %s\t%.1fs\t%s\t%s\n", f.At, f.Name, f.Outage, rec, f.Note)
	}
	w.Flush()
	fmt.Println()
	fmt.Println("recovery: from the end of the fault until every event committed before that end was published")
	fmt.Println("(dead events and the events queued behind them excepted); for a poison event, until it was dead")
	fmt.Println("or queued behind an earlier dead event of its order.")
	for _, v := range res.violations {
		fmt.Println("order violation:", v)
	}
	for _, l := range lostIDs {
		fmt.Println("lost:", l)
	}
	for _, id := range deadOther {
		fmt.Println("dead but not poison:", id)
	}
	for _, p := range append(append(rep.RelayProblems, rep.Problems...), rep.RelayRestarts...) {
		fmt.Println("note:", p)
	}
	if fail {
		fmt.Println("result: FAIL")
		return 1
	}
	fmt.Println("result: PASS (0 lost, 0 order violations, only poison events dead)")
	return 0
}
