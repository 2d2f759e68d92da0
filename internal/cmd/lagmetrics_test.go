package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// TestHeadlessExportsConsumerLag: /metrics carries each group's lag on the
// outbox's topics, and scrapes read a throttled check, not the brokers.
func TestHeadlessExportsConsumerLag(t *testing.T) {
	t.Parallel()
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order", "lagged")
	lagged, p := k.Prefix+"lagged", k.Prefix
	lagKafka(t, k.Brokers, lagged, 10, map[string]int{p + "billing": 5})
	env := lagDB(t, lagged)
	var listGroups atomic.Int32
	if k.Fake != nil {
		k.Fake.ControlKey(int16(kmsg.ListGroups), func(kmsg.Request) (kmsg.Response, error, bool) {
			k.Fake.KeepControl()
			listGroups.Add(1)
			return nil, nil, false
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr logBuffer
	go func() {
		done <- Run(ctx, []string{"--headless", "--brokers", strings.Join(k.Brokers, ","), "--groups", p + "*",
			"--topic-template", p + "outbox.{aggregate_type}", "--log-level", "info",
			"--metrics-addr", "127.0.0.1:0"}, IO{
			In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr, Getenv: func(k string) string { return env[k] },
		})
	}()
	defer func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("headless: exit %d, stderr %q", code, stderr.String())
		}
	}()
	addr := metricsAddr(t, &stderr)
	want := fmt.Sprintf(`outboxtop_consumer_lag_records{group="%sbilling",topic="%s"} 5`, p, lagged)
	var metrics string
	testenv.WaitFor(t, 30*time.Second, "the consumer lag on /metrics", func() bool {
		metrics = get(t, addr, "/metrics")
		return strings.Contains(metrics, want)
	})
	for _, w := range []string{"outboxtop_consumer_lag_up 1", fmt.Sprintf(`outboxtop_consumer_group_up{group="%sbilling"} 1`, p),
		fmt.Sprintf(`outboxtop_consumer_oldest_unconsumed_age_seconds{group="%sbilling",topic="%s"} `, p, lagged)} {
		if !strings.Contains(metrics, w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	if k.Fake != nil {
		before := listGroups.Load()
		for range 5 {
			get(t, addr, "/metrics")
		}
		if after := listGroups.Load(); before < 1 || after != before {
			t.Errorf("ListGroups requests: %d for the first scrapes, %d after 5 more; want none more within --lag-interval", before, after)
		}
	}
}
