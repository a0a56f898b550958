package remote

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/prom-hbase/prom-hbase/store"
)

// histKind is the kind of a test histogram series.
type histKind int

const (
	histInt         histKind = iota // exponential buckets, integer counts
	histFloat                       // exponential buckets, float counts
	histCustom                      // custom buckets (schema -53), integer counts
	histCustomFloat                 // custom buckets, float counts
	histGauge                       // integer gauge histogram: counts go up and down
	numHistKinds
)

func (k histKind) String() string {
	return [...]string{"int", "float", "custom", "custom_float", "gauge"}[k]
}

func (k histKind) float() bool { return k == histFloat || k == histCustomFloat }

// layout is a bucket layout: schema, spans of both sides, custom bounds.
type layout struct {
	schema       int32
	zeroThresh   float64
	pos, neg     []histogram.Span
	customValues []float64
}

func spansLen(s []histogram.Span) int {
	n := 0
	for _, sp := range s {
		n += int(sp.Length)
	}
	return n
}

// randomSpans returns 1..3 spans with gaps; the first offset may be
// negative.
func randomSpans(rng *rand.Rand, firstMin, firstMax int32) []histogram.Span {
	out := []histogram.Span{{Offset: firstMin + rng.Int32N(firstMax-firstMin+1), Length: 1 + rng.Uint32N(4)}}
	for range rng.IntN(3) {
		out = append(out, histogram.Span{Offset: rng.Int32N(4), Length: 1 + rng.Uint32N(3)})
	}
	return out
}

func randomLayout(rng *rand.Rand, k histKind) layout {
	if k == histCustom || k == histCustomFloat {
		n := 2 + rng.IntN(8)
		bounds := make([]float64, n)
		v := -rng.Float64() * 10
		for i := range bounds {
			v += 0.001 + rng.Float64()*100
			bounds[i] = v
		}
		// Offsets index the bounds; the last bucket (index n) is +Inf.
		return layout{schema: histogram.CustomBucketsSchema, pos: []histogram.Span{{Offset: rng.Int32N(2), Length: uint32(n - 1)}}, customValues: bounds}
	}
	l := layout{schema: -4 + rng.Int32N(13), zeroThresh: []float64{0, 1e-128, 0.001}[rng.IntN(3)], pos: randomSpans(rng, -5, 5)}
	if rng.IntN(3) > 0 {
		l.neg = randomSpans(rng, -3, 3)
	}
	return l
}

// randomHistograms returns n samples of one histogram series of kind k
// from t0, step apart: counters that grow, a layout (schema) change in the
// middle, an explicit counter reset, hints of every kind, and a staleness
// marker last.
func randomHistograms(rng *rand.Rand, k histKind, n int, t0, step int64) []store.HistogramSample {
	l := randomLayout(rng, k)
	pos := make([]float64, spansLen(l.pos))
	neg := make([]float64, spansLen(l.neg))
	var zero, sum float64
	out := make([]store.HistogramSample, 0, n)
	for i := range n {
		t := t0 + int64(i)*step
		if i == n-1 && n > 2 {
			out = append(out, staleHistogram(k, t))
			break
		}
		hint := histogram.NotCounterReset
		if i == 0 {
			hint = histogram.UnknownCounterReset
		}
		if i == n/2 && n > 4 { // a new layout: a schema change for exponential histograms
			l = randomLayout(rng, k)
			pos, neg = make([]float64, spansLen(l.pos)), make([]float64, spansLen(l.neg))
			zero, sum = 0, 0
			hint = histogram.UnknownCounterReset
		}
		if i == n/4 && n > 4 { // an explicit reset
			clear(pos)
			clear(neg)
			zero, sum = 0, 0
			hint = histogram.CounterReset
		}
		grow := func(c []float64) {
			for j := range c {
				d := float64(rng.IntN(5))
				if k.float() {
					d += float64(rng.IntN(4)) / 4 // exact in binary
				}
				if k == histGauge && c[j] >= 3 && rng.IntN(2) == 0 {
					d = -3
				}
				c[j] += d
			}
		}
		grow(pos)
		grow(neg)
		if l.schema != histogram.CustomBucketsSchema {
			zero += float64(rng.IntN(3))
		}
		sum += rng.NormFloat64() * 100
		if k == histGauge {
			hint = histogram.GaugeType
		}
		out = append(out, buildHistogram(k, l, t, hint, pos, neg, zero, sum))
	}
	return out
}

func staleHistogram(k histKind, t int64) store.HistogramSample {
	if k.float() {
		return store.HistogramSample{T: t, FH: &histogram.FloatHistogram{Sum: math.Float64frombits(value.StaleNaN)}}
	}
	return store.HistogramSample{T: t, H: &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN)}}
}

