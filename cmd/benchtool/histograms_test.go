package main

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// The histogram data set is what its description promises: valid integer
// histograms of schema 3, counters that only grow, 20-40 buckets on
// average, the same for every target.
func TestHistSamplesShape(t *testing.T) {
	set := histSeriesSet("r", 200, 4)
	hs := histSamples(set, 480, 0)
	var buckets, n int
	for i, s := range hs {
		var prev *histogram.Histogram
		for r, h := range s {
			if err := h.Validate(); err != nil {
				t.Fatalf("series %d, round %d: %v", i, r, err)
			}
			if h.Schema != histSchema {
				t.Fatalf("schema %d", h.Schema)
			}
			if prev != nil && (h.Count < prev.Count || h.Sum < prev.Sum || h.ToFloat(nil).DetectReset(prev.ToFloat(nil))) {
				t.Fatalf("series %d, round %d: counter went down", i, r)
			}
			prev = h
			buckets += len(h.PositiveBuckets)
			n++
		}
	}
	if avg := float64(buckets) / float64(n); avg < 20 || avg > 40 {
		t.Errorf("%.1f buckets per histogram, want 20-40", avg)
	} else {
		t.Logf("%.1f buckets per histogram", avg)
	}
	again := histSamples(set, 480, 0)
	split := histSamples(set, 80, 400)
	for i := range hs {
		if !hs[i][479].Equals(again[i][479]) || !hs[i][479].Equals(split[i][79]) {
			t.Fatalf("series %d: the data set is not the same on every generation", i)
		}
	}
}

// The histogram table takes its figures from the right records, and is
// left out of a run without histograms.
func TestReportHistBytes(t *testing.T) {
	run := func(in string) string { return reportOutput(t, reportHistBytes, in) }
	if out := run("step=bytes table=x-prom-data hfile_bytes=5\n"); out != "" {
		t.Errorf("a run without histograms printed %q", out)
	}
	out := run(`step=hist-load target=adapter histograms=1000 series=10 rounds=100 step_ms=15000 buckets_per_histogram=28.6
step=histblock target=prometheus-block histograms=1000 block_bytes=20000 chunks_bytes=19000
step=hist-bytes table=b-hist-prom-data hfile_bytes=80000
step=hist-bytes-compacted table=b-hist-prom-data hfile_bytes=25000
step=hist-read target=adapter via=samples histograms=1000 equal=true
`)
	for _, want := range []string{
		"1000 samples (10 series", "28.6 buckets", "for 0.4 h", "all 1000 equal",
		"| adapter, raw cells | 80000 | 80.00 | 4.00 |",
		"| adapter, compacted (histogram chunks) | 25000 | 25.00 | 1.25 |",
		"| Prometheus TSDB block | 20000 | 20.00 | 1.00 |",
		"| Prometheus TSDB block, chunks only | 19000 | 19.00 | 0.95 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
