package cellcodec

import "github.com/prometheus/prometheus/model/histogram"

// HistogramSample is one native histogram sample; T is in milliseconds.
// Exactly one of H (an integer histogram) and FH (a float histogram) is set,
// every field as written: a staleness marker is a histogram whose Sum holds
// the stale NaN's bits.
type HistogramSample struct {
	T  int64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}
