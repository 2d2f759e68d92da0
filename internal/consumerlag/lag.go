package consumerlag

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Dial returns a Kafka client built with the caller's connection settings
// (brokers, TLS, SASL) plus opts. The Checker uses it once for its admin client
// and once per round of oldest-record reads (with consumer options).
type Dial func(opts ...kgo.Opt) (*kgo.Client, error)

// Options select what a Checker measures.
type Options struct {
	// Groups, when not empty, are the only groups measured: names or path.Match
	// patterns ("billing-*").
	Groups []string
	// Exclude drops groups (names or patterns) even when Groups matches them.
	Exclude []string
	// AgeTimeout bounds reading the oldest unconsumed records (default 2 s; negative:
	// no ages are read).
	AgeTimeout time.Duration
	// MaxAgeReads caps the partitions whose oldest unconsumed record is read in one
	// Check (default 256); partitions past it have no age.
	MaxAgeReads int
}

// Report is one Check: the groups reading the outbox's topics and their lag.
type Report struct {
	TakenAt time.Time `json:"taken_at"`
	// Topics are the outbox's topics the check looked for.
	Topics []string `json:"topics"`
	// Groups are sorted by name; a group that could not be described or whose
	// offsets could not be fetched has Error set and no lag.
	Groups []Group `json:"groups"`
	// Errors are what stopped parts of the check as a whole (listing groups on a
	// broker, listing a topic's offsets).
	Errors []string `json:"errors"`
	// AgeError is why oldest unconsumed records were not read (the timeout, no
	// Read permission on a topic); the lag does not depend on them.
	AgeError string `json:"age_error,omitempty"`
}

// Group is one consumer group's lag on the outbox's topics.
type Group struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Members int    `json:"members"`
	// Lag is the sum of the topics' lag.
	Lag int64 `json:"lag"`
	// OldestAge is the age of the oldest unconsumed record read on any topic; nil
	// when none was read (no lag, or not read in time).
	OldestAge *Seconds `json:"oldest_unconsumed_age_seconds"`
	Topics    []Topic  `json:"topics"`
	Error     string   `json:"error,omitempty"`
}

// Topic is a group's lag on one topic.
type Topic struct {
	Topic      string      `json:"topic"`
	Lag        int64       `json:"lag"`
	OldestAge  *Seconds    `json:"oldest_unconsumed_age_seconds"`
	Partitions []Partition `json:"partitions"`
}

// Partition is a group's position on one partition.
type Partition struct {
	Partition int32 `json:"partition"`
	// Committed is the group's committed offset, -1 when it has none.
	Committed int64 `json:"committed"`
	Start     int64 `json:"start"`
	End       int64 `json:"end"`
	// Lag is -1 when it could not be computed (see Error).
	Lag int64 `json:"lag"`
	// OldestAt is the timestamp of the record at the committed offset (the oldest
	// unconsumed), when it was read.
	OldestAt *time.Time `json:"oldest_unconsumed_at,omitempty"`
	Error    string     `json:"error,omitempty"`
}

// Seconds is a duration that JSON shows as seconds, with millisecond precision.
type Seconds time.Duration

// MarshalJSON writes seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Round(time.Millisecond).Seconds(), 'f', -1, 64)), nil
}

// Duration returns s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }

// MaxLag is the largest lag of any measured group, and that group's name.
func (r Report) MaxLag() (int64, string) {
	var n int64
	var name string
	for _, g := range r.Groups {
		if g.Error == "" && (name == "" || g.Lag > n) {
			n, name = g.Lag, g.Name
		}
	}
	return n, name
}

// Checker measures consumer lag through the brokers.
type Checker struct {
	dial  Dial
	admin *kadm.Client
	cl    *kgo.Client
	opts  Options
	now   func() time.Time
}

