// Command bench is outboxtop's benchmark suite: throughput, latency, memory and
// console cost, measured side by side in one run on one database server and one
// broker, with the references (the SQL-only ceiling, the seed's one-at-a-time
// relay) measured in the same run. See BENCHMARKS.md.
//
//	go run ./test/bench                 # quick profile, a few minutes
//	go run ./test/bench --profile full  # the whole matrix, about an hour
//	go run ./test/bench --profile incident --pg-set wal_compression=lz4
//	go run ./test/bench --profile horizon  # a held xmin horizon, about 80 minutes
//	go run ./test/bench --only producer    # pgbench writers with and without outboxtop, about 15 minutes
//
// --baseline REV measures the relays of this tree and of the binary built from
// git revision REV side by side in the throughput part (same cluster, kfake in
// this process, runs interleaved), each on databases its own migrations made:
//
//	go run ./test/bench --only throughput --baseline eaa6c5f
//
// --events N replaces the profile's backlog sizes (a smaller, quicker run).
//
// --pg-set (repeatable) changes a server setting of the throwaway cluster, to
// measure what a setting is worth; the results name every setting changed.
//
// PostgreSQL is a throwaway cluster from the local binaries with fsync on; Kafka
// is franz-go's kfake in this process; the relays are the outboxtop binary, built
// at the start, run as separate processes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxtop/outboxtop/internal/pgtemp"
)

type profile struct {
	name       string
	sizes      []int // backlog sizes for the throughput matrix
	payloads   []int
	procs      []int
	batchSweep []int
	latencyFor time.Duration
	rates      []int
	snapshot   []int // published rows for the console-cost runs
	memory     int   // backlog drained for the peak-RSS figure
	noHot      bool  // skip the hot-aggregate backlogs in the throughput matrix
}

var profiles = map[string]profile{
	"quick": {name: "quick", sizes: []int{200_000}, payloads: []int{256}, procs: []int{1, 4},
		batchSweep: []int{100, 500, 1000, 2000}, latencyFor: 15 * time.Second, rates: []int{100, 1000, 10_000},
		snapshot: []int{1_000_000}, memory: 200_000},
	"million": {name: "million", sizes: []int{1_000_000}, payloads: []int{256}, procs: []int{1, 4}, noHot: true,
		batchSweep: []int{1000}, latencyFor: 15 * time.Second, rates: []int{1000}, snapshot: []int{1_000_000}, memory: 1_000_000},
	// incident: only the incident part (--only incident with any profile).
	"incident": {name: "incident"},
	// horizon: only the horizon part, about 80 minutes with the defaults
	// (--horizon-for, --clean-for, --writer-for, --window; horizon.go).
	"horizon": {name: "horizon"},
	// producer: only the producer part (--producer-for, --producer-rounds; producer.go).
	"producer": {name: "producer"},
	"full": {name: "full", sizes: []int{200_000, 1_000_000}, payloads: []int{256, 4096}, procs: []int{1, 4},
		batchSweep: []int{100, 250, 500, 1000, 2000, 5000}, latencyFor: 30 * time.Second, rates: []int{100, 1000, 10_000},
		snapshot: []int{1_000_000, 10_000_000}, memory: 1_000_000},
}

type env struct {
	prof      profile
	cluster   *pgtemp.Cluster
	binary    string
	base      *baseline // --baseline, nil without
	templates map[string]string
	dbs       int
	results   *results
	save      func() error // writes the results so far (a long part saves as it goes)
}

