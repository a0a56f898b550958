package seriesrules

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
)

func TestCheckHistogram(t *testing.T) {
	spans := []histogram.Span{{Offset: -1, Length: 2}}
	stale := math.Float64frombits(value.StaleNaN)
	// n buckets of 1 in one span, as schema 8 over a wide range has them.
	wide := func(n int) *histogram.Histogram {
		return &histogram.Histogram{Schema: 8, Count: uint64(n), PositiveSpans: []histogram.Span{{Offset: 0, Length: uint32(n)}}, PositiveBuckets: append([]int64{1}, make([]int64, n-1)...)}
	}
	wideFloat := func(pos, neg int) *histogram.FloatHistogram {
		fh := &histogram.FloatHistogram{Schema: 8, Count: float64(pos + neg),
			PositiveSpans: []histogram.Span{{Offset: 0, Length: uint32(pos)}}, PositiveBuckets: make([]float64, pos),
			NegativeSpans: []histogram.Span{{Offset: 0, Length: uint32(neg)}}, NegativeBuckets: make([]float64, neg)}
		for i := range fh.PositiveBuckets {
			fh.PositiveBuckets[i] = 1
		}
		for i := range fh.NegativeBuckets {
			fh.NegativeBuckets[i] = 1
		}
		return fh
	}
	// Spans of one bucket each, a bucket apart.
	sparse := &histogram.Histogram{Schema: 0, Count: MaxHistogramBuckets/2 + 1}
	for range MaxHistogramBuckets/2 + 1 {
		sparse.PositiveSpans = append(sparse.PositiveSpans, histogram.Span{Offset: 1, Length: 1})
		sparse.PositiveBuckets = append(sparse.PositiveBuckets, 0)
	}
	sparse.PositiveBuckets[0] = 1
	tooSparse := sparse.Copy()
	tooSparse.NegativeSpans = slices.Repeat([]histogram.Span{{Offset: 1, Length: 0}}, MaxHistogramBuckets/2)
	for _, tc := range []struct {
		name string
		h    *histogram.Histogram
		fh   *histogram.FloatHistogram
		rule string // "": accepted
	}{
		{"integer", &histogram.Histogram{Schema: 3, Count: 5, ZeroCount: 2, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}, Sum: 3}, nil, ""},
		{"float", nil, &histogram.FloatHistogram{Schema: -4, Count: 2.5, NegativeSpans: spans, NegativeBuckets: []float64{0.5, 2}}, ""},
		{"custom buckets", &histogram.Histogram{Schema: -53, Count: 3, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}, CustomValues: []float64{-1, 10}}, nil, ""},
		{"stale integer", &histogram.Histogram{Sum: stale}, nil, ""},
		{"stale float", nil, &histogram.FloatHistogram{Sum: stale}, ""},
		{"gauge", &histogram.Histogram{CounterResetHint: histogram.GaugeType}, nil, ""},
		{"neither", nil, nil, "holds no histogram"},
		{"both", &histogram.Histogram{}, &histogram.FloatHistogram{}, "both an integer and a float"},
		{"spans and buckets", &histogram.Histogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []int64{1}}, nil, "spans specify different number of buckets"},
		{"count", &histogram.Histogram{Count: 7, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}}, nil, "observation count should equal"},
		{"schema", nil, &histogram.FloatHistogram{Schema: 9}, "got schema 9"},
		{"custom bounds", &histogram.Histogram{Schema: -53, CustomValues: []float64{1, math.Inf(1)}}, nil, "must be finite"},
		{"hint", &histogram.Histogram{CounterResetHint: 4}, nil, "unknown counter-reset hint 4"},
		{"most buckets", wide(MaxHistogramBuckets), nil, ""},
		{"too many buckets", wide(MaxHistogramBuckets + 1), nil, "32769 buckets (and custom bounds), more than the limit of 32768"},
		{"most float buckets", nil, wideFloat(MaxHistogramBuckets/2, MaxHistogramBuckets/2), ""},
		{"too many float buckets", nil, wideFloat(MaxHistogramBuckets/2, MaxHistogramBuckets/2+1), "more than the limit of 32768"},
		{"spans", sparse, nil, ""},
		{"too many spans", tooSparse, nil, "32769 spans, more than the limit of 32768"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckHistogram(tc.h, tc.fh)
			switch {
			case tc.rule == "" && v != nil:
				t.Fatalf("refused: %v", v)
			case tc.rule == "":
			case v == nil:
				t.Fatalf("accepted, want %q", tc.rule)
			case v.Reason != ReasonInvalidHistogram || !strings.Contains(v.Rule, tc.rule):
				t.Fatalf("got %s %q, want %s containing %q", v.Reason, v.Rule, ReasonInvalidHistogram, tc.rule)
			}
		})
	}
}
