package remote

import (
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/store"
)

// Limits bound what one series may carry (zero: no limit). They are the
// shared series rules' limits, so the HTTP layer and the store refuse the
// same series.
type Limits = seriesrules.Limits

// Reasons a sample is rejected, the values of the "reason" label of the
// rejected-samples counter, beside the series rules' own reasons.
const (
	reasonHistogram    = "native_histogram_unsupported"
	reasonStorage      = "storage_error"
	reasonStoreInvalid = "store_rejected"
	reasonUIDExhausted = "uid_exhausted"
)

// invalidSeriesError names the first bad series of a request and the rule
// it breaks.
type invalidSeriesError struct {
	index  int
	series []labels.Label
	*seriesrules.Violation
}

func (e *invalidSeriesError) Error() string {
	if e.series == nil { // metadata
		return e.Rule
	}
	return fmt.Sprintf("series %d %s: %s", e.index, formatLabels(e.series), e.Rule)
}

// validate checks the whole request against the series rules before
// anything is written, so a bad request writes nothing: every series (with
// its float samples and histograms) and every metadata entry. It returns the
// first violation.
func (r *writeRequest) validate(lim Limits) *invalidSeriesError {
	for i, s := range r.series {
		if v := seriesrules.CheckSeries(s.Labels, len(s.Samples), int(r.histograms[i]), lim); v != nil {
			return &invalidSeriesError{index: i, series: s.Labels, Violation: v}
		}
	}
	for i, md := range r.metadata {
		if v := seriesrules.CheckMetadata(md.MetricFamilyName); v != nil {
			return &invalidSeriesError{index: i, Violation: v}
		}
	}
	return nil
}

// floatSeries returns the series that carry float samples: the only ones
// handed to the store. A series of native histograms alone has nothing the
// store keeps, and must not be given label UIDs for nothing. It compacts
// r.series in place.
func (r *writeRequest) floatSeries() []store.SeriesIn {
	out := r.series[:0]
	for _, s := range r.series {
		if len(s.Samples) > 0 {
			out = append(out, s)
		}
	}
	return out
}

const maxShownLabels = 16

// formatLabels prints a label set the way Prometheus does, cut short so that
// an error message stays readable whatever the sender put in it.
func formatLabels(ls []labels.Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i == maxShownLabels {
			fmt.Fprintf(&b, ", ...%d more", len(ls)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(seriesrules.Quote(l.Name))
		b.WriteByte('=')
		b.WriteString(seriesrules.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}
