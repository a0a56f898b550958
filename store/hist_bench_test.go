package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec/histgen"
)

// histogramBatch is series x samples of a realistic native histogram
// (exponential schema 3, ~20 buckets, counters growing) at a 15 s step,
// hints as Prometheus's remote write sends them (unknown).
func histogramBatch(series, samples int, start int64, run string) []SeriesIn {
	out := make([]SeriesIn, series)
	for i := range out {
		rng := rand.New(rand.NewPCG(uint64(i), 14))
		g := histgen.Realistic(rng, 20)
		hs := make([]HistogramSample, samples)
		for j := range hs {
			s := g.Next(start + int64(j)*15000)
			s.H.CounterResetHint = histogram.UnknownCounterReset
			hs[j] = HistogramSample{T: s.T, H: s.H}
		}
		out[i] = SeriesIn{
			Labels:     lbls("__name__", "http_request_duration_seconds", "job", "api", "pod", fmt.Sprintf("%s-pod-%d", run, i)),
			Histograms: hs,
		}
	}
	return out
}

// BenchmarkWriteHistograms writes 100 series x 10 histogram samples per
// iteration on Pebble.
func BenchmarkWriteHistograms(b *testing.B) {
	db, _ := openPebble(b)
	s := openStore(b, db, Config{})
	ctx := context.Background()
	batch := histogramBatch(100, 10, 1_750_000_000_000, "w")
	if err := s.Write(ctx, batch); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "histograms/s")
}

// BenchmarkCompactHistograms compacts 100 series x one hour of 15 s
// histogram samples per iteration on Pebble, then reads them back with
// Select and SelectChunks; it reports the chunk cells' bytes (qualifier and
// value) per sample against the same samples in Prometheus chunks.
func BenchmarkCompactHistograms(b *testing.B) {
	db, _ := openPebble(b)
	s, clock := clockedStore(b, db, Config{})
	c := clockedCompactor(b, s, clock)
	ctx := context.Background()
	hourStart := (time.Now().Add(-24*time.Hour).UnixMilli() / hour) * hour
	const series, samples = 100, 240
	var bytesWritten, promBytes int
	n := 0
	for b.Loop() {
		b.StopTimer()
		start := hourStart - int64(n)*hour
		batch := histogramBatch(series, samples, start, "bench")
		if n == 0 {
			for _, in := range batch {
				promBytes += histgen.PromChunkBytes(len(in.Histograms), func(i int) (int64, *histogram.Histogram) { return in.Histograms[i].T, in.Histograms[i].H })
			}
		}
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		n++
		clock.advance(DefaultCompactQuiet + time.Second)
		b.StartTimer()
		st, err := c.Pass(ctx)
		if err != nil || st.RawCellsDeleted != series*samples {
			b.Fatalf("%+v, %v", st, err)
		}
		bytesWritten += st.BytesWritten
		q := Query{Start: start, End: start + hour - 1, Matchers: []*labels.Matcher{mustMatcher(b, labels.MatchEqual, "job", "api")}}
		if got := countHistograms(b, s.Select(ctx, q)); got != series*samples {
			b.Fatalf("read %d histograms", got)
		}
		cs := s.SelectChunks(ctx, q)
		for cs.Next() {
		}
		if err := cs.Err(); err != nil {
			b.Fatal(err)
		}
		cs.Close()
	}
	b.ReportMetric(float64(series*samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(bytesWritten)/float64(series*samples*n), "cellbytes/sample")
	b.ReportMetric(float64(promBytes)/float64(series*samples), "prombytes/sample")
}

func countHistograms(b *testing.B, ss SeriesSet) int {
	defer ss.Close()
	n := 0
	for ss.Next() {
		n += len(ss.At().Histograms)
	}
	if err := ss.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}
