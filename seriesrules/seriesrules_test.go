package seriesrules

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func ls(kv ...string) []labels.Label {
	var out []labels.Label
	for i := 0; i < len(kv); i += 2 {
		out = append(out, labels.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestCheckSeries(t *testing.T) {
	lim := Limits{MaxLabels: 4, MaxLabelNameLength: 8, MaxLabelValueLength: 8}
	for _, tc := range []struct {
		name       string
		labels     []labels.Label
		samples    int
		histograms int
		reason     string // "" : accepted
		rule       string
	}{
		{"valid", ls("__name__", "up", "job", "a"), 1, 0, "", ""},
		{"histograms only", ls("__name__", "up"), 0, 2, "", ""},
		{"empty value is absent, accepted", ls("__name__", "up", "a", "", "job", "x"), 1, 0, "", ""},
		{"UTF-8 names", ls("__name__", "temp.°C", "ünit", "☃"), 1, 0, "", ""},
		{"no samples", ls("__name__", "up"), 0, 0, ReasonNoSamples, "at least one sample or histogram"},
		{"no labels", nil, 1, 0, ReasonNoMetricName, "no __name__"},
		{"no name", ls("job", "a"), 1, 0, ReasonNoMetricName, "no __name__"},
		{"empty name value", ls("__name__", "", "job", "a"), 1, 0, ReasonNoMetricName, "no __name__"},
		{"unsorted", ls("job", "a", "__name__", "up"), 1, 0, ReasonInvalidLabels, `"__name__" after "job"`},
		{"duplicate", ls("__name__", "up", "a", "1", "a", "2"), 1, 0, ReasonInvalidLabels, `duplicate label name "a"`},
		{"duplicate with empty value", ls("__name__", "up", "a", "", "a", "2"), 1, 0, ReasonInvalidLabels, "duplicate"},
		{"empty label name", ls("", "x", "__name__", "up"), 1, 0, ReasonInvalidLabels, "empty name"},
		{"bad UTF-8 name", ls("__name__", "up", "b\xc3", "x"), 1, 0, ReasonInvalidLabels, "not valid UTF-8"},
		{"bad UTF-8 value", ls("__name__", "up\xff"), 1, 0, ReasonInvalidLabels, "not valid UTF-8"},
		{"NUL name", ls("\x00a", "x", "__name__", "up"), 1, 0, ReasonInvalidLabels, "NUL"},
		{"NUL value", ls("__name__", "up", "a", "\x00"), 1, 0, ReasonInvalidLabels, "NUL"},
		{"too many", ls("__name__", "up", "a", "1", "b", "1", "c", "1", "d", "1"), 1, 0, ReasonTooManyLabels, "5 labels, more than the limit of 4"},
		{"long name", ls("__name__", "up", "abcdefghi", "1"), 1, 0, ReasonLabelTooLong, "9 bytes long, more than the limit of 8"},
		{"long value", ls("__name__", "up", "a", "123456789"), 1, 0, ReasonLabelTooLong, "9 bytes long, more than the limit of 8"},
		{"label rules before samples", ls("job", "a"), 0, 0, ReasonNoMetricName, "no __name__"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckSeries(tc.labels, tc.samples, tc.histograms, lim)
			switch {
			case tc.reason == "" && v != nil:
				t.Fatalf("refused: %v", v)
			case tc.reason == "":
			case v == nil:
				t.Fatalf("accepted, want %s", tc.reason)
			case v.Reason != tc.reason || !strings.Contains(v.Error(), tc.rule):
				t.Fatalf("got %s %q, want %s containing %q", v.Reason, v, tc.reason, tc.rule)
			}
		})
	}
}

// TestNoLimits: without limits, names and values still stop at
// MaxStringLength, the longest a UID table row key can hold.
func TestNoLimits(t *testing.T) {
	longest := strings.Repeat("x", MaxStringLength)
	if v := CheckSeries(ls("__name__", "up", "a", longest, longest, "b"), 1, 0, Limits{}); v != nil {
		t.Fatal(v)
	}
	for _, s := range [][]labels.Label{ls("__name__", "up", "a", longest+"x"), ls("__name__", "up", longest+"x", "b")} {
		v := CheckSeries(s, 1, 0, Limits{})
		if v == nil || v.Reason != ReasonLabelTooLong || !strings.Contains(v.Rule, "32001 bytes long, more than the 32000 a stored string may take") {
			t.Errorf("a string of %d bytes: %v", MaxStringLength+1, v)
		}
	}
}

func TestLimitsCheck(t *testing.T) {
	for lim, ok := range map[Limits]bool{
		{}: true, {MaxLabelNameLength: MaxStringLength, MaxLabelValueLength: MaxStringLength}: true,
		{MaxLabelValueLength: MaxStringLength + 1}: false, {MaxLabelNameLength: 1 << 20}: false,
	} {
		if err := lim.Check(); (err == nil) != ok {
			t.Errorf("%+v: %v, want accepted %v", lim, err, ok)
		}
	}
}

func TestCheckMetadata(t *testing.T) {
	for name, ok := range map[string]bool{"up": true, "temp.°C": true, "": false, "\x00x": false, "a\xff": false,
		strings.Repeat("n", MaxStringLength): true, strings.Repeat("n", MaxStringLength+1): false} {
		if got := CheckMetadata(name, "help", "") == nil; got != ok {
			t.Errorf("CheckMetadata(%.20q) accepted = %v, want %v", name, got, ok)
		}
	}
	longest := strings.Repeat("h", MaxMetadataTextLength)
	for _, tc := range []struct {
		help, unit string
		rule       string
	}{
		{longest, longest, ""},
		{longest + "h", "", "the help text is 1048577 bytes long"},
		{"", longest + "u", "the unit is 1048577 bytes long"},
	} {
		v := CheckMetadata("up", tc.help, tc.unit)
		switch {
		case tc.rule == "" && v != nil:
			t.Errorf("refused: %v", v)
		case tc.rule != "" && (v == nil || v.Reason != ReasonMetadata || !strings.Contains(v.Rule, tc.rule)):
			t.Errorf("got %v, want %s saying %q", v, ReasonMetadata, tc.rule)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote(strings.Repeat("é", 100)); got != strconv.QuoteToASCII(strings.Repeat("é", 32))+"..." {
		t.Fatalf("Quote of a long string: %q", got)
	}
}

// BenchmarkCheckSeries: the per-series cost on the write path, which must
// not allocate.
func BenchmarkCheckSeries(b *testing.B) {
	s := ls("__name__", "node_cpu_seconds_total", "cpu", "3", "instance", "host-17:9100", "job", "node", "mode", "idle", "pod", "api-7d9f8b6c5d-x2x9p")
	lim := Limits{MaxLabels: 64, MaxLabelNameLength: 1024, MaxLabelValueLength: 4096}
	b.ReportAllocs()
	for b.Loop() {
		if v := CheckSeries(s, 1, 0, lim); v != nil {
			b.Fatal(v)
		}
	}
}
