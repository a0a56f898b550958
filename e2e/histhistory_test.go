package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

// nativeHistoryJob labels the generated native-histogram history. Like the
// float history it is written straight into adapter 1 (remote write 1.0)
// and into Prometheus A, and carries origin="direct" so A's queues do not
// send it again.
const nativeHistoryJob = "e2e-nhistory"

// nativeHistory is generated past data of native histograms, one sample a
// minute over the float history's three days, one series per kind the
// scrape cannot produce on demand:
//
//   - e2e_nhistory_latency: integer counts, schema 3, 26 buckets in four
//     spans on both sides of 1, counter resets every 1009 minutes, and two
//     hours stale (a histogram staleness marker, then nothing);
//   - e2e_nhistory_level: a gauge histogram (reset hint GAUGE), schema 0,
//     negative buckets and a zero bucket, counts going up and down;
//   - e2e_nhistory_weight: float counts, schema -1;
//   - e2e_nhistory_size: custom buckets (schema -53) with their bounds;
//   - e2e_nhistory_switch: floats, then integer histograms, then float
//     histograms, twelve hours each, round and round: one hour row holds
//     both kinds at each switch.
type nativeHistory struct {
	start, end time.Time
	series     []prompb.TimeSeries
	samples    int // floats and histograms
}

func makeNativeHistory(h *history) *nativeHistory {
	n := int(h.end.Sub(h.start)/h.step) + 1
	nh := &nativeHistory{start: h.start, end: h.end}
	ts := func(i int) int64 { return h.start.Add(time.Duration(i) * h.step).UnixMilli() }
	with := func(name, kind string) []string {
		return []string{"__name__", name, "kind", kind, "origin", "direct", "job", nativeHistoryJob}
	}
	var latency, level, weight, size []prompb.Histogram
	var switching prompb.TimeSeries
	for i := range n {
		switch {
		case i == 1500:
			// As Prometheus's head writes it for an integer series.
			latency = append(latency, prompb.FromIntHistogram(ts(i), &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN)}))
		case i > 1500 && i < 1620:
		default:
			latency = append(latency, prompb.FromIntHistogram(ts(i), latencyAt(i)))
		}
		level = append(level, prompb.FromIntHistogram(ts(i), levelAt(i)))
		weight = append(weight, prompb.FromFloatHistogram(ts(i), weightAt(i)))
		size = append(size, prompb.FromIntHistogram(ts(i), sizeAt(i)))
		switch (i / 720) % 3 {
		case 0:
			switching.Samples = append(switching.Samples, prompb.Sample{Timestamp: ts(i), Value: float64(i) * 0.5})
		case 1:
			switching.Histograms = append(switching.Histograms, prompb.FromIntHistogram(ts(i), sizeAt(i)))
		default:
			switching.Histograms = append(switching.Histograms, prompb.FromFloatHistogram(ts(i), weightAt(i)))
		}
	}
	add := func(kv []string, s prompb.TimeSeries) {
		s.Labels = newSeries(kv, nil).Labels
		nh.series = append(nh.series, s)
		nh.samples += len(s.Samples) + len(s.Histograms)
	}
	add(with("e2e_nhistory_latency", "exponential"), prompb.TimeSeries{Histograms: latency})
	add(with("e2e_nhistory_level", "gauge"), prompb.TimeSeries{Histograms: level})
	add(with("e2e_nhistory_weight", "float"), prompb.TimeSeries{Histograms: weight})
	add(with("e2e_nhistory_size", "custom"), prompb.TimeSeries{Histograms: size})
	add(with("e2e_nhistory_switch", "switching"), switching)
	return nh
}

// latencyAt is sample i of e2e_nhistory_latency: every bucket count grows
// every minute, from (almost) zero again after each reset.
func latencyAt(i int) *histogram.Histogram {
	idx := slices.Concat(span(-20, 7), span(-5, 8), span(10, 5), span(30, 6))
	since := i % 1009
	counts := make([]uint64, len(idx))
	for j := range counts {
		// Grows by 1 to 9 a minute: the (since*j)%5 term may drop by 4.
		counts[j] = uint64(since*5 + (since*j)%5 + j%3)
	}
	zero := uint64(since / 3)
	h := intHistogram(3, 1e-9, zero, idx, counts, nil, nil)
	h.Sum = float64(since)*3.75 + float64(i%7)*0.001
	if since == 0 {
		h.CounterResetHint = histogram.CounterReset
	}
	return h
}

