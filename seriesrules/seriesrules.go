// Package seriesrules is the one set of rules a series must follow to be
// stored: label names non-empty UTF-8, sorted and unique; values UTF-8; a
// non-empty __name__; names and values not beginning with a NUL byte; the
// label limits, and MaxStringLength whatever they say; at least one sample;
// native histograms that Prometheus's TSDB would accept, of at most
// MaxHistogramBuckets buckets (CheckHistogram); metadata (CheckMetadata). The HTTP layer applies them to a whole
// request before anything is written, and the store applies them again to
// every batch it is handed, so both refuse exactly the same series.
//
// A label with an empty value is not an error: as in Prometheus (its remote
// write receiver accepts it; its TSDB drops it before creating the series),
// it means the label is absent, and the store drops it. It still counts for
// the sort order, the duplicate check and the label limit, which apply to the
// labels as sent.
//
// The package knows nothing of HTTP, wire formats or tables; it returns a
// Violation naming the rule, and its callers decide the answer.
package seriesrules

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Limits bound what one series may carry. Zero means no limit but
// MaxStringLength's.
type Limits struct {
	MaxLabels           int
	MaxLabelNameLength  int
	MaxLabelValueLength int
}

// MaxStringLength bounds every label name and value and every metric family
// name of metadata, whatever the Limits say: each is a row key of the UID
// table, and HBase refuses a row key over 32,767 bytes, which would fail the
// request again on every retry.
const MaxStringLength = 32_000

// MaxMetadataTextLength bounds a metric family's help text and unit: each is
// a cell, and HBase refuses a cell over 10 MiB.
const MaxMetadataTextLength = 1 << 20

// Check reports a limit above MaxStringLength, which the store could not
// honour.
func (l Limits) Check() error {
	for _, f := range [...]struct {
		name string
		v    int
	}{{"label name length", l.MaxLabelNameLength}, {"label value length", l.MaxLabelValueLength}} {
		if f.v > MaxStringLength {
			return fmt.Errorf("a %s limit of %d bytes is above the %d a UID table row key can hold", f.name, f.v, MaxStringLength)
		}
	}
	return nil
}

// Reasons, the values of the remote-write rejected-samples counter's reason
// label.
const (
	ReasonInvalidLabels = "invalid_labels"
	ReasonNoMetricName  = "missing_metric_name"
	ReasonNoSamples     = "no_samples"
	ReasonTooManyLabels = "too_many_labels"
	ReasonLabelTooLong  = "label_too_long"
	ReasonMetadata      = "invalid_metadata"
)

// Reasons lists every reason, for metrics that pre-create their series.
var Reasons = []string{ReasonInvalidLabels, ReasonNoMetricName, ReasonNoSamples, ReasonTooManyLabels, ReasonLabelTooLong, ReasonMetadata, ReasonInvalidHistogram}

// Violation is one broken rule.
type Violation struct {
	Reason string // one of the Reason constants
	Rule   string // what is wrong, naming the label
}

func (v *Violation) Error() string { return v.Rule }

func violation(reason, format string, args ...any) *Violation {
	return &Violation{Reason: reason, Rule: fmt.Sprintf(format, args...)}
}

// CheckSeries checks a series' labels and that it carries at least one
// sample or histogram (the remote write 2.0 specification: a series without
// either MUST be refused; it would only assign label UIDs to nothing). It
// returns nil when the series may be stored.
func CheckSeries(ls []labels.Label, samples, histograms int, lim Limits) *Violation {
	if v := CheckLabels(ls, lim); v != nil {
		return v
	}
	return CheckSamples(samples, histograms)
}

// CheckSamples is CheckSeries's rule on what a series carries: at least one
// float sample or histogram. It is the whole check of a series whose labels
// passed CheckLabels before, under the same limits.
func CheckSamples(samples, histograms int) *Violation {
	if samples == 0 && histograms == 0 {
		return violation(ReasonNoSamples, "series has no samples: at least one sample or histogram is required")
	}
	return nil
}