// New returns a Checker that reaches the brokers through dial. Close it.
func New(dial Dial, opts Options) (*Checker, error) {
	for _, p := range append(slices.Clone(opts.Groups), opts.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("group pattern %q: %w", p, err)
		}
	}
	if opts.AgeTimeout == 0 {
		opts.AgeTimeout = 2 * time.Second
	}
	if opts.MaxAgeReads <= 0 {
		opts.MaxAgeReads = 256
	}
	cl, err := dial()
	if err != nil {
		return nil, err
	}
	return &Checker{dial: dial, admin: kadm.NewClient(cl), cl: cl, opts: opts, now: time.Now}, nil
}

// Close closes the admin client.
func (c *Checker) Close() { c.cl.Close() }

// wanted reports whether the options select group.
func (o Options) wanted(group string) bool {
	match := func(ps []string) bool {
		for _, p := range ps {
			if ok, _ := path.Match(p, group); ok {
				return true
			}
		}
		return false
	}
	return (len(o.Groups) == 0 || match(o.Groups)) && !match(o.Exclude)
}

// Check measures the lag of the selected groups on topics (nil: every topic a
// group reads). Problems go into the Report; ctx bounds the whole check.
func (c *Checker) Check(ctx context.Context, topics []string) Report {
	r := Report{TakenAt: c.now(), Topics: slices.Sorted(slices.Values(topics)), Groups: []Group{}, Errors: []string{}}
	if topics != nil && len(topics) == 0 {
		return r
	}
	outbox := func(t string) bool { return topics == nil || slices.Contains(topics, t) }

	listed, err := c.admin.ListGroups(ctx)
	if err != nil {
		r.Errors = append(r.Errors, "listing groups: "+shardErrors(err))
		if se, ok := errors.AsType[*kadm.ShardErrors](err); !ok || se.AllFailed {
			return r
		}
	}
	var names []string
	for _, name := range listed.Groups() {
		if c.opts.wanted(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return r
	}

	described, failed := c.describe(ctx, names, listed)
	var ok []string
	for _, name := range names {
		if _, done := described[name]; done {
			ok = append(ok, name)
		}
	}
	fetched := c.admin.FetchManyOffsets(ctx, ok...)
	for _, name := range ok {
		if f, in := fetched[name]; !in || f.Err != nil {
			e := errors.New("no answer")
			if in {
				e = f.Err
			}
			failed[name] = "fetching offsets: " + e.Error()
			delete(described, name)
		}
	}

	// The outbox's topics that any measured group reads, or was assigned, or committed.
	read := map[string]bool{}
	for name, g := range described {
		set := g.AssignedPartitions()
		set.MergeTopics(g.JoinTopics())
		set.Merge(fetched[name].Fetched.Partitions())
		for _, t := range set.Topics() {
			if outbox(t) {
				read[t] = true
			}
		}
	}
	var starts, ends kadm.ListedOffsets
	if len(read) > 0 {
		ts := slices.Sorted(maps.Keys(read))
		if starts, err = c.admin.ListStartOffsets(ctx, ts...); err != nil {
			r.Errors = append(r.Errors, "listing start offsets: "+shardErrors(err))
		}
		if ends, err = c.admin.ListEndOffsets(ctx, ts...); err != nil {
			r.Errors = append(r.Errors, "listing end offsets: "+shardErrors(err))
		}
	}

	for name, msg := range failed {
		r.Groups = append(r.Groups, Group{Name: name, Topics: []Topic{}, Error: msg})
	}
	for name, g := range described {
		lag := kadm.CalculateGroupLagWithStartOffsets(g, fetched[name].Fetched, starts, ends)
		grp := Group{Name: name, State: g.State, Members: len(g.Members), Topics: []Topic{}}
		for _, t := range slices.Sorted(maps.Keys(lag)) {
			if !outbox(t) {
				continue
			}
			top := Topic{Topic: t}
			for _, m := range sortedPartitions(lag[t]) {
				p := Partition{Partition: m.Partition, Committed: m.Commit.At, Start: m.Start.Offset, End: m.End.Offset, Lag: m.Lag}
				if m.Err != nil {
					p.Error = m.Err.Error()
				} else if p.Lag > 0 {
					top.Lag += p.Lag
				}
				top.Partitions = append(top.Partitions, p)
			}
			grp.Lag += top.Lag
			grp.Topics = append(grp.Topics, top)
		}
		if len(grp.Topics) > 0 {
			r.Groups = append(r.Groups, grp)
		}
	}
	sort.Slice(r.Groups, func(i, j int) bool { return r.Groups[i].Name < r.Groups[j].Name })
	if c.opts.AgeTimeout > 0 {
		if err := c.readAges(ctx, &r); err != nil {
			r.AgeError = "reading the oldest unconsumed records: " + err.Error()
		}
	}
	return r
}

// describe describes names in one request, and each one that failed alone, so
// that one refused group (an ACL: the broker then fails the whole request) does
// not hide the others. It returns the described groups and, by name, why the
// others could not be. Groups on KIP-848's protocol (type "consumer") are
// described by ConsumerGroupDescribe, which a broker answers for them where
// DescribeGroups may not.
func (c *Checker) describe(ctx context.Context, names []string, listed kadm.ListedGroups) (map[string]kadm.DescribedGroup, map[string]string) {
	described := map[string]kadm.DescribedGroup{}
	failed := map[string]string{}
	var classic, nextGen []string
	for _, name := range names {
		if listed[name].GroupType == "consumer" {
			nextGen = append(nextGen, name)
		} else {
			classic = append(classic, name)
		}
	}
	c.describeNextGen(ctx, nextGen, described, failed)
	names = classic
	if len(names) == 0 {
		return described, failed
	}
	all, err := c.admin.DescribeGroups(ctx, names...)
	for name, g := range all {
		if g.Err == nil {
			described[name] = g
		}
	}
	if err == nil && len(all) == len(names) && all.Error() == nil {
		return described, failed
	}
	for _, name := range names {
		if _, done := described[name]; done {
			continue
		}
		one, err := c.admin.DescribeGroups(ctx, name)
		switch g, in := one[name]; {
		case err != nil:
			failed[name] = "describing: " + shardErrors(err)
		case !in:
			failed[name] = "describing: no answer"
		case g.Err != nil:
			failed[name] = "describing: " + g.Err.Error()
		default:
			described[name] = g
		}
	}
	return described, failed
}

// describeNextGen describes KIP-848 groups into described and failed. Their
// assignments come in another shape than a classic group's; the lag is taken
// from their commits, and the members are kept for their count.
func (c *Checker) describeNextGen(ctx context.Context, names []string, described map[string]kadm.DescribedGroup, failed map[string]string) {
	if len(names) == 0 {
		return
	}
	all, err := c.admin.DescribeConsumerGroups(ctx, names...)
	for _, name := range names {
		g, in := all[name]
		switch {
		case in && g.Err == nil:
			d := kadm.DescribedGroup{Group: name, Coordinator: g.Coordinator, State: g.State, ProtocolType: "consumer"}
			for _, m := range g.Members {
				d.Members = append(d.Members, kadm.DescribedGroupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost})
			}
			described[name] = d
		case in:
			failed[name] = "describing: " + g.Err.Error()
		case err != nil:
			failed[name] = "describing: " + shardErrors(err)
		default:
			failed[name] = "describing: no answer"
		}
	}
}

// shardErrors says which broker failed how, for kadm's per-broker errors.
func shardErrors(err error) string {
	se, ok := errors.AsType[*kadm.ShardErrors](err)
	if !ok {
		return err.Error()
	}
	s := ""
	for i, e := range se.Errs {
		if i > 0 {
			s += "; "
		}
		if e.Broker.NodeID >= 0 {
			s += fmt.Sprintf("broker %d (%s:%d): ", e.Broker.NodeID, e.Broker.Host, e.Broker.Port)
		}
		s += e.Err.Error()
	}
	return s
}

func sortedPartitions(ps map[int32]kadm.GroupMemberLag) []kadm.GroupMemberLag {
	out := make([]kadm.GroupMemberLag, 0, len(ps))
	for _, m := range ps {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}
