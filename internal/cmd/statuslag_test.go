package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// lagKafka produces n records stamped a minute ago to topic and lets each group
// commit its first count records: consumers that stopped there.
func lagKafka(t *testing.T, brokers []string, topic string, n int, groups map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", i), Timestamp: time.Now().Add(-time.Minute)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for group, count := range groups {
		c, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var got []*kgo.Record
		for len(got) < count && ctx.Err() == nil {
			got = append(got, c.PollRecords(ctx, count-len(got)).Records()...)
		}
		if len(got) < count {
			t.Fatalf("%s read %d of %d records", group, len(got), count)
		}
		if err := c.CommitRecords(ctx, got[:count]...); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// lagDB is outboxDB whose published event went to topic.
func lagDB(t *testing.T, topic string) map[string]string {
	t.Helper()
	env, pool := outboxDB(t)
	if _, err := pool.Exec(context.Background(), `UPDATE outbox_event SET kafka_topic = $1, kafka_partition = 0, kafka_offset = 0
		WHERE published_at IS NOT NULL`, topic); err != nil {
		t.Fatal(err)
	}
	return env
}

type lagStatusJSON struct {
	Consumers struct {
		Topics []string
		Groups []struct {
			Name      string
			Lag       int64
			OldestAge *float64 `json:"oldest_unconsumed_age_seconds"`
			Error     string
			Topics    []struct {
				Topic string
				Lag   int64
			}
		}
		Errors []string
	}
	Check struct {
		Level      string
		Crossed    []string
		Thresholds []struct {
			Name              string
			Value             float64
			Warning, Critical *float64
		}
	}
}

func TestStatusChecksConsumerLag(t *testing.T) {
	t.Parallel()
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	topic, p := k.Prefix+"outbox.order", k.Prefix
	lagKafka(t, k.Brokers, topic, 10, map[string]int{p + "billing": 5, p + "audit": 1})
	env := lagDB(t, topic)
	env["KAFKA_BROKERS"] = strings.Join(k.Brokers, ",")
	quiet := []string{"status", "--warn-failed", "-1", "--warn-blocked", "-1", "--groups", p + "*", "--exclude-groups", p + "audit",
		"--warn-lag-age", "0", "--crit-lag-age", "0"} // the records are a minute old: past the default age check

	for _, c := range []struct {
		args    []string
		code    int
		crossed string
	}{
		{nil, ExitOK, ""},
		{[]string{"--max-lag", "3"}, ExitCritical, "lag " + p + "billing 5 > 3"},
		{[]string{"--warn-lag", "3", "--crit-lag", "10"}, ExitWarning, "lag " + p + "billing 5 > 3"},
		{[]string{"--max-lag", "5"}, ExitOK, ""}, // strictly greater crosses
		{[]string{"--crit-lag", "20", "--max-lag", "4"}, ExitCritical, "lag " + p + "billing 5 > 4"},
		{[]string{"--crit-lag-age", "30s"}, ExitCritical, "oldest unconsumed " + p + "billing 1m"},
		{[]string{"--warn-lag-age", "1h"}, ExitOK, ""},
	} {
		args := append(append(slices.Clone(quiet), "--json"), c.args...)
		r := run(t, env, args...)
		var s lagStatusJSON
		if err := json.Unmarshal([]byte(r.out), &s); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, r.out)
		}
		if r.code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, r.code, c.code, r.err)
		}
		if c.crossed != "" && (len(s.Check.Crossed) != 1 || !strings.HasPrefix(s.Check.Crossed[0], c.crossed)) {
			t.Errorf("%v: crossed %q, want %q", c.args, s.Check.Crossed, c.crossed)
		}
		if len(s.Consumers.Groups) != 1 || s.Consumers.Groups[0].Name != p+"billing" || s.Consumers.Groups[0].Lag != 5 ||
			len(s.Consumers.Groups[0].Topics) != 1 || s.Consumers.Groups[0].Topics[0].Lag != 5 {
			t.Fatalf("%v: consumers %+v, want billing alone (audit excluded) with lag 5 on %s", c.args, s.Consumers, topic)
		}
		if age := s.Consumers.Groups[0].OldestAge; age == nil || *age < 60 {
			t.Errorf("%v: oldest unconsumed age %v, want at least 60 s", c.args, age)
		}
		if !slices.Equal(s.Consumers.Topics, []string{topic}) {
			t.Errorf("%v: topics %v, want the published event's %s", c.args, s.Consumers.Topics, topic)
		}
		var found bool
		for _, th := range s.Check.Thresholds {
			found = found || (th.Name == "lag "+p+"billing" && th.Value == 5)
		}
		if !found {
			t.Errorf("%v: thresholds %+v lack billing's lag", c.args, s.Check.Thresholds)
		}
	}

	if r := run(t, env, quiet...); r.code != ExitOK || !strings.Contains(firstLine(r.out), ", consumer lag 5 ("+p+"billing) |") {
		t.Errorf("OK summary %q lacks the largest lag", firstLine(r.out))
	}
	r := run(t, env, append(slices.Clone(quiet), "--warn-lag", "3")...)
	line := firstLine(r.out)
	if r.code != ExitWarning || !statusLine.MatchString(line) || !strings.Contains(line, " max_lag=5;3;100000;0") {
		t.Errorf("text: exit %d, first line %q", r.code, line)
	}
	if !strings.Contains(r.out, "\nconsumers (lag on the outbox's topics):\n  "+p+"billing (Empty, 0 members): lag 5, oldest unconsumed 1m") ||
		!strings.Contains(r.out, "\n    "+topic+": lag 5") {
		t.Errorf("text report lacks the consumers:\n%s", r.out)
	}

	// With brokers the default lag checks are in force: WARNING past 10,000
	// records or a minute, CRITICAL past 100,000 or 5 minutes. billing's 5
	// records are below the count's bounds and past the age's WARNING one.
	r = run(t, env, "status", "--warn-failed", "-1", "--warn-blocked", "-1", "--groups", p+"*", "--exclude-groups", p+"audit", "--json")
	var d lagStatusJSON
	if err := json.Unmarshal([]byte(r.out), &d); err != nil || r.code != ExitWarning || len(d.Check.Crossed) != 1 ||
		!strings.HasPrefix(d.Check.Crossed[0], "oldest unconsumed "+p+"billing 1m") || !strings.HasSuffix(d.Check.Crossed[0], " > 1m0s") {
		t.Errorf("default lag checks: exit %d, %v, crossed %q\n%s", r.code, err, d.Check.Crossed, r.out)
	}
	for _, th := range d.Check.Thresholds {
		if th.Name == "lag "+p+"billing" && (th.Warning == nil || *th.Warning != 10000 || th.Critical == nil || *th.Critical != 100000) {
			t.Errorf("default lag bounds: %+v", th)
		}
	}
	// The variables override the defaults as the flags do.
	env2 := maps.Clone(env)
	env2["OUTBOXTOP_WARN_LAG_AGE"], env2["OUTBOXTOP_WARN_LAG"] = "1h", "4"
	if r := run(t, env2, "status", "--warn-failed", "-1", "--warn-blocked", "-1", "--groups", p+"*", "--exclude-groups", p+"audit"); r.code != ExitWarning ||
		!strings.HasPrefix(r.out, "OUTBOXTOP WARNING - lag "+p+"billing 5 > 4 |") {
		t.Errorf("OUTBOXTOP_WARN_LAG=4: exit %d\n%s", r.code, firstLine(r.out))
	}

	// Without Kafka there is no lag to check: bad usage, not CRITICAL.
	delete(env, "KAFKA_BROKERS")
	if r := run(t, env, "status", "--max-lag", "3"); r.code != ExitStatusUsage || !strings.Contains(r.err, "--brokers") {
		t.Errorf("--max-lag without brokers: exit %d, %q", r.code, r.err)
	}
	if r := run(t, env, "status", "--warn-failed", "-1", "--warn-blocked", "-1", "--json"); r.code != ExitOK || strings.Contains(r.out, `"consumers"`) {
		t.Errorf("no brokers: exit %d, consumers shown:\n%s", r.code, r.out)
	}
}

