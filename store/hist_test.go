package store

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
)

// histString formats a histogram sample bit-exactly: every field, floats by
// their bits, so that two strings are equal exactly when the samples are.
func histString(hs HistogramSample) string {
	var b strings.Builder
	bits := func(f float64) string { return fmt.Sprintf("%x", math.Float64bits(f)) }
	if h := hs.H; h != nil {
		fmt.Fprintf(&b, "%d:H{hint=%d s=%d zt=%s zc=%d c=%d sum=%s ps=%v ns=%v pb=%v nb=%v cv=[", hs.T, h.CounterResetHint, h.Schema,
			bits(h.ZeroThreshold), h.ZeroCount, h.Count, bits(h.Sum), h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets)
		for _, v := range h.CustomValues {
			b.WriteString(bits(v) + " ")
		}
	} else if fh := hs.FH; fh != nil {
		fmt.Fprintf(&b, "%d:FH{hint=%d s=%d zt=%s zc=%s c=%s sum=%s ps=%v ns=%v pb=[", hs.T, fh.CounterResetHint, fh.Schema,
			bits(fh.ZeroThreshold), bits(fh.ZeroCount), bits(fh.Count), bits(fh.Sum), fh.PositiveSpans, fh.NegativeSpans)
		for _, v := range fh.PositiveBuckets {
			b.WriteString(bits(v) + " ")
		}
		b.WriteString("] nb=[")
		for _, v := range fh.NegativeBuckets {
			b.WriteString(bits(v) + " ")
		}
		b.WriteString("] cv=[")
		for _, v := range fh.CustomValues {
			b.WriteString(bits(v) + " ")
		}
	} else {
		fmt.Fprintf(&b, "%d:<none", hs.T)
	}
	b.WriteString("]}")
	return strings.ReplaceAll(b.String(), " ", "_")
}

func testHist(count uint64) *histogram.Histogram {
	return &histogram.Histogram{
		Schema: 3, ZeroThreshold: 1e-128, ZeroCount: 1, Count: count, Sum: float64(count) * 1.5,
		PositiveSpans:   []histogram.Span{{Offset: -2, Length: 2}, {Offset: 3, Length: 1}},
		PositiveBuckets: []int64{int64(count) - 2, 0, 1 - int64(count) + 1},
	}
}

func TestHistogramsRawRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		base := int64(1_750_000_000_000) / hour * hour
		stale := &histogram.FloatHistogram{Sum: math.Float64frombits(0x7ff0000000000002), Schema: -53, CustomValues: []float64{1, 2}}
		in := SeriesIn{
			Labels:  lbls("__name__", "h", "job", "a"),
			Samples: []Sample{{T: base + 1000, V: 1}, {T: base + 4000, V: 2}},
			Histograms: []HistogramSample{
				{T: base + 2000, H: testHist(3)},
				{T: base + 3000, FH: testHist(5).ToFloat(nil)},
				{T: base + 5000, FH: stale},
			},
		}
		if err := s.Write(ctx, []SeriesIn{in}); err != nil {
			t.Fatal(err)
		}
		q := Query{Start: base, End: base + hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "h")}}
		got := collect(t, s.Select(ctx, q))
		want := fmt.Sprintf(`{__name__="h", job="a"} %d:3ff0000000000000 %s %s %d:4000000000000000 %s`+"\n",
			base+1000, histString(in.Histograms[0]), histString(in.Histograms[1]), base+4000, histString(in.Histograms[2]))
		if got != want {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
		// Raw histograms cut into chunks: every sample comes back, the stale
		// marker as the chunk format has it (its Sum alone).
		in.Histograms[2].FH = &histogram.FloatHistogram{Sum: stale.Sum}
		want = fmt.Sprintf(`{__name__="h", job="a"} %d:3ff0000000000000 %s %s %d:4000000000000000 %s`+"\n",
			base+1000, histString(in.Histograms[0]), histString(in.Histograms[1]), base+4000, histString(in.Histograms[2]))
		if got := collectChunksString(t, s.SelectChunks(ctx, q), false); got != want {
			t.Fatalf("chunks: got\n%s\nwant\n%s", got, want)
		}
	})
}

// writePoints writes floats and histograms merged in time order, as collect
// and the reference format them; a time in both is a bug and shows twice.
func writePoints(b *strings.Builder, fs []Sample, hs []HistogramSample) {
	for len(fs) > 0 || len(hs) > 0 {
		if len(hs) == 0 || (len(fs) > 0 && fs[0].T <= hs[0].T) {
			fmt.Fprintf(b, " %d:%x", fs[0].T, math.Float64bits(fs[0].V))
			fs = fs[1:]
			continue
		}
		b.WriteString(" " + histString(hs[0]))
		hs = hs[1:]
	}
}
