package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The relays' claim quantiles in the incident table come from their histogram,
// interpolated as PromQL's histogram_quantile does.
func TestHistogramQuantileMs(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name    string
		buckets map[float64]float64
		q, want float64
	}{
		{"no observations", map[float64]float64{0.001: 0, inf: 0}, 0.99, 0},
		{"no buckets", map[float64]float64{}, 0.5, 0},
		{"at a bound", map[float64]float64{0.001: 0, 0.002: 50, 0.004: 100, inf: 100}, 0.5, 2},
		{"inside a bucket", map[float64]float64{0.001: 0, 0.002: 50, 0.004: 100, inf: 100}, 0.99, 3.96},
		{"in the first bucket", map[float64]float64{0.001: 10, inf: 10}, 0.5, 0.5},
		{"past the last finite bound", map[float64]float64{0.001: 0, 0.002: 5, inf: 10}, 0.99, 2},
	}
	for _, c := range cases {
		if got := histogramQuantileMs(c.buckets, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: q%.2f = %v ms, want %v", c.name, c.q, got, c.want)
		}
	}
}

// The profile reads the relays' counters and histogram buckets from their
// /metrics page.
func TestScrapeReadsCountersAndBuckets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP outboxtop_relay_published_total Events published.
# TYPE outboxtop_relay_published_total counter
outboxtop_relay_published_total 1234
outboxtop_relay_claim_seconds_bucket{le="0.001"} 3
outboxtop_relay_claim_seconds_bucket{le="+Inf"} 10
outboxtop_relay_claim_seconds_sum 1.5
`)
	}))
	defer srv.Close()
	samples := scrape(strings.TrimPrefix(srv.URL, "http://"))
	if got := samples["outboxtop_relay_published_total"]; got != 1234 {
		t.Errorf("published %v, want 1234", got)
	}
	buckets := map[float64]float64{0.001: 1}
	addBuckets(samples, "outboxtop_relay_claim_seconds", buckets)
	if len(buckets) != 2 || buckets[0.001] != 4 || buckets[math.Inf(1)] != 10 {
		t.Errorf("buckets %v, want 0.001:4 +Inf:10", buckets)
	}
	if scrape("127.0.0.1:1") != nil {
		t.Error("a relay not answering gave samples")
	}
}
