package main

import (
	"math"
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