func buildHistogram(k histKind, l layout, t int64, hint histogram.CounterResetHint, pos, neg []float64, zero, sum float64) store.HistogramSample {
	count := zero
	for _, c := range pos {
		count += c
	}
	for _, c := range neg {
		count += c
	}
	if k.float() {
		return store.HistogramSample{T: t, FH: &histogram.FloatHistogram{
			CounterResetHint: hint, Schema: l.schema, ZeroThreshold: l.zeroThresh, ZeroCount: zero, Count: count, Sum: sum,
			PositiveSpans: slices.Clone(l.pos), NegativeSpans: slices.Clone(l.neg),
			PositiveBuckets: slices.Clone(pos), NegativeBuckets: slices.Clone(neg),
			CustomValues: l.customValues,
		}}
	}
	return store.HistogramSample{T: t, H: &histogram.Histogram{
		CounterResetHint: hint, Schema: l.schema, ZeroThreshold: l.zeroThresh, ZeroCount: uint64(zero), Count: uint64(count), Sum: sum,
		PositiveSpans: slices.Clone(l.pos), NegativeSpans: slices.Clone(l.neg),
		PositiveBuckets: toDeltas(pos), NegativeBuckets: toDeltas(neg),
		CustomValues: l.customValues,
	}}
}

func toDeltas(counts []float64) []int64 {
	if len(counts) == 0 {
		return nil
	}
	out := make([]int64, len(counts))
	prev := int64(0)
	for i, c := range counts {
		out[i] = int64(c) - prev
		prev = int64(c)
	}
	return out
}

// histSeries is one test series: labels, float samples and histograms (at
// timestamps distinct from the floats').
type histSeries struct {
	labels     labels.Labels
	samples    []store.Sample
	histograms []store.HistogramSample
}

// histTestSeries builds one series of each kind, a mixed one whose floats
// and histograms (integer, then float) interleave in time, and one that
// switches from integer to float histograms.
func histTestSeries(seed uint64, job string, perSeries int, t0 int64) []histSeries {
	rng := rand.New(rand.NewPCG(seed, 14))
	var out []histSeries
	for k := range numHistKinds {
		out = append(out, histSeries{
			labels:     labels.FromStrings("__name__", "hist_"+k.String(), "job", job),
			histograms: randomHistograms(rng, k, perSeries, t0, 15000),
		})
	}
	// Mixed: floats at odd steps; integer histograms, then float ones, at
	// even steps.
	mixed := histSeries{labels: labels.FromStrings("__name__", "mixed", "job", job)}
	ih := randomHistograms(rng, histInt, perSeries/2, t0, 30000)
	fh := randomHistograms(rng, histFloat, perSeries/2, t0+int64(perSeries/2)*30000, 30000)
	mixed.histograms = append(ih, fh...)
	for i := range perSeries {
		mixed.samples = append(mixed.samples, store.Sample{T: t0 + 15000 + int64(i)*30000, V: float64(i) * 1.5})
	}
	if perSeries > 3 {
		mixed.samples[3].V = math.Float64frombits(value.StaleNaN)
	}
	// Switching: integer histograms, then float ones, with nothing between.
	sw := histSeries{labels: labels.FromStrings("__name__", "hist_switch", "job", job)}
	sw.histograms = append(randomHistograms(rng, histCustom, perSeries/2, t0, 15000),
		randomHistograms(rng, histFloat, perSeries/2, t0+int64(perSeries/2)*15000, 15000)...)
	return append(out, mixed, sw)
}

// toV1 encodes series as 1.0 time series: one per series, floats and
// histograms together.
func toV1Hist(series []histSeries) []prompb.TimeSeries {
	out := make([]prompb.TimeSeries, len(series))
	for i, s := range series {
		ts := prompb.TimeSeries{Labels: prompb.FromLabels(s.labels, nil)}
		for _, x := range s.samples {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: x.T, Value: x.V})
		}
		for _, h := range s.histograms {
			if h.H != nil {
				ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(h.T, h.H))
			} else {
				ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(h.T, h.FH))
			}
		}
		out[i] = ts
	}
	return out
}

