package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type results struct {
	Profile    string           `json:"profile"`
	Started    time.Time        `json:"started"`
	Finished   time.Time        `json:"finished"`
	GoVersion  string           `json:"go_version"`
	CPUs       int              `json:"cpus"`
	Server     string           `json:"server"`
	Current    string           `json:"current,omitempty"`  // the tree built: HEAD's short revision, +dirty
	Baseline   *baseline        `json:"baseline,omitempty"` // --baseline
	Throughput []drainRun       `json:"throughput"`
	Comparison []comparison     `json:"comparison,omitempty"` // --baseline: this tree against it, per relay configuration
	BatchSweep []drainRun       `json:"batch_sweep"`
	Latency    []latencyRun     `json:"latency"`
	Memory     *drainRun        `json:"memory,omitempty"`
	Snapshot   []snapshotRun    `json:"snapshot"`
	Incident   *incidentResults `json:"incident,omitempty"`
	Horizon    *horizonResults  `json:"horizon,omitempty"`
	Producer   *producerResults `json:"producer,omitempty"`
}

func (r *results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Profile `%s`, %s, %d CPUs, %s.\n\n", r.Profile, r.GoVersion, r.CPUs, r.Server)
	if r.Baseline != nil {
		fmt.Fprintf(&b, "This tree: %s; baseline: %s (%s).\n\n", cmp.Or(r.Current, "?"), r.Baseline.Rev, truncate(r.Baseline.Subject, 80))
	}
	if len(r.Throughput) > 0 {
		b.WriteString("### Throughput (drain a backlog)\n\n")
		b.WriteString("| backlog | what | ordering | relays / loops | events/s | × ceiling | max RSS |\n|---|---|---|---|---:|---:|---:|\n")
		for _, t := range r.Throughput {
			ratio := ""
			if c := r.ceilingFor(t); c > 0 && t.Kind != "ceiling" {
				ratio = fmt.Sprintf("%.2f", t.PerSecond/c)
			}
			rss := ""
			if t.MaxRSSMB > 0 {
				rss = fmt.Sprintf("%.0f MB", t.MaxRSSMB)
			}
			what := map[string]string{"relay": "outboxtop --headless --drain", "ceiling": "SQL-only ceiling (best loops)", "seed": "seed relay, one at a time"}[t.Kind]
			if t.Kind == "relay" && r.Baseline != nil {
				what += ", " + cmp.Or(t.Binary, "this tree")
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %.0f | %s | %s |\n", t.Backlog, what, t.Ordering, t.Procs, t.PerSecond, ratio, rss)
		}
		b.WriteString("\n")
	}
	if len(r.Comparison) > 0 {
		base := r.Baseline.Rev
		fmt.Fprintf(&b, "### This tree against %s (the same runs, interleaved)\n\n", base)
		fmt.Fprintf(&b, "| backlog | ordering | relays | this tree events/s | %s events/s | this tree / %s | max RSS, this tree / %s |\n|---|---|---:|---:|---:|---:|---:|\n", base, base, base)
		for _, c := range r.Comparison {
			fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.0f | %.2f | %.0f / %.0f MB |\n", c.Backlog, c.Ordering, c.Procs, c.Current, c.Baseline, c.Ratio, c.CurrentRSSMB, c.BaselineRSSMB)
		}
		b.WriteString("\n")
	}
	if len(r.BatchSweep) > 0 {
		b.WriteString("### Throughput by batch size (ordered, 256 B, 5,000 aggregates)\n\n| relays | batch size | events/s | max RSS |\n|---:|---:|---:|---:|\n")
		for _, t := range r.BatchSweep {
			fmt.Fprintf(&b, "| %d | %d | %.0f | %.0f MB |\n", t.Procs, t.BatchSize, t.PerSecond, t.MaxRSSMB)
		}
		b.WriteString("\n")
	}
	if len(r.Latency) > 0 {
		b.WriteString("### Latency, commit → Kafka acknowledgement (one relay)\n\n| offered/s | achieved/s | events per tx | events | p50 | p99 | p99.9 | max |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, l := range r.Latency {
			fmt.Fprintf(&b, "| %d | %.0f | %d | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms |\n", l.Offered, l.Achieved, l.PerTx, l.Events, l.P50ms, l.P99ms, l.P999ms, l.Maxms)
		}
		b.WriteString("\n")
	}
	if r.Memory != nil {
		fmt.Fprintf(&b, "### Memory\n\nPeak RSS of one `outboxtop --headless --drain` draining %s (batch %d, 4 in flight): **%.0f MB**.\n\n", r.Memory.Backlog, r.Memory.BatchSize, r.Memory.MaxRSSMB)
	}
	if len(r.Snapshot) > 0 {
		b.WriteString("### Console snapshot refresh (inspect.Snapshot)\n\n| published rows | pending rows | median | p90 |\n|---:|---:|---:|---:|\n")
		for _, s := range r.Snapshot {
			fmt.Fprintf(&b, "| %s | %s | %.1f ms | %.1f ms |\n", human(s.Published), human(s.Pending), s.MedianMs, s.P90Ms)
		}
		b.WriteString("\n")
	}
	if r.Incident != nil {
		r.Incident.markdown(&b)
	}
	if r.Horizon != nil {
		r.Horizon.markdown(&b)
	}
	if r.Producer != nil {
		r.Producer.markdown(&b)
	}
	return b.String()
}

// comparison is one relay configuration measured with both binaries.
type comparison struct {
	Backlog       backlog `json:"backlog"`
	Ordering      string  `json:"ordering"`
	Procs         int     `json:"procs"`
	BatchSize     int     `json:"batch_size"`
	Current       float64 `json:"current_events_per_second"`
	Baseline      float64 `json:"baseline_events_per_second"`
	Ratio         float64 `json:"ratio"` // current / baseline
	CurrentRSSMB  float64 `json:"current_max_rss_mb"`
	BaselineRSSMB float64 `json:"baseline_max_rss_mb"`
}

// comparisons pairs each relay run of this tree with the baseline's run of the
// same configuration, in the order of the throughput runs.
func (r *results) comparisons() []comparison {
	if r.Baseline == nil {
		return nil
	}
	var out []comparison
	for _, t := range r.Throughput {
		if t.Kind != "relay" || t.Binary != "" {
			continue
		}
		for _, u := range r.Throughput {
			if u.Kind == "relay" && u.Binary == r.Baseline.Rev && u.Backlog == t.Backlog && u.Ordering == t.Ordering &&
				u.Procs == t.Procs && u.BatchSize == t.BatchSize && u.PerSecond > 0 {
				out = append(out, comparison{Backlog: t.Backlog, Ordering: t.Ordering, Procs: t.Procs, BatchSize: t.BatchSize,
					Current: t.PerSecond, Baseline: u.PerSecond, Ratio: t.PerSecond / u.PerSecond,
					CurrentRSSMB: t.MaxRSSMB, BaselineRSSMB: u.MaxRSSMB})
				break
			}
		}
	}
	return out
}

// ceilingFor is the ceiling measured on the same backlog and ordering.
func (r *results) ceilingFor(t drainRun) float64 {
	for _, c := range r.Throughput {
		if c.Kind == "ceiling" && c.Backlog == t.Backlog && (c.Ordering == t.Ordering || t.Kind == "seed" && c.Ordering == "none") {
			return c.PerSecond
		}
	}
	return 0
}

func (r *results) plot(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(r.BatchSweep) > 0 {
		var lines []series
		for _, procs := range distinct(r.BatchSweep) {
			s := series{Name: fmt.Sprintf("%d relay process(es)", procs)}
			for _, t := range r.BatchSweep {
				if t.Procs == procs {
					s.X = append(s.X, float64(t.BatchSize))
					s.Y = append(s.Y, t.PerSecond)
				}
			}
			lines = append(lines, s)
		}
		svg := lineChart("Throughput vs batch size (ordered, 256 B payloads)", "batch size (log)", "events/s", true, lines)
		if err := os.WriteFile(filepath.Join(dir, "throughput-batch.svg"), []byte(svg), 0o644); err != nil {
			return err
		}
	}
	if r.Horizon != nil {
		if err := r.Horizon.plot(dir); err != nil {
			return err
		}
	}
	if len(r.Latency) > 0 {
		p := []series{{Name: "p50"}, {Name: "p99"}, {Name: "p99.9"}}
		for _, l := range r.Latency {
			for i, v := range []float64{l.P50ms, l.P99ms, l.P999ms} {
				p[i].X = append(p[i].X, float64(l.Offered))
				p[i].Y = append(p[i].Y, v)
			}
		}
		svg := lineChart("Commit → ack latency vs offered load (one relay)", "offered events/s (log)", "ms", true, p)
		if err := os.WriteFile(filepath.Join(dir, "latency-load.svg"), []byte(svg), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func distinct(runs []drainRun) []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range runs {
		if !seen[r.Procs] {
			seen[r.Procs] = true
			out = append(out, r.Procs)
		}
	}
	return out
}
