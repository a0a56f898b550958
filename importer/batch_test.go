package importer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/store"
)

func TestCutBefore(t *testing.T) {
	const h = hourMillis
	fs := []store.Sample{{T: 10}, {T: 20}, {T: h + 5}, {T: h + 6}, {T: 2*h + 1}}
	hs := []store.HistogramSample{{T: 15}, {T: h + 1}, {T: 3 * h}}
	for _, tc := range []struct {
		room   int
		nf, nh int
		ok     bool
	}{
		{room: 8, nf: 5, nh: 3, ok: true}, // all fits
		{room: 7, nf: 5, nh: 2, ok: true}, // the last hour waits
		{room: 6, nf: 4, nh: 2, ok: true}, // hours 0 and 1
		{room: 5, nf: 2, nh: 1, ok: true}, // hour 0 only
		{room: 3, nf: 2, nh: 1, ok: true},
		{room: 2, ok: false}, // hour 0 holds 3
		{room: 0, ok: false},
	} {
		nf, nh, ok := cutBefore(fs, hs, tc.room)
		if ok != tc.ok || ok && (nf != tc.nf || nh != tc.nh) {
			t.Errorf("room %d: cut (%d, %d, %v), want (%d, %d, %v)", tc.room, nf, nh, ok, tc.nf, tc.nh, tc.ok)
		}
	}
	if nf, nh := splitCount(fs, hs, 4); nf != 2 || nh != 2 {
		t.Errorf("splitCount 4: %d, %d; want 2, 2", nf, nh)
	}
}

// TestBatcherKeepsHoursWhole feeds random series in random pieces and
// checks every batch: within the bound, every sample exactly once, and
// each series-hour in one batch unless it alone exceeds a batch.
func TestBatcherKeepsHoursWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		max := 1 + rng.IntN(300)
		var got [][]store.SeriesIn
		free := &batch{}
		bt := batcher{max: max, cur: &batch{}, emit: func(b *batch) (*batch, error) {
			got = append(got, cloneSeries(b.finish()))
			b.reset()
			next := free
			free = b
			return next, nil
		}}
		type key struct {
			series string
			hour   int64
		}
		hourSize := map[key]int{}
		want := map[string]int{}
		for s := range 1 + rng.IntN(5) {
			ls := []labels.Label{{Name: "__name__", Value: fmt.Sprintf("m%d", s)}}
			fs, hs := randomSeries(rng)
			for _, x := range fs {
				hourSize[key{ls[0].Value, x.T / hourMillis}]++
			}
			for _, x := range hs {
				hourSize[key{ls[0].Value, x.T / hourMillis}]++
			}
			want[ls[0].Value] = len(fs) + len(hs)
			for len(fs)+len(hs) > 0 {
				nf, nh := splitCount(fs, hs, min(1+rng.IntN(150), len(fs)+len(hs)))
				if err := bt.add(ls, fs[:nf], hs[:nh]); err != nil {
					t.Fatal(err)
				}
				fs, hs = fs[nf:], hs[nh:]
			}
		}
		if err := bt.flush(); err != nil {
			t.Fatal(err)
		}
		seen := map[key]int{} // batch of each series-hour
		count := map[string]int{}
		for i, b := range got {
			size := 0
			for _, in := range b {
				name := in.Labels[0].Value
				if len(in.Samples)+len(in.Histograms) == 0 {
					t.Fatalf("round %d: batch %d holds series %s without samples", round, i, name)
				}
				size += len(in.Samples) + len(in.Histograms)
				count[name] += len(in.Samples) + len(in.Histograms)
				ts := make([]int64, 0, len(in.Samples)+len(in.Histograms))
				for _, x := range in.Samples {
					ts = append(ts, x.T)
				}
				for _, x := range in.Histograms {
					ts = append(ts, x.T)
				}
				for _, ti := range ts {
					k := key{name, ti / hourMillis}
					if prev, ok := seen[k]; ok && prev != i && hourSize[k] <= max {
						t.Fatalf("round %d (max %d): hour %v of %d samples in batches %d and %d", round, max, k, hourSize[k], prev, i)
					}
					seen[k] = i
				}
			}
			if size > max || size == 0 {
				t.Fatalf("round %d: batch %d holds %d samples, max %d", round, i, size, max)
			}
		}
		for name, n := range want {
			if count[name] != n {
				t.Fatalf("round %d: series %s: %d samples in the batches, %d given", round, name, count[name], n)
			}
		}
	}
}

// randomSeries returns time-sorted floats and histograms, never at one
// timestamp, over a few hours.
func randomSeries(rng *rand.Rand) ([]store.Sample, []store.HistogramSample) {
	var fs []store.Sample
	var hs []store.HistogramSample
	t := int64(rng.IntN(3)) * hourMillis
	for range rng.IntN(600) {
		t += 1 + rng.Int64N(hourMillis/40)
		if rng.IntN(4) == 0 {
			hs = append(hs, store.HistogramSample{T: t, H: &histogram.Histogram{}})
		} else {
			fs = append(fs, store.Sample{T: t})
		}
	}
	return fs, hs
}

func cloneSeries(in []store.SeriesIn) []store.SeriesIn {
	out := make([]store.SeriesIn, len(in))
	for i, s := range in {
		out[i] = store.SeriesIn{Labels: append([]labels.Label(nil), s.Labels...),
			Samples: append([]store.Sample(nil), s.Samples...), Histograms: append([]store.HistogramSample(nil), s.Histograms...)}
	}
	return out
}

// BenchmarkBatcher is the importer's own cost per sample: copying pieces
// of 240 samples (an hour at 15 s) into batches of 100,000.
func BenchmarkBatcher(b *testing.B) {
	fs := make([]store.Sample, 240)
	for i := range fs {
		fs[i] = store.Sample{T: int64(i) * 15000, V: float64(i)}
	}
	ls := []labels.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "node"}}
	spare := &batch{}
	bt := batcher{max: DefaultBatchSamples, cur: &batch{}, emit: func(full *batch) (*batch, error) {
		full.finish()
		full.reset()
		next := spare
		spare = full
		return next, nil
	}}
	b.ReportAllocs()
	b.SetBytes(int64(len(fs)) * 16)
	for i := 0; b.Loop(); i++ {
		ls[1].Value = [...]string{"a", "b"}[i%2] // a new series each time
		if err := bt.add(ls, fs, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(fs))/b.Elapsed().Seconds(), "samples/s")
}
