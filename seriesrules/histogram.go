package seriesrules

import (
	"github.com/prometheus/prometheus/model/histogram"
)

// ReasonInvalidHistogram is the reason of a native histogram that breaks
// the histogram rules.
const ReasonInvalidHistogram = "invalid_histogram"

// MaxHistogramBuckets bounds the buckets of one histogram sample (positive,
// negative and custom bounds together) and its spans. Prometheus sets no such
// bound, but its clients cut far below it (client_golang and OpenTelemetry
// default to 160 buckets a side; schema 8, the finest, spans 2^64 in 16,384),
// and a stored sample must fit a cell: HBase refuses a cell over 10 MiB, and
// the refusal would fail the whole request again on every retry. At most
// about 10 bytes a bucket and as many a span, a sample's cell stays under
// 700 KB.
const MaxHistogramBuckets = 1 << 15

// CheckHistogram checks one native histogram sample: exactly one of h (an
// integer histogram) and fh (a float histogram) is set, and it meets
// Prometheus's own rules for what its TSDB accepts (histogram.Validate): a
// schema of -4..8 or the custom-bucket schema -53 (with strictly increasing
// finite bounds and nothing on the negative side or in the zero bucket),
// spans that add up to the number of buckets, no negative counts, and for an
// integer histogram a count equal to the buckets' (at least it when the sum
// is NaN, as in a staleness marker). The counter-reset hint must be one of
// the four Prometheus defines.
//
// Schemas 9..52 (finer than Prometheus keeps) are refused here: a caller
// that accepts them, as Prometheus's receiver does, reduces them to 8 first.
//
// And it holds at most MaxHistogramBuckets buckets, and as many spans.
func CheckHistogram(h *histogram.Histogram, fh *histogram.FloatHistogram) *Violation {
	var (
		validate       func() error
		hint           histogram.CounterResetHint
		buckets, spans int
	)
	switch {
	case h != nil && fh != nil:
		return violation(ReasonInvalidHistogram, "histogram sample is both an integer and a float histogram")
	case h != nil:
		validate, hint = h.Validate, h.CounterResetHint
		buckets = len(h.PositiveBuckets) + len(h.NegativeBuckets) + len(h.CustomValues)
		spans = len(h.PositiveSpans) + len(h.NegativeSpans)
	case fh != nil:
		validate, hint = fh.Validate, fh.CounterResetHint
		buckets = len(fh.PositiveBuckets) + len(fh.NegativeBuckets) + len(fh.CustomValues)
		spans = len(fh.PositiveSpans) + len(fh.NegativeSpans)
	default:
		return violation(ReasonInvalidHistogram, "histogram sample holds no histogram")
	}
	// Checked first: Validate walks every bucket.
	if buckets > MaxHistogramBuckets {
		return violation(ReasonInvalidHistogram, "%d buckets (and custom bounds), more than the limit of %d", buckets, MaxHistogramBuckets)
	}
	if spans > MaxHistogramBuckets {
		return violation(ReasonInvalidHistogram, "%d spans, more than the limit of %d", spans, MaxHistogramBuckets)
	}
	err := validate()
	if err != nil {
		return violation(ReasonInvalidHistogram, "%v", err)
	}
	if hint > histogram.GaugeType {
		return violation(ReasonInvalidHistogram, "unknown counter-reset hint %d", hint)
	}
	return nil
}
