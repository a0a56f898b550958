package promblocks

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/importer"
	"github.com/prom-hbase/prom-hbase/store"
)

// smp is a sample of any kind: a float, or the histogram that is set.
type smp struct {
	t  int64
	f  float64
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

func (s smp) kind() chunkenc.ValueType {
	switch {
	case s.h != nil:
		return chunkenc.ValHistogram
	case s.fh != nil:
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

// testSeries is a series to write into a block and to expect back.
type testSeries struct {
	lset    labels.Labels
	samples []smp
}

// writeBlock writes the series into one block under dir with Prometheus's
// block writer and returns the block's directory. The writer's head
// refuses samples more than half its chunk range behind the newest: the
// range is made wide.
func writeBlock(t testing.TB, dir string, series []testSeries) string {
	t.Helper()
	mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range series {
		for _, x := range s.samples {
			mint, maxt = min(mint, x.t), max(maxt, x.t)
		}
	}
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, max(tsdb.DefaultBlockDuration, 2*(maxt-mint)+1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	app := w.Appender(ctx)
	for _, s := range series {
		for i, x := range s.samples {
			// One commit must not see a series change kind.
			if i > 0 && x.kind() != s.samples[i-1].kind() {
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
				app = w.Appender(ctx)
			}
			if x.kind() == chunkenc.ValFloat {
				_, err = app.Append(0, s.lset, x.t, x.f)
			} else {
				_, err = app.AppendHistogram(0, s.lset, x.t, x.h, x.fh)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	id, err := w.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, id.String())
}

// floats returns n float samples from t0, step apart, with a staleness
// marker at stale (when >= 0).
func floats(t0, step int64, n, stale int, seed float64) []smp {
	out := make([]smp, n)
	for i := range out {
		out[i] = smp{t: t0 + int64(i)*step, f: math.Sin(float64(i)+seed) * 100}
		if i == stale {
			out[i].f = math.Float64frombits(value.StaleNaN)
		}
	}
	return out
}

// hists returns n integer histograms (exponential, growing) from t0.
func hists(t0, step int64, n int) []smp {
	out := make([]smp, n)
	for i := range out {
		c := uint64(i + 1)
		out[i] = smp{t: t0 + int64(i)*step, h: &histogram.Histogram{
			Schema: 2, ZeroThreshold: 0.001, ZeroCount: c, Count: 4 * c, Sum: float64(i) * 1.5,
			PositiveSpans:   []histogram.Span{{Offset: -1, Length: 3}},
			PositiveBuckets: []int64{int64(c), 0, 0},
		}}
	}
	return out
}

// floatHists returns n float histograms with custom buckets from t0.
func floatHists(t0, step int64, n int) []smp {
	out := make([]smp, n)
	for i := range out {
		c := float64(i) + 0.25
		out[i] = smp{t: t0 + int64(i)*step, fh: &histogram.FloatHistogram{
			Schema: histogram.CustomBucketsSchema, Count: 2 * c, Sum: c * 3,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}},
			PositiveBuckets: []float64{c, c},
			CustomValues:    []float64{0.5, 1},
		}}
	}
	return out
}

func lbls(kv ...string) labels.Labels { return labels.FromStrings(kv...) }

// readAll reads every unit of src into series keyed by their labels,
// checking each piece's order and size on the way.
func readAll(t *testing.T, src *Source) map[string][]string {
	t.Helper()
	units, err := src.Units(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	last := map[string]int64{}
	for _, u := range units {
		it, err := src.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			in := it.At()
			if n := len(in.Samples) + len(in.Histograms); n == 0 || n > 2*src.opts.PieceSamples {
				t.Errorf("piece of %d samples, pieces are %d", n, src.opts.PieceSamples)
			}
			key := labels.New(in.Labels...).String()
			if first := firstT(in); first <= last[key] && len(got[key]) > 0 {
				t.Errorf("%s: a piece from %d after one up to %d", key, first, last[key])
			}
			last[key] = lastT(in)
			got[key] = append(got[key], pointStrings(in)...)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func firstT(in store.SeriesIn) int64 {
	t := int64(math.MaxInt64)
	if len(in.Samples) > 0 {
		t = in.Samples[0].T
	}
	if len(in.Histograms) > 0 {
		t = min(t, in.Histograms[0].T)
	}
	return t
}

func lastT(in store.SeriesIn) int64 {
	t := int64(math.MinInt64)
	if len(in.Samples) > 0 {
		t = in.Samples[len(in.Samples)-1].T
	}
	if len(in.Histograms) > 0 {
		t = max(t, in.Histograms[len(in.Histograms)-1].T)
	}
	return t
}

// pointStrings formats a piece's samples in time order.
func pointStrings(in store.SeriesIn) []string {
	type tp struct {
		t int64
		s string
	}
	var all []tp
	for _, s := range in.Samples {
		all = append(all, tp{s.T, fmt.Sprintf("%d:%x", s.T, math.Float64bits(s.V))})
	}
	for _, h := range in.Histograms {
		if h.H != nil {
			all = append(all, tp{h.T, fmt.Sprintf("%d:h%s", h.T, h.H.String())})
		} else {
			all = append(all, tp{h.T, fmt.Sprintf("%d:fh%s", h.T, h.FH.String())})
		}
	}
	slices.SortFunc(all, func(a, b tp) int { return int(a.t - b.t) })
	out := make([]string, len(all))
	for i, x := range all {
		out[i] = x.s
	}
	return out
}

// want formats what series hold in [mint, maxt].
func want(series []testSeries, mint, maxt int64) map[string][]string {
	out := map[string][]string{}
	for _, s := range series {
		var in store.SeriesIn
		for _, x := range s.samples {
			if x.t < mint || x.t > maxt {
				continue
			}
			switch x.kind() {
			case chunkenc.ValFloat:
				in.Samples = append(in.Samples, store.Sample{T: x.t, V: x.f})
			default:
				in.Histograms = append(in.Histograms, store.HistogramSample{T: x.t, H: x.h, FH: x.fh})
			}
		}
		if pts := pointStrings(in); len(pts) > 0 {
			out[s.lset.String()] = append(out[s.lset.String()], pts...)
		}
	}
	for k, v := range out {
		slices.Sort(v)
		out[k] = slices.Compact(v)
	}
	return out
}

// diffSeries describes how got differs from want (empty when equal).
func diffSeries(want, got map[string][]string) string {
	var b strings.Builder
	for k, w := range want {
		g := slices.Sorted(slices.Values(got[k]))
		if slices.Equal(w, g) {
			continue
		}
		i := 0
		for i < min(len(w), len(g)) && w[i] == g[i] {
			i++
		}
		at := func(s []string) string {
			if i < len(s) {
				return fmt.Sprintf("%.100s", s[i])
			}
			return "(end)"
		}
		fmt.Fprintf(&b, "%s: want %d samples, got %d; first difference at %d: want %s, got %s\n", k, len(w), len(g), i, at(w), at(g))
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "%s: not expected\n", k)
		}
	}
	return b.String()
}

var _ importer.Source = (*Source)(nil)
