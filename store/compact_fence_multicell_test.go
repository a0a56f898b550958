package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestCompactStaleMultiCellFenced: a row that folds into two cells, a
// float run's and a histogram run's. Compactor A reads it with one late
// histogram sample inside the histogram chunk's range and stalls just as it
// writes; a second late sample lands in the same range; A's lease runs out
// and compactor B folds the row, both late samples in, deleting their raw
// cells. B's float cell is A's, bit for bit, so a condition on the first
// cell a put writes would let A's put through, and A's histogram chunk, of
// the same qualifier and timestamp as B's, would replace it without the
// second late sample. The row's fence cell, which every fold changes, must
// refuse A's put.
func TestCompactStaleMultiCellFenced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s, clock := clockedStore(t, db, Config{TablePrefix: prefix})
		cfg := CompactorConfig{Grace: 10 * time.Minute, Lease: 4 * time.Second, Quiet: MarkRefresh + time.Second, BatchRows: 3, Rate: -1, now: clock.now}
		first := (time.Now().Add(-48*time.Hour).UnixMilli() / hour) * hour
		ls := lbls("__name__", "fenced", "job", "x")
		in := SeriesIn{Labels: ls}
		var lateA, lateB HistogramSample
		for i := range 240 {
			ts := first + int64(i)*15_000
			switch {
			case i < 120:
				in.Samples = append(in.Samples, Sample{T: ts, V: float64(i) * 1.5})
			case i == 150:
				lateA = HistogramSample{T: ts, H: counterHist(uint64(10 + i))}
			case i == 180:
				lateB = HistogramSample{T: ts, H: counterHist(uint64(10 + i))}
			default:
				in.Histograms = append(in.Histograms, HistogramSample{T: ts, H: counterHist(uint64(10 + i))})
			}
		}
		write := func(in SeriesIn) {
			t.Helper()
			if err := s.Write(ctx, []SeriesIn{in}); err != nil {
				t.Fatal(err)
			}
		}
		write(in)
		clock.advance(cfg.Quiet + time.Second)
		b, err := newCompactor(s.layout, s.data, s.todo.t, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := b.Pass(ctx); err != nil || st.SeriesHours != 1 {
			t.Fatalf("first fold: %+v, %v", st, err)
		}
		if got := rowEncodings(t, s); len(got) != 2 {
			t.Fatalf("after the first fold the row holds chunk cells %v, want two (a float run's, a histogram run's)", got)
		}

		write(SeriesIn{Labels: ls, Histograms: []HistogramSample{lateA}})
		clock.advance(cfg.Quiet + time.Second)
		st := newStallTable(s.data, false)
		f := &fenceCase{s: s, clock: clock, cfg: cfg}
		aDone := f.startStalled(t, st, false)
		write(SeriesIn{Labels: ls, Histograms: []HistogramSample{lateB}})
		clock.advance(cfg.Quiet + cfg.Lease + time.Second) // A's lease is over, the late mark quiet
		if stB, err := b.Pass(ctx); err != nil || stB.SeriesHours != 1 || stB.RawCellsDeleted != 2 {
			t.Fatalf("B's pass: %+v, %v; want the row folded, its two late raw cells deleted", stB, err)
		}

		all := in
		all.Histograms = append([]HistogramSample{}, in.Histograms[:30]...)
		all.Histograms = append(all.Histograms, lateA)
		all.Histograms = append(all.Histograms, in.Histograms[30:59]...)
		all.Histograms = append(all.Histograms, lateB)
		all.Histograms = append(all.Histograms, in.Histograms[59:]...)
		want := collected([]SeriesIn{all})
		read := func(when string) {
			t.Helper()
			got := collect(t, s.Select(ctx, Query{Start: first, End: first + hour,
				Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "fenced")}}))
			if got != want {
				gs, ws := strings.Fields(got), strings.Fields(want)
				for i := range min(len(gs), len(ws)) {
					if gs[i] != ws[i] {
						t.Fatalf("%s the hour reads %d points, want %d; point %d is %s, want %s", when, len(gs), len(ws), i, gs[i], ws[i])
					}
				}
				t.Fatalf("%s the hour reads %d points, want %d", when, len(gs), len(ws))
			}
		}
		read("after B's fold")
		checkRefused(t, st, aDone)
		read("after A's stale write")
	})
}

// counterHist is a valid integer histogram of count observations, one in
// the zero bucket and the rest in one bucket, as a counter grows.
func counterHist(count uint64) *histogram.Histogram {
	return &histogram.Histogram{
		Schema: 3, ZeroThreshold: 1e-128, ZeroCount: 1, Count: count, Sum: float64(count) * 1.5,
		PositiveSpans: []histogram.Span{{Offset: 2, Length: 1}}, PositiveBuckets: []int64{int64(count) - 1},
	}
}