func main() {
	prof := flag.String("profile", "quick", "quick, million, full, incident, horizon or producer")
	out := flag.String("out", "bench-out", "directory for results.json and results.md")
	plots := flag.String("plots", "docs/bench", "directory for the SVG plots")
	only := flag.String("only", "", "run only these parts, comma-separated: throughput, batch, latency, memory, snapshot, incident, horizon, producer")
	base := flag.String("baseline", "", "also measure the relays of the binary built from this git revision, beside this tree's (throughput part)")
	events := flag.Int("events", 0, "backlog size replacing the profile's (throughput, batch and memory parts); 0: the profile's")
	settings := map[string]string{"shared_buffers": "1GB", "max_wal_size": "8GB", "checkpoint_timeout": "15min"}
	flag.Func("pg-set", "a PostgreSQL setting for the run, name=value (repeatable)", func(v string) error {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return fmt.Errorf("want name=value, not %q", v)
		}
		settings[name] = value
		return nil
	})
	flag.Parse()
	p, ok := profiles[*prof]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown profile %q (quick, million, full, incident, horizon or producer)\n", *prof)
		os.Exit(2)
	}
	if *events < 0 {
		fmt.Fprintln(os.Stderr, "bench: --events must not be negative")
		os.Exit(2)
	}
	if *events > 0 && p.sizes != nil {
		p.sizes, p.memory = []int{*events}, *events
	}
	if *base != "" && !runsPart(p, *only, "throughput") {
		fmt.Fprintf(os.Stderr, "bench: --baseline compares the throughput part, which profile %s with --only %q does not run\n", p.name, *only)
		os.Exit(2)
	}
	if err := run(p, *out, *plots, *only, *base, settings); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runsPart says whether profile p with --only runs the named part.
func runsPart(p profile, only, part string) bool {
	if (p.name == "incident" || p.name == "horizon" || p.name == "producer") && only == "" {
		only = p.name
	}
	if only == "" {
		return part != "incident" && part != "horizon" && part != "producer"
	}
	return slices.Contains(strings.Split(only, ","), part)
}

func run(p profile, out, plots, only, base string, settings map[string]string) error {
	ctx := context.Background()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	e := &env{prof: p, templates: map[string]string{}, results: &results{
		Profile: p.name, Started: time.Now().UTC(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), Current: currentRev()}}
	if base != "" {
		b, err := buildBaseline(base, out)
		if err != nil {
			return err
		}
		e.base, e.results.Baseline = b, b
	}
	logf("building outboxtop")
	e.binary = filepath.Join(out, "outboxtop")
	readClaimStatements() // the claim as built, for the horizon profile's EXPLAIN
	build := exec.Command("go", "build", "-o", e.binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building outboxtop: %w", err)
	}
	logf("starting PostgreSQL (fsync on)")
	c, err := pgtemp.Start(ctx, pgtemp.Options{Settings: settings})
	if err != nil {
		return err
	}
	defer c.Close()
	e.cluster = c
	e.save = func() error { return e.write(out, plots) }
	if err := e.serverInfo(ctx, settings); err != nil {
		return err
	}

	parts := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"throughput", e.throughput},
		{"batch", e.batchSweep},
		{"latency", e.latency},
		{"memory", e.memory},
		{"snapshot", e.snapshot},
		{"incident", e.incident},
		{"horizon", e.horizon},
		{"producer", e.producer},
	}
	for _, part := range parts {
		// incident, horizon and producer run only with their own profiles or --only:
		// go run ./test/bench --profile incident
		if !runsPart(p, only, part.name) {
			continue
		}
		if e.base != nil && part.name != "throughput" {
			logf("== %s (this tree only: --baseline compares the throughput part)", part.name)
		} else {
			logf("== %s", part.name)
		}
		if err := part.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", part.name, err)
		}
		if err := e.write(out, plots); err != nil {
			return err
		}
	}
	e.results.Finished = time.Now().UTC()
	return e.write(out, plots)
}

func (e *env) write(out, plots string) error {
	e.results.Comparison = e.results.comparisons()
	b, _ := json.MarshalIndent(e.results, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "results.json"), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(e.results.markdown()), 0o644); err != nil {
		return err
	}
	return e.results.plot(plots)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// newKafka starts a fresh in-process broker for one run, so no run pays for the
// records an earlier one left in memory.
func (e *env) newKafka() (*kfake.Cluster, error) {
	return kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(6), kfake.SeedTopics(6, "outbox.order"))
}