// levelAt is sample i of e2e_nhistory_level, a gauge histogram.
func levelAt(i int) *histogram.Histogram {
	pos, neg := span(-3, 6), span(-1, 5)
	pc, nc := make([]uint64, len(pos)), make([]uint64, len(neg))
	for j := range pc {
		pc[j] = uint64(3 + (i*(j+1))%7)
	}
	for j := range nc {
		nc[j] = uint64((i + j*5) % 6)
	}
	h := intHistogram(0, 0.01, uint64(i%4), pos, pc, neg, nc)
	h.Sum = math.Sin(float64(i)/40) * 100
	h.CounterResetHint = histogram.GaugeType
	return h
}

// weightAt is sample i of e2e_nhistory_weight: float counts, never whole.
func weightAt(i int) *histogram.FloatHistogram {
	m := float64(i%2000) + 1
	pos, neg := span(-2, 6), span(0, 2)
	fh := &histogram.FloatHistogram{
		Schema: -1, ZeroThreshold: 0.001, ZeroCount: m * 0.1,
		PositiveSpans: spansOf(pos), NegativeSpans: spansOf(neg),
		Sum: m*2.125 - 0.3,
	}
	for j := range pos {
		fh.PositiveBuckets = append(fh.PositiveBuckets, m*(0.37+0.11*float64(j))+0.0625)
	}
	for j := range neg {
		fh.NegativeBuckets = append(fh.NegativeBuckets, m*0.29*float64(j+1))
	}
	fh.Count = fh.ZeroCount
	for _, c := range slices.Concat(fh.PositiveBuckets, fh.NegativeBuckets) {
		fh.Count += c
	}
	return fh
}

// sizeBounds are the custom bucket bounds of e2e_nhistory_size.
var sizeBounds = []float64{0.1, 0.5, 1, 5, 10}

// sizeAt is sample i of e2e_nhistory_size: buckets 0..5, the last one
// above 10 (+Inf).
func sizeAt(i int) *histogram.Histogram {
	idx := span(0, len(sizeBounds)+1)
	counts := make([]uint64, len(idx))
	for j := range counts {
		counts[j] = uint64(i*(j%3+1) + j)
	}
	h := intHistogram(histogram.CustomBucketsSchema, 0, 0, idx, counts, nil, nil)
	h.CustomValues = sizeBounds
	h.Sum = float64(i) * 7.5
	return h
}

// span returns the bucket indexes from first, n of them.
func span(first int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = first + int32(i)
	}
	return out
}

// spansOf returns the spans of ascending bucket indexes.
func spansOf(idx []int32) []histogram.Span {
	var out []histogram.Span
	next := int32(0)
	for i, x := range idx {
		if i > 0 && x == idx[i-1]+1 {
			out[len(out)-1].Length++
		} else {
			out = append(out, histogram.Span{Offset: x - next, Length: 1})
		}
		next = x + 1
	}
	return out
}

// intHistogram builds an integer histogram from absolute bucket counts.
func intHistogram(schema int32, zt float64, zero uint64, pos []int32, pc []uint64, neg []int32, nc []uint64) *histogram.Histogram {
	deltas := func(c []uint64) []int64 {
		var out []int64
		var prev int64
		for _, v := range c {
			out = append(out, int64(v)-prev)
			prev = int64(v)
		}
		return out
	}
	h := &histogram.Histogram{
		Schema: schema, ZeroThreshold: zt, ZeroCount: zero, Count: zero,
		PositiveSpans: spansOf(pos), PositiveBuckets: deltas(pc),
		NegativeSpans: spansOf(neg), NegativeBuckets: deltas(nc),
	}
	for _, c := range slices.Concat(pc, nc) {
		h.Count += c
	}
	return h
}

// write sends the history to url in requests of twelve hours of every
// series, as a sender replaying a WAL would.
func (nh *nativeHistory) write(ctx context.Context, url string) error {
	const window = 12 * time.Hour
	for from := nh.start; !from.After(nh.end); from = from.Add(window) {
		lo, hi := from.UnixMilli(), from.Add(window).UnixMilli()
		var batch []prompb.TimeSeries
		for _, s := range nh.series {
			b := prompb.TimeSeries{Labels: s.Labels}
			for _, smp := range s.Samples {
				if smp.Timestamp >= lo && smp.Timestamp < hi {
					b.Samples = append(b.Samples, smp)
				}
			}
			for _, hp := range s.Histograms {
				if hp.Timestamp >= lo && hp.Timestamp < hi {
					b.Histograms = append(b.Histograms, hp)
				}
			}
			if len(b.Samples)+len(b.Histograms) > 0 {
				batch = append(batch, b)
			}
		}
		if err := mustRemoteWrite(ctx, url, batch); err != nil {
			return fmt.Errorf("native-histogram history from %v: %w", from.UTC(), err)
		}
	}
	return nil
}