// A broker refusing to describe a group: status reports the group and measures
// the others; with a lag threshold in force the check cannot say OK.
func TestStatusReportsARefusedGroup(t *testing.T) {
	t.Parallel()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "outbox.order"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	lagKafka(t, fake.ListenAddrs(), "outbox.order", 4, map[string]int{"secret": 1, "open": 2})
	fake.ControlKey(int16(kmsg.DescribeGroups), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		req := kr.(*kmsg.DescribeGroupsRequest)
		if !slices.Contains(req.Groups, "secret") {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	// And no Read on the topic: the oldest records cannot be read.
	fake.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	env := lagDB(t, "outbox.order")
	env["KAFKA_BROKERS"] = strings.Join(fake.ListenAddrs(), ",")
	for _, c := range []struct {
		args    []string
		code    int
		crossed []string
	}{
		{[]string{"--warn-lag", "-1", "--crit-lag", "-1", "--warn-lag-age", "0", "--crit-lag-age", "0"}, ExitOK, nil},
		{[]string{"--max-lag", "100", "--warn-lag-age", "0", "--crit-lag-age", "0"}, ExitWarning, []string{"consumer group secret not measured"}},
		// The default lag checks are in force: neither can say the consumers are fine.
		{nil, ExitWarning, []string{"consumer group secret not measured",
			"consumer lag: reading the oldest unconsumed records: outbox.order: TOPIC_AUTHORIZATION_FAILED"}},
		// The age checked but not readable: that is said too.
		{[]string{"--warn-lag-age", "1h"}, ExitWarning, []string{"consumer group secret not measured",
			"consumer lag: reading the oldest unconsumed records: outbox.order: TOPIC_AUTHORIZATION_FAILED"}},
	} {
		r := run(t, env, append([]string{"status", "--json", "--warn-failed", "-1", "--warn-blocked", "-1"}, c.args...)...)
		var s lagStatusJSON
		if err := json.Unmarshal([]byte(r.out), &s); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if r.code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, r.code, c.code, r.err)
		}
		if len(s.Consumers.Groups) != 2 || s.Consumers.Groups[0].Name != "open" || s.Consumers.Groups[0].Lag != 2 ||
			!strings.Contains(s.Consumers.Groups[1].Error, "GROUP_AUTHORIZATION_FAILED") {
			t.Errorf("%v: consumers %+v, want open measured and secret refused", c.args, s.Consumers)
		}
		if len(s.Check.Crossed) != len(c.crossed) {
			t.Errorf("%v: crossed %q, want %q", c.args, s.Check.Crossed, c.crossed)
			continue
		}
		for i, want := range c.crossed {
			if !strings.HasPrefix(s.Check.Crossed[i], want) {
				t.Errorf("%v: crossed %q, want %q", c.args, s.Check.Crossed, c.crossed)
			}
		}
	}
}
