package remote

import (
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
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
// first violation. On the way it reduces histograms of schemas 9..52 to
// schema 8, as Prometheus's receiver does.
func (r *writeRequest) validate(lim Limits) *invalidSeriesError {
	for i, s := range r.series {
		histograms := len(s.Histograms)
		bad := r.badHistogram != nil && r.badHistogram.series == i
		if bad {
			histograms++
		}
		if v := store.CheckRules(&r.series[i], histograms, lim); v != nil {
			return &invalidSeriesError{index: i, series: s.Labels, Violation: v}
		}
		if bad {
			v := &seriesrules.Violation{Reason: seriesrules.ReasonInvalidHistogram, Rule: fmt.Sprintf("histogram %d: %v", r.badHistogram.index, r.badHistogram.err)}
			return &invalidSeriesError{index: i, series: s.Labels, Violation: v}
		}
		for j := range s.Histograms {
			if v := checkHistogram(&s.Histograms[j]); v != nil {
				v.Rule = fmt.Sprintf("histogram %d (timestamp %d): %s", j, s.Histograms[j].T, v.Rule)
				return &invalidSeriesError{index: i, series: s.Labels, Violation: v}
			}
		}
	}
	for i, md := range r.metadata {
		if v := seriesrules.CheckMetadata(md.MetricFamilyName, md.Help, md.Unit); v != nil {
			return &invalidSeriesError{index: i, Violation: v}
		}
	}
	return nil
}

// checkHistogram reduces a histogram of a schema finer than Prometheus
// keeps (9..52) to schema 8, as Prometheus's receiver does, and checks it
// against the series rules.
func checkHistogram(hs *store.HistogramSample) *seriesrules.Violation {
	var err error
	switch {
	case hs.H != nil && hs.H.Schema > histogram.ExponentialSchemaMax && histogram.IsExponentialSchemaReserved(hs.H.Schema):
		err = hs.H.ReduceResolution(histogram.ExponentialSchemaMax)
	case hs.FH != nil && hs.FH.Schema > histogram.ExponentialSchemaMax && histogram.IsExponentialSchemaReserved(hs.FH.Schema):
		err = hs.FH.ReduceResolution(histogram.ExponentialSchemaMax)
	}
	if err != nil {
		return &seriesrules.Violation{Reason: seriesrules.ReasonInvalidHistogram, Rule: fmt.Sprintf("reducing schema to %d: %v", histogram.ExponentialSchemaMax, err)}
	}
	return seriesrules.CheckHistogram(hs.H, hs.FH)
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
