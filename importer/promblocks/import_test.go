package promblocks

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/importer"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// TestImportIntoStore imports overlapping blocks with a tombstone and
// every kind of sample into a store, verifies, and reads everything back.
func TestImportIntoStore(t *testing.T) {
	dir := t.TempDir()
	a, b := mixed(t0, "i"), mixed(t0+2*60*minute, "i")
	writeBlock(t, dir, a)
	writeBlock(t, dir, b)
	late := []testSeries{{lbls("__name__", "m"), lateSamples()}}
	writeBlock(t, dir, late)
	src, err := New(Options{Dir: dir, PieceSamples: 64})
	if err != nil {
		t.Fatal(err)
	}
	db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Config{Layout: rowkey.Layout{SaltBuckets: 2}})
	if err != nil {
		t.Fatal(err)
	}
	state, err := importer.OpenState(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := importer.Run(ctx, importer.Config{Source: src, Writer: st, Reader: st, State: state,
		Verify: true, BatchSamples: 300, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Imported != 2 || sum.Verified != 2 || sum.Bytes == 0 {
		t.Errorf("summary %+v, want two units (one of two overlapping blocks)", sum)
	}
	got := map[string][]string{}
	ss := st.Select(ctx, store.Query{Start: 0, End: math.MaxInt64 / 2,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}})
	for ss.Next() {
		s := ss.At()
		got[s.Labels.String()] = pointStrings(store.SeriesIn{Samples: s.Samples, Histograms: s.Histograms})
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	ss.Close()
	if d := diffSeries(want(append(append(a, b...), late...), math.MinInt64, math.MaxInt64), got); d != "" {
		t.Error(d)
	}
}

func FuzzParseMeta(f *testing.F) {
	for _, seed := range []string{
		`{"ulid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","minTime":0,"maxTime":7200000,"stats":{"numSamples":10,"numSeries":1},"version":1}`,
		`{"ulid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","minTime":5,"maxTime":5,"version":1}`,
		`{"ulid":"x","version":1}`,
		`{"version":2}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseMeta(raw)
		if err != nil {
			return
		}
		if m.Version != 1 || m.MinTime >= m.MaxTime || m.ULID.String() == "00000000000000000000000000" {
			t.Fatalf("accepted %+v", m)
		}
	})
}

// BenchmarkSeriesIter reads a block of 1,000 series x 2 h at 15 s.
func BenchmarkSeriesIter(b *testing.B) {
	dir := b.TempDir()
	series := make([]testSeries, 1000)
	for i := range series {
		series[i] = testSeries{lbls("__name__", "bench", "i", string(rune('a'+i%26)), "n", strconv.Itoa(i)), floats(t0, 15_000, 480, -1, float64(i))}
	}
	writeBlock(b, dir, series)
	src, err := New(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	units, _ := src.Units(context.Background())
	b.ReportAllocs()
	var n int
	for b.Loop() {
		it, err := src.Open(context.Background(), units[0])
		if err != nil {
			b.Fatal(err)
		}
		for it.Next() {
			n += len(it.At().Samples)
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}

// discard is a Writer that keeps nothing: the pipeline's own cost.
type discard struct{}

func (discard) WriteHistory(context.Context, []store.SeriesIn) error { return nil }

// BenchmarkImportPipeline is the import without the store: blocks read,
// pieces checked and batched, batches handed to a writer that keeps
// nothing. 4 blocks of 2,000 series x 2 h at 15 s.
func BenchmarkImportPipeline(b *testing.B) {
	dir := b.TempDir()
	for blk := range 4 {
		series := make([]testSeries, 2000)
		for i := range series {
			series[i] = testSeries{lbls("__name__", "bench", "i", strconv.Itoa(i%40), "n", strconv.Itoa(i)),
				floats(t0+int64(blk)*120*minute, 15_000, 480, -1, float64(i))}
		}
		writeBlock(b, dir, series)
	}
	src, err := New(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var n int64
	for b.Loop() {
		sum, err := importer.Run(context.Background(), importer.Config{Source: src, Writer: discard{}})
		if err != nil {
			b.Fatal(err)
		}
		n += sum.Samples
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}