// CheckLabels checks a label set, sorted as sent.
func CheckLabels(ls []labels.Label, lim Limits) *Violation {
	if lim.MaxLabels > 0 && len(ls) > lim.MaxLabels {
		return violation(ReasonTooManyLabels, "%d labels, more than the limit of %d", len(ls), lim.MaxLabels)
	}
	hasName := false
	for i, l := range ls {
		if v := checkLabel(l, lim); v != nil {
			return v
		}
		if i > 0 {
			switch prev := ls[i-1].Name; {
			case prev == l.Name:
				return violation(ReasonInvalidLabels, "duplicate label name %s", Quote(l.Name))
			case prev > l.Name:
				return violation(ReasonInvalidLabels, "labels not sorted by name: %s after %s", Quote(l.Name), Quote(prev))
			}
		}
		if l.Name == model.MetricNameLabel && l.Value != "" {
			hasName = true
		}
	}
	if !hasName {
		// As Prometheus's own receiver: a series is a metric's series.
		// Queries need not name a metric; series must.
		return violation(ReasonNoMetricName, "series has no %s label (or an empty one)", model.MetricNameLabel)
	}
	return nil
}

func checkLabel(l labels.Label, lim Limits) *Violation {
	switch {
	case l.Name == "":
		return violation(ReasonInvalidLabels, "label with an empty name")
	case !utf8.ValidString(l.Name):
		return violation(ReasonInvalidLabels, "label name %s is not valid UTF-8", Quote(l.Name))
	case !utf8.ValidString(l.Value):
		return violation(ReasonInvalidLabels, "value of label %s is not valid UTF-8", Quote(l.Name))
	case l.Name[0] == 0 || (l.Value != "" && l.Value[0] == 0):
		// The UID table keeps its own rows under keys beginning with NUL.
		return violation(ReasonInvalidLabels, "label %s: names and values beginning with a NUL byte are reserved", Quote(l.Name))
	case lim.MaxLabelNameLength > 0 && len(l.Name) > lim.MaxLabelNameLength:
		return violation(ReasonLabelTooLong, "label name %s is %d bytes long, more than the limit of %d", Quote(l.Name), len(l.Name), lim.MaxLabelNameLength)
	case lim.MaxLabelValueLength > 0 && len(l.Value) > lim.MaxLabelValueLength:
		return violation(ReasonLabelTooLong, "value of label %s is %d bytes long, more than the limit of %d", Quote(l.Name), len(l.Value), lim.MaxLabelValueLength)
	case len(l.Name) > MaxStringLength:
		return violation(ReasonLabelTooLong, "label name %s is %d bytes long, more than the %d a stored string may take", Quote(l.Name), len(l.Name), MaxStringLength)
	case len(l.Value) > MaxStringLength:
		return violation(ReasonLabelTooLong, "value of label %s is %d bytes long, more than the %d a stored string may take", Quote(l.Name), len(l.Value), MaxStringLength)
	}
	return nil
}

// CheckMetadata checks a metric family's metadata: the name it is stored
// under follows the rules of a __name__ value and MaxStringLength, its help
// text and unit MaxMetadataTextLength.
func CheckMetadata(name, help, unit string) *Violation {
	switch {
	case name == "" || name[0] == 0 || !utf8.ValidString(name):
		return violation(ReasonMetadata, "metadata of metric family %s: the name must be non-empty valid UTF-8 not beginning with NUL", Quote(name))
	case len(name) > MaxStringLength:
		return violation(ReasonMetadata, "metadata of metric family %s: the name is %d bytes long, more than the %d a stored string may take", Quote(name), len(name), MaxStringLength)
	case len(help) > MaxMetadataTextLength:
		return violation(ReasonMetadata, "metadata of metric family %s: the help text is %d bytes long, more than the limit of %d", Quote(name), len(help), MaxMetadataTextLength)
	case len(unit) > MaxMetadataTextLength:
		return violation(ReasonMetadata, "metadata of metric family %s: the unit is %d bytes long, more than the limit of %d", Quote(name), len(unit), MaxMetadataTextLength)
	}
	return nil
}

// maxQuoted bounds how much of a sender's string an error message repeats.
const maxQuoted = 64

// Quote quotes s for an error message, ASCII only and cut short, so that a
// message stays readable whatever the sender put in it.
func Quote(s string) string {
	if len(s) > maxQuoted {
		i := maxQuoted
		for i > maxQuoted-utf8.UTFMax && !utf8.RuneStart(s[i]) {
			i-- // not in the middle of a character
		}
		return strconv.QuoteToASCII(s[:i]) + "..."
	}
	return strconv.QuoteToASCII(s)
}