// toV2Hist encodes series as a 2.0 request: floats and histograms of one
// series in separate time series, as the 2.0 specification asks.
func toV2Hist(series []histSeries) *writev2.Request {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, s := range series {
		refs := st.SymbolizeLabels(s.labels, nil)
		md := writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM}
		if len(s.samples) > 0 {
			ts := writev2.TimeSeries{LabelsRefs: refs, Metadata: md}
			for _, x := range s.samples {
				ts.Samples = append(ts.Samples, writev2.Sample{Value: x.V, Timestamp: x.T})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		if len(s.histograms) > 0 {
			ts := writev2.TimeSeries{LabelsRefs: refs, Metadata: md}
			for _, h := range s.histograms {
				if h.H != nil {
					ts.Histograms = append(ts.Histograms, writev2.FromIntHistogram(0, h.T, h.H))
				} else {
					ts.Histograms = append(ts.Histograms, writev2.FromFloatHistogram(0, h.T, h.FH))
				}
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
	}
	req.Symbols = st.Symbols()
	return req
}

func countHist(series []histSeries) (samples, histograms int) {
	for _, s := range series {
		samples += len(s.samples)
		histograms += len(s.histograms)
	}
	return samples, histograms
}

// diffHistogram compares two histogram samples field by field, floats by
// their bits and absent slices equal to empty ones; "" when equal.
func diffHistogram(got, want store.HistogramSample) string {
	if got.T != want.T {
		return fmt.Sprintf("timestamp %d, want %d", got.T, want.T)
	}
	switch {
	case (got.H != nil) != (want.H != nil) || (got.FH != nil) != (want.FH != nil):
		return fmt.Sprintf("kind differs: got int=%v float=%v", got.H != nil, got.FH != nil)
	case got.H != nil:
		g, w := got.H, want.H
		return firstDiff(
			diffField("hint", g.CounterResetHint, w.CounterResetHint), diffField("schema", g.Schema, w.Schema),
			diffBits("zero threshold", g.ZeroThreshold, w.ZeroThreshold), diffField("zero count", g.ZeroCount, w.ZeroCount),
			diffField("count", g.Count, w.Count), diffBits("sum", g.Sum, w.Sum),
			diffSlice("positive spans", g.PositiveSpans, w.PositiveSpans), diffSlice("negative spans", g.NegativeSpans, w.NegativeSpans),
			diffSlice("positive buckets", g.PositiveBuckets, w.PositiveBuckets), diffSlice("negative buckets", g.NegativeBuckets, w.NegativeBuckets),
			diffFloats("custom values", g.CustomValues, w.CustomValues))
	default:
		g, w := got.FH, want.FH
		return firstDiff(
			diffField("hint", g.CounterResetHint, w.CounterResetHint), diffField("schema", g.Schema, w.Schema),
			diffBits("zero threshold", g.ZeroThreshold, w.ZeroThreshold), diffBits("zero count", g.ZeroCount, w.ZeroCount),
			diffBits("count", g.Count, w.Count), diffBits("sum", g.Sum, w.Sum),
			diffSlice("positive spans", g.PositiveSpans, w.PositiveSpans), diffSlice("negative spans", g.NegativeSpans, w.NegativeSpans),
			diffFloats("positive buckets", g.PositiveBuckets, w.PositiveBuckets), diffFloats("negative buckets", g.NegativeBuckets, w.NegativeBuckets),
			diffFloats("custom values", g.CustomValues, w.CustomValues))
	}
}

func firstDiff(diffs ...string) string {
	for _, d := range diffs {
		if d != "" {
			return d
		}
	}
	return ""
}

func diffField[T comparable](name string, got, want T) string {
	if got != want {
		return fmt.Sprintf("%s %v, want %v", name, got, want)
	}
	return ""
}

func diffBits(name string, got, want float64) string {
	if math.Float64bits(got) != math.Float64bits(want) {
		return fmt.Sprintf("%s %v (%#x), want %v (%#x)", name, got, math.Float64bits(got), want, math.Float64bits(want))
	}
	return ""
}

func diffSlice[T comparable](name string, got, want []T) string {
	if !slices.Equal(got, want) {
		return fmt.Sprintf("%s %v, want %v", name, got, want)
	}
	return ""
}

func diffFloats(name string, got, want []float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%s %v, want %v", name, got, want)
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			return fmt.Sprintf("%s[%d] %v, want %v", name, i, got[i], want[i])
		}
	}
	return ""
}

// diffHistogramChunked compares a histogram read back from chunks with the
// one written. Chunk encoding keeps every value but may add empty buckets
// (a chunk's histograms share its layout), and it derives counter-reset
// hints from the chunk: a gauge stays a gauge; a counter's histogram reads
// "unknown" at the start of a chunk and "not a reset" after it, and an
// explicit reset starts a chunk. Staleness markers compare by their sum.
func diffHistogramChunked(got, want store.HistogramSample) string {
	if got.T != want.T || (got.H != nil) != (want.H != nil) {
		return fmt.Sprintf("got t=%d int=%v, want t=%d int=%v", got.T, got.H != nil, want.T, want.H != nil)
	}
	g, w := got.FH, want.FH
	if got.H != nil {
		g, w = got.H.ToFloat(nil), want.H.ToFloat(nil)
	}
	if value.IsStaleNaN(w.Sum) || value.IsStaleNaN(g.Sum) {
		return diffBits("sum", g.Sum, w.Sum)
	}
	switch wh, gh := w.CounterResetHint, g.CounterResetHint; {
	case (wh == histogram.GaugeType) != (gh == histogram.GaugeType):
		return fmt.Sprintf("hint %v, want %v", gh, wh)
	case wh == histogram.CounterReset && gh == histogram.NotCounterReset:
		// A reset begins a chunk, whose first histogram reads back as
		// "unknown" (Prometheus's chunks do not trust their header).
		return fmt.Sprintf("hint %v, want %v (a chunk's first)", gh, wh)
	}
	gc, wc := g.Copy().Compact(0), w.Copy().Compact(0)
	gc.CounterResetHint, wc.CounterResetHint = 0, 0
	if !gc.Equals(wc) {
		return fmt.Sprintf("histogram %v, want %v", g, w)
	}
	return ""
}

// sortedHistSeries returns series sorted by labels, as reads return them.
func sortedHistSeries(series []histSeries) []histSeries {
	out := slices.Clone(series)
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].labels, out[j].labels) < 0 })
	return out
}
