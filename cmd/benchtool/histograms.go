package main

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/histogram"
)

// The histogram data set: request durations as client_golang's native
// histograms record them with bucket factor 1.1 (schema 3), one series per
// label set of the float data set's shape, each scrape adding a few dozen
// observations. Counts only grow, so the buckets seen so far stay in every
// later sample; after the first minutes a series has 20-40 buckets in one
// or a few spans, as a long-running server's histograms do.

const (
	// histSchema is the schema of the data set (bucket factor 2^(1/8)).
	histSchema = 3
	// histZeroThreshold is client_golang's default zero bucket width.
	histZeroThreshold = 2.938735877055719e-39 // 2^-128
)

// histSeriesSet is n series of histograms, spread over metrics names.
func histSeriesSet(run string, n, metrics int) []series {
	out := seriesSet(run, n, metrics)
	for i := range out {
		out[i].metric = "bench_hist_" + strconv.Itoa(i%metrics) + "_duration_seconds"
	}
	return out
}

// histGen yields the samples of one histogram series. Seeded per series,
// so every target (and the Prometheus block) gets the same histograms.
type histGen struct {
	rng       *rand.Rand
	mu, sigma float64 // of the log of an observation
	buckets   map[int32]uint64
	zero      uint64
	count     uint64
	sum       float64
}

func newHistGen(idx int) *histGen {
	rng := rand.New(rand.NewPCG(uint64(idx), 1414))
	return &histGen{
		rng: rng,
		// Medians between 2.5 ms and 1 s, a spread (sigma of the log)
		// of 0.25-0.4: 20-40 buckets at schema 3 once filled in.
		mu:      -6 + 6*rng.Float64(),
		sigma:   0.25 + 0.15*rng.Float64(),
		buckets: map[int32]uint64{},
	}
}

// next adds one scrape's observations and returns the histogram.
func (g *histGen) next() *histogram.Histogram {
	for range 5 + g.rng.IntN(60) {
		g.observe(math.Exp(g.mu + g.sigma*g.rng.NormFloat64()))
	}
	return g.histogram()
}

func (g *histGen) observe(v float64) {
	g.count++
	g.sum += v
	if v <= histZeroThreshold {
		g.zero++
		return
	}
	// Bucket i of schema s holds (2^((i-1)/2^s), 2^(i/2^s)].
	g.buckets[int32(math.Ceil(math.Log2(v)*(1<<histSchema)))]++
}

// histogram renders the counts so far: spans over the buckets seen (a gap
// of up to two empty buckets stays inside a span, as client_golang does)
// and deltas between neighbouring counts.
func (g *histGen) histogram() *histogram.Histogram {
	idx := make([]int32, 0, len(g.buckets))
	for i := range g.buckets {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, cmp.Compare)
	h := &histogram.Histogram{
		Schema: histSchema, ZeroThreshold: histZeroThreshold,
		ZeroCount: g.zero, Count: g.count, Sum: g.sum,
	}
	var prev int64
	appendCount := func(c uint64) {
		h.PositiveBuckets = append(h.PositiveBuckets, int64(c)-prev)
		prev = int64(c)
	}
	for k, i := range idx {
		if k == 0 {
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: i, Length: 1})
		} else if gap := i - idx[k-1] - 1; gap <= 2 {
			for range gap {
				appendCount(0)
			}
			h.PositiveSpans[len(h.PositiveSpans)-1].Length += uint32(gap) + 1
		} else {
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: gap, Length: 1})
		}
		appendCount(g.buckets[i])
	}
	return h
}

// histSamples generates the data set: rounds histograms of every series,
// after skipping skip rounds.
func histSamples(set []series, rounds, skip int) [][]*histogram.Histogram {
	out := make([][]*histogram.Histogram, len(set))
	for i := range set {
		g := newHistGen(i)
		for range skip {
			g.next()
		}
		out[i] = make([]*histogram.Histogram, rounds)
		for r := range out[i] {
			out[i][r] = g.next()
		}
	}
	return out
}
