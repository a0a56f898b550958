package cellcodec

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// SameHistogram reports whether a and b are equal in every field, floats by
// their bits (so NaN payloads count and -0 differs from 0), a nil slice
// equal to an empty one. histogram.Histogram.Equals compares floats as
// numbers, which is not what a bit-exact store needs.
func SameHistogram(a, b *histogram.Histogram) bool {
	return a.CounterResetHint == b.CounterResetHint && a.Schema == b.Schema &&
		sameFloat(a.ZeroThreshold, b.ZeroThreshold) && a.ZeroCount == b.ZeroCount &&
		a.Count == b.Count && sameFloat(a.Sum, b.Sum) &&
		sameSpans(a.PositiveSpans, b.PositiveSpans) && sameSpans(a.NegativeSpans, b.NegativeSpans) &&
		sameInts(a.PositiveBuckets, b.PositiveBuckets) && sameInts(a.NegativeBuckets, b.NegativeBuckets) &&
		sameFloats(a.CustomValues, b.CustomValues)
}

// SameFloatHistogram is SameHistogram for float histograms.
func SameFloatHistogram(a, b *histogram.FloatHistogram) bool {
	return a.CounterResetHint == b.CounterResetHint && a.Schema == b.Schema &&
		sameFloat(a.ZeroThreshold, b.ZeroThreshold) && sameFloat(a.ZeroCount, b.ZeroCount) &&
		sameFloat(a.Count, b.Count) && sameFloat(a.Sum, b.Sum) &&
		sameSpans(a.PositiveSpans, b.PositiveSpans) && sameSpans(a.NegativeSpans, b.NegativeSpans) &&
		sameFloats(a.PositiveBuckets, b.PositiveBuckets) && sameFloats(a.NegativeBuckets, b.NegativeBuckets) &&
		sameFloats(a.CustomValues, b.CustomValues)
}

// SameHistogramSample compares two samples with SameHistogram or
// SameFloatHistogram; samples of different kinds differ.
func SameHistogramSample(a, b HistogramSample) bool {
	switch {
	case a.T != b.T:
		return false
	case a.H != nil && b.H != nil:
		return SameHistogram(a.H, b.H)
	case a.FH != nil && b.FH != nil:
		return SameFloatHistogram(a.FH, b.FH)
	}
	return false
}

func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func sameSpans(a, b []histogram.Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameFloat(a[i], b[i]) {
			return false
		}
	}
	return true
}
