package seriesrules

import (
	"github.com/prometheus/prometheus/model/histogram"
)

// ReasonInvalidHistogram is the reason of a native histogram that breaks
// the histogram rules.
const ReasonInvalidHistogram = "invalid_histogram"

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
func CheckHistogram(h *histogram.Histogram, fh *histogram.FloatHistogram) *Violation {
	var (
		err  error
		hint histogram.CounterResetHint
	)
	switch {
	case h != nil && fh != nil:
		return violation(ReasonInvalidHistogram, "histogram sample is both an integer and a float histogram")
	case h != nil:
		err, hint = h.Validate(), h.CounterResetHint
	case fh != nil:
		err, hint = fh.Validate(), fh.CounterResetHint
	default:
		return violation(ReasonInvalidHistogram, "histogram sample holds no histogram")
	}
	if err != nil {
		return violation(ReasonInvalidHistogram, "%v", err)
	}
	if hint > histogram.GaugeType {
		return violation(ReasonInvalidHistogram, "unknown counter-reset hint %d", hint)
	}
	return nil
}
