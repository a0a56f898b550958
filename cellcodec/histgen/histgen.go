// Package histgen draws native histogram sample sequences for tests and
// benchmarks of the storage layer: counters that grow the way exporters'
// histograms do, and the edge cases a bit-exact store must keep (every
// schema including custom buckets, negative buckets, spans split at odd
// places, counter resets and every hint, staleness markers, float
// histograms, kind switches). Every histogram it draws passes
// histogram.Validate, except staleness markers, which carry what they
// carry. It owns no storage code.
package histgen

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
)

// StaleNaN is Prometheus's staleness marker's bits (value.StaleNaN).
const StaleNaN = 0x7ff0000000000002

// Sample is one drawn sample: exactly one of H and FH is set.
type Sample struct {
	T  int64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// Gen draws one series' histograms; its state is the current bucket
// layout and counts, which evolve from sample to sample.
type Gen struct {
	rng      *rand.Rand
	schema   int32
	zt       float64
	custom   []float64
	pos, neg map[int32]uint64
	zero     uint64
	float    bool
	gauge    bool
	split    int // split spans at this bucket index too (0: none)
	// Edge makes the generator draw edge cases (random hints, resets,
	// stale markers with fields, kind switches) besides steady growth.
	Edge bool
}

// New returns a generator with a random layout; edge turns on edge cases.
func New(rng *rand.Rand, edge bool) *Gen {
	g := &Gen{rng: rng, Edge: edge}
	g.newLayout()
	g.float = edge && rng.IntN(3) == 0
	g.gauge = edge && rng.IntN(6) == 0
	return g
}

// Realistic returns a generator of an exponential schema 3 histogram with
// about n populated buckets, counters growing, hints as Prometheus's head
// keeps them in a chunk (the first unknown, the rest not a reset).
func Realistic(rng *rand.Rand, n int) *Gen {
	g := &Gen{rng: rng, schema: 3, zt: 1e-128, pos: map[int32]uint64{}, neg: map[int32]uint64{}}
	for i := range n {
		g.pos[int32(i+rng.IntN(2))] = uint64(rng.IntN(100))
	}
	return g
}

func (g *Gen) newLayout() {
	r := g.rng
	g.pos, g.neg, g.zero, g.custom, g.split = map[int32]uint64{}, map[int32]uint64{}, 0, nil, 0
	switch r.IntN(4) {
	case 0:
		g.schema = histogram.CustomBucketsSchema
		g.zt = 0
		n := 1 + r.IntN(8)
		b := -10 + r.Float64()
		for range n {
			b += 0.1 + r.Float64()*10
			g.custom = append(g.custom, b)
		}
		for range 1 + r.IntN(n+1) {
			g.pos[int32(r.IntN(n+1))] = uint64(r.IntN(5))
		}
		return
	default:
		g.schema = histogram.ExponentialSchemaMin + r.Int32N(histogram.ExponentialSchemaMax-histogram.ExponentialSchemaMin+1)
	}
	g.zt = []float64{0, 1e-128, 0.001, math.Float64frombits(0x3f50624dd2f1a9fc)}[r.IntN(4)]
	for range r.IntN(12) {
		g.pos[int32(r.IntN(40)-20)] = uint64(r.IntN(5))
	}
	for range r.IntN(4) {
		g.neg[int32(r.IntN(20)-10)] = uint64(r.IntN(5))
	}
	if r.IntN(4) == 0 {
		g.split = r.IntN(40) - 20
	}
	g.zero = uint64(r.IntN(3))
}

// Next draws the sample at t.
func (g *Gen) Next(t int64) Sample {
	r := g.rng
	hint := histogram.UnknownCounterReset
	if g.gauge {
		hint = histogram.GaugeType
	}
	grow := func(m map[int32]uint64) {
		for k := range m {
			if r.IntN(2) == 0 {
				m[k] += uint64(r.IntN(20))
			}
		}
	}
	if !g.Edge {
		grow(g.pos)
		s := g.build(t, hint)
		s.setHint(histogram.NotCounterReset)
		return s
	}
	switch x := r.IntN(100); {
	case x < 4:
		g.newLayout()
	case x < 8:
		for k := range g.pos {
			g.pos[k] /= 2
		}
		if r.IntN(2) == 0 && !g.gauge {
			hint = histogram.CounterReset
		}
	case x < 12:
		g.float = !g.float
	case x < 16:
		return g.stale(t)
	case x < 20:
		if !histogram.IsCustomBucketsSchema(g.schema) {
			g.pos[int32(r.IntN(40)-20)] += 1
		}
	default:
		grow(g.pos)
		grow(g.neg)
		if r.IntN(3) == 0 && !g.gauge {
			hint = histogram.NotCounterReset
		}
	}
	return g.build(t, hint)
}

func (s *Sample) setHint(h histogram.CounterResetHint) {
	if s.H != nil {
		s.H.CounterResetHint = h
	} else {
		s.FH.CounterResetHint = h
	}
}

// stale draws a staleness marker: mostly the bare marker Prometheus
// writes, sometimes one with more fields set.
func (g *Gen) stale(t int64) Sample {
	s := Sample{T: t}
	if g.rng.IntN(3) == 0 {
		s = g.build(t, histogram.UnknownCounterReset)
		if s.H != nil {
			s.H.Sum = math.Float64frombits(StaleNaN)
		} else {
			s.FH.Sum = math.Float64frombits(StaleNaN)
		}
		return s
	}
	if g.float {
		s.FH = &histogram.FloatHistogram{Sum: math.Float64frombits(StaleNaN)}
	} else {
		s.H = &histogram.Histogram{Sum: math.Float64frombits(StaleNaN)}
	}
	return s
}

// build makes the current state a histogram.
func (g *Gen) build(t int64, hint histogram.CounterResetHint) Sample {
	ps, pc := spansOf(g.pos, g.split)
	ns, nc := spansOf(g.neg, 0)
	var count uint64 = g.zero
	for _, c := range pc {
		count += c
	}
	for _, c := range nc {
		count += c
	}
	h := &histogram.Histogram{
		CounterResetHint: hint, Schema: g.schema, ZeroThreshold: g.zt, ZeroCount: g.zero,
		Count: count, Sum: float64(count) * 0.37, PositiveSpans: ps, NegativeSpans: ns,
		PositiveBuckets: deltas(pc), NegativeBuckets: deltas(nc),
	}
	if histogram.IsCustomBucketsSchema(g.schema) {
		h.ZeroCount, h.NegativeSpans, h.NegativeBuckets = 0, nil, nil
		h.Count -= g.zero + sum(nc)
		h.CustomValues = slices.Clone(g.custom)
	}
	if g.float {
		return Sample{T: t, FH: h.ToFloat(nil)}
	}
	return Sample{T: t, H: h}
}

func sum(s []uint64) uint64 {
	var n uint64
	for _, v := range s {
		n += v
	}
	return n
}

// spansOf lays out the buckets of m (index to count) as spans and counts,
// split at index split too when it is inside a run.
func spansOf(m map[int32]uint64, split int) ([]histogram.Span, []uint64) {
	if len(m) == 0 {
		return nil, nil
	}
	idx := make([]int32, 0, len(m))
	for k := range m {
		idx = append(idx, k)
	}
	slices.Sort(idx)
	var (
		spans  []histogram.Span
		counts []uint64
		next   int32
	)
	for i, k := range idx {
		if i == 0 || k != next || (split != 0 && int(k) == split) {
			off := k
			if i > 0 {
				off = k - next
			}
			spans = append(spans, histogram.Span{Offset: off})
		}
		spans[len(spans)-1].Length++
		counts = append(counts, m[k])
		next = k + 1
	}
	return spans, counts
}

func deltas(counts []uint64) []int64 {
	if len(counts) == 0 {
		return nil
	}
	d := make([]int64, len(counts))
	prev := int64(0)
	for i, c := range counts {
		d[i] = int64(c) - prev
		prev = int64(c)
	}
	return d
}
