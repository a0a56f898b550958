package opentsdb

import (
	"slices"
	"testing"

	"github.com/prometheus/common/model"
)

func TestNameMapping(t *testing.T) {
	for _, tc := range []struct{ in, metric, label string }{
		{"sys.cpu.user", "sys_cpu_user", "sys_cpu_user"},
		{"a-b/c", "a_b_c", "a_b_c"},
		{"ok_name:x", "ok_name:x", "ok_name_x"},
		{"9lives", "_9lives", "_9lives"},
		{"__meta", "__meta", "tag__meta"},
		{"__name__", "__name__", "tag__name__"},
		{"_x", "_x", "_x"},
		{"café", "caf_", "caf_"},
		{"Host", "Host", "Host"},
		{"", "_", "_"},
	} {
		if got := MetricName(tc.in); got != tc.metric {
			t.Errorf("MetricName(%q) = %q, want %q", tc.in, got, tc.metric)
		}
		if got := LabelName(tc.in); got != tc.label {
			t.Errorf("LabelName(%q) = %q, want %q", tc.in, got, tc.label)
		}
		if !model.LegacyValidation.IsValidMetricName(MetricName(tc.in)) {
			t.Errorf("MetricName(%q) = %q is not a legacy metric name", tc.in, MetricName(tc.in))
		}
		if !model.LegacyValidation.IsValidLabelName(LabelName(tc.in)) {
			t.Errorf("LabelName(%q) = %q is not a legacy label name", tc.in, LabelName(tc.in))
		}
	}
}

func TestLatin1(t *testing.T) {
	if got := latin1([]byte{'c', 'a', 'f', 0xE9}); got != "café" {
		t.Errorf("latin1 = %q", got)
	}
	if got := latin1([]byte("plain")); got != "plain" {
		t.Errorf("latin1 = %q", got)
	}
}

func TestCollisions(t *testing.T) {
	got := collisions([]string{"a.b", "a_b", "c", "x-y", "x/y", "x.y"}, MetricName)
	want := []string{"a.b and a_b -> a_b", "x-y and x.y and x/y -> x_y"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := collisions([]string{"a", "b"}, MetricName); got != nil {
		t.Errorf("got %q", got)
	}
}