// late returns histograms for hours long compacted, between the minute
// samples of the exponential and the float series: copies of the sample
// before, 30 s later (counters that did not move), early, in the middle and
// near the end. merge adds them to the history that the raw check expects.
func (nh *nativeHistory) late() []prompb.TimeSeries {
	var out []prompb.TimeSeries
	for _, s := range nh.series {
		name := labelValue(s.Labels, "__name__")
		if name != "e2e_nhistory_latency" && name != "e2e_nhistory_weight" {
			continue
		}
		l := prompb.TimeSeries{Labels: s.Labels}
		for _, k := range []int{120, 2400, len(s.Histograms) - 90} {
			hp := s.Histograms[k]
			hp.Timestamp += 30_000
			l.Histograms = append(l.Histograms, hp)
		}
		out = append(out, l)
	}
	return out
}

// merge adds late samples to the history, in time order.
func (nh *nativeHistory) merge(late []prompb.TimeSeries) {
	for _, l := range late {
		for i := range nh.series {
			s := &nh.series[i]
			if labelKeyOf(s.Labels) != labelKeyOf(l.Labels) {
				continue
			}
			s.Histograms = append(s.Histograms, l.Histograms...)
			slices.SortStableFunc(s.Histograms, func(a, b prompb.Histogram) int { return int(a.Timestamp - b.Timestamp) })
			nh.samples += len(l.Histograms)
		}
	}
}

func labelValue(ls []prompb.Label, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

func labelKeyOf(ls []prompb.Label) string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Value
	}
	return labelKey(m)
}

// checkStored reads the history back from url with a SAMPLES remote read
// (the answer's histograms field) and compares every sample with what was
// written: floats bit for bit; histograms kind (integer or float), reset
// hint, schema, zero bucket, count, sum (bit for bit, the staleness marker
// included), custom bounds, and every bucket (spans may differ only by
// empty spans between, as Prometheus's own Equals allows).
func (nh *nativeHistory) checkStored(ctx context.Context, url string) string {
	got, err := remoteRead(ctx, url, nh.start, nh.end.Add(time.Minute),
		&prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "job", Value: nativeHistoryJob})
	if err != nil {
		return err.Error()
	}
	return nh.diffRead(got)
}

// diffRead compares series read back with the history.
func (nh *nativeHistory) diffRead(got []*prompb.TimeSeries) string {
	byKey := map[string]*prompb.TimeSeries{}
	for _, s := range got {
		byKey[labelKeyOf(s.Labels)] = s
	}
	var out []string
	for _, want := range nh.series {
		key := labelKeyOf(want.Labels)
		g := byKey[key]
		if g == nil {
			out = append(out, "missing: "+key)
			continue
		}
		if d := diffStoredSeries(want, *g); d != "" {
			out = append(out, key+": "+d)
		}
		delete(byKey, key)
	}
	for k := range byKey {
		out = append(out, "extra: "+k)
	}
	return strings.Join(out, "\n")
}

func diffStoredSeries(want, got prompb.TimeSeries) string {
	if len(want.Samples) != len(got.Samples) || len(want.Histograms) != len(got.Histograms) {
		return fmt.Sprintf("%d floats and %d histograms written, %d and %d read", len(want.Samples), len(want.Histograms), len(got.Samples), len(got.Histograms))
	}
	for i, w := range want.Samples {
		g := got.Samples[i]
		if w.Timestamp != g.Timestamp || math.Float64bits(w.Value) != math.Float64bits(g.Value) {
			return fmt.Sprintf("float %d: wrote %d=%v, read %d=%v", i, w.Timestamp, w.Value, g.Timestamp, g.Value)
		}
	}
	for i, w := range want.Histograms {
		if d := diffStoredHistogram(w, got.Histograms[i]); d != "" {
			return fmt.Sprintf("histogram %d at %d: %s", i, w.Timestamp, d)
		}
	}
	return ""
}

func diffStoredHistogram(w, g prompb.Histogram) string {
	switch {
	case w.Timestamp != g.Timestamp:
		return fmt.Sprintf("read at %d", g.Timestamp)
	case w.IsFloatHistogram() != g.IsFloatHistogram():
		return fmt.Sprintf("float histogram written: %v, read: %v", w.IsFloatHistogram(), g.IsFloatHistogram())
	case w.ResetHint != g.ResetHint:
		return fmt.Sprintf("reset hint written %v, read %v", w.ResetHint, g.ResetHint)
	}
	fw, fg := w.ToFloatHistogram(), g.ToFloatHistogram()
	if !fw.Equals(fg) || !slices.Equal(fw.CustomValues, fg.CustomValues) {
		return fmt.Sprintf("wrote %v, read %v", fw, fg)
	}
	return ""
}
