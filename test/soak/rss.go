package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/pgtemp"
)

// runRSS measures the resident memory of `outboxtop --headless --drain` while
// it drains a backlog: the relay holds at most batch size × in-flight events, so
// its peak must not grow with the backlog.
func runRSS(args []string) int {
	fs := pflag.NewFlagSet("soak rss", pflag.ContinueOnError)
	events := fs.Int("events", 1_000_000, "backlog to drain")
	brokers := fs.String("brokers", "127.0.0.1:19092", "Kafka brokers")
	batch := fs.Int("batch-size", 1000, "the relay's --batch-size")
	inFlight := fs.Int("in-flight", 4, "the relay's --in-flight")
	payload := fs.Int("payload-bytes", 200, "padding in each event's payload")
	binary := fs.String("binary", "", "outboxtop binary (default: go build one)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := measureRSS(*events, *brokers, *batch, *inFlight, *payload, *binary); err != nil {
		fmt.Fprintln(os.Stderr, "soak rss:", err)
		return 1
	}
	return 0
}

func measureRSS(n int, brokers string, batch, inFlight, payload int, bin string) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "outboxtop-rss-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if bin == "" {
		bin = filepath.Join(work, "outboxtop")
		build := exec.Command("go", "build", "-o", bin, "github.com/outboxtop/outboxtop")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building outboxtop: %w", err)
		}
	}
	// fsync off: this measures the relay's memory, not the disk.
	cluster, err := pgtemp.Start(ctx, pgtemp.Options{NoFsync: true})
	if err != nil {
		return err
	}
	defer cluster.Close()
	dsn := cluster.DSN("postgres")
	if out, err := exec.Command(bin, "migrate", "--dsn", dsn).CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v: %s", err, out)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	began := time.Now()
	const chunk = 100_000
	for lo := 1; lo <= n; lo += chunk {
		hi := min(lo+chunk-1, n)
		if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', 'o-' || (g % 10000), 'OrderPlaced',
			       jsonb_build_object('n', g, 'padding', repeat('x', $3))
			FROM generate_series($1::int, $2::int) g ORDER BY g`, lo, hi, payload); err != nil {
			return fmt.Errorf("filling the backlog: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE outbox_event`); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak rss: %d events in the backlog after %.0fs\n", n, time.Since(began).Seconds())

	topic := fmt.Sprintf("rss%d.outbox.order", time.Now().Unix())
	if err := createTopics(ctx, brokers, []string{topic}); err != nil {
		return err
	}
	defer deleteTopic(brokers, topic)

	logPath := filepath.Join(work, "relay.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(bin, "--headless", "--drain", "--dsn", dsn, "--brokers", brokers,
		"--topic-template", strings.TrimSuffix(topic, "order")+"{aggregate_type}",
		"--batch-size", strconv.Itoa(batch), "--in-flight", strconv.Itoa(inFlight), "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = lf, lf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	type sample struct {
		at        time.Duration
		published int64
		rssKB     int64
	}
	var samples []sample
	var peakKB int64
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastCount := time.Time{}
	var published int64
	var runErr error
loop:
	for {
		select {
		case runErr = <-done:
			break loop
		case <-tick.C:
		}
		rss, hwm := procMemory(status)
		peakKB = max(peakKB, hwm)
		if time.Since(lastCount) >= time.Second {
			lastCount = time.Now()
			_ = conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL`).Scan(&published)
			samples = append(samples, sample{time.Since(start), published, rss})
		}
	}
	elapsed := time.Since(start)
	if runErr != nil {
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("relay exited with %v: %s", runErr, log)
	}
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL`).Scan(&published)
	if published != int64(n) {
		return fmt.Errorf("drain ended with %d of %d published", published, n)
	}
	fmt.Printf("drained %d events (payload ~%d B) with --batch-size %d --in-flight %d in %.1fs (%.0f events/s)\n",
		n, payload+30, batch, inFlight, elapsed.Seconds(), float64(n)/elapsed.Seconds())
	fmt.Printf("peak RSS (VmHWM) %.1f MiB\n", float64(peakKB)/1024)
	fmt.Printf("RSS while draining:")
	for _, q := range []float64{0.1, 0.25, 0.5, 0.75, 0.9} {
		for _, s := range samples {
			if float64(s.published) >= q*float64(n) {
				fmt.Printf("  %.0f%% published: %.1f MiB", q*100, float64(s.rssKB)/1024)
				break
			}
		}
	}
	fmt.Println()
	return nil
}

// procMemory reads VmRSS and VmHWM (kB) from /proc/PID/status.
func procMemory(path string) (rss, hwm int64) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}

func deleteTopic(brokers, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topic)
}
