package remote

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/store"
)

// Limits bound what one series may carry. Zero means no limit.
type Limits struct {
	MaxLabels           int
	MaxLabelNameLength  int
	MaxLabelValueLength int
}

// Reasons a sample is rejected, the values of the "reason" label of
// the rejected-samples counter.
const (
	reasonInvalidLabels = "invalid_labels"
	reasonTooManyLabels = "too_many_labels"
	reasonLabelTooLong  = "label_too_long"
	reasonHistogram     = "native_histogram_unsupported"
	reasonStorage       = "storage_error"
	reasonStoreInvalid  = "store_rejected"
)

// invalidSeriesError names the first bad series of a request and the rule
// it breaks.
type invalidSeriesError struct {
	index  int
	series []labels.Label
	reason string
	msg    string
}

func (e *invalidSeriesError) Error() string {
	return fmt.Sprintf("series %d %s: %s", e.index, formatLabels(e.series), e.msg)
}

// validateSeries checks every series of a request before anything is
// written, so a bad request writes nothing. It returns the first violation.
func validateSeries(series []store.SeriesIn, lim Limits) *invalidSeriesError {
	for i, s := range series {
		if reason, msg := validateLabels(s.Labels, lim); msg != "" {
			return &invalidSeriesError{index: i, series: s.Labels, reason: reason, msg: msg}
		}
	}
	return nil
}

func validateLabels(ls []labels.Label, lim Limits) (reason, msg string) {
	if len(ls) == 0 {
		return reasonInvalidLabels, "series has no labels"
	}
	if lim.MaxLabels > 0 && len(ls) > lim.MaxLabels {
		return reasonTooManyLabels, fmt.Sprintf("%d labels, more than the limit of %d", len(ls), lim.MaxLabels)
	}
	for i, l := range ls {
		switch {
		case l.Name == "":
			return reasonInvalidLabels, fmt.Sprintf("label %d has an empty name", i)
		case !utf8.ValidString(l.Name):
			return reasonInvalidLabels, fmt.Sprintf("label name %s is not valid UTF-8", strconv.QuoteToASCII(truncate(l.Name)))
		case !utf8.ValidString(l.Value):
			return reasonInvalidLabels, fmt.Sprintf("value of label %q is not valid UTF-8", truncate(l.Name))
		case l.Value == "":
			// Prometheus treats an empty value as an absent label; storing
			// one would make {l=""} and {} different series.
			return reasonInvalidLabels, fmt.Sprintf("label %q has an empty value", truncate(l.Name))
		case lim.MaxLabelNameLength > 0 && len(l.Name) > lim.MaxLabelNameLength:
			return reasonLabelTooLong, fmt.Sprintf("label name %q is %d bytes long, more than the limit of %d", truncate(l.Name), len(l.Name), lim.MaxLabelNameLength)
		case lim.MaxLabelValueLength > 0 && len(l.Value) > lim.MaxLabelValueLength:
			return reasonLabelTooLong, fmt.Sprintf("value of label %q is %d bytes long, more than the limit of %d", truncate(l.Name), len(l.Value), lim.MaxLabelValueLength)
		}
		if i > 0 {
			switch prev := ls[i-1].Name; {
			case prev == l.Name:
				return reasonInvalidLabels, fmt.Sprintf("duplicate label name %q", truncate(l.Name))
			case prev > l.Name:
				return reasonInvalidLabels, fmt.Sprintf("labels not sorted by name: %q after %q", truncate(l.Name), truncate(prev))
			}
		}
	}
	return "", ""
}

const maxShownLabels, maxShownLen = 16, 64

func truncate(s string) string {
	if len(s) <= maxShownLen {
		return s
	}
	return s[:maxShownLen] + "..."
}

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
		b.WriteString(strconv.QuoteToASCII(truncate(l.Name)))
		b.WriteByte('=')
		b.WriteString(strconv.QuoteToASCII(truncate(l.Value)))
	}
	b.WriteByte('}')
	return b.String()
}
