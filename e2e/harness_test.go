package e2e

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// The suite is only as good as its parts: these tests show that the target
// speaks the format Prometheus parses, and that the comparison notices what
// it must notice. They need no HBase.

func TestTargetExpositionParses(t *testing.T) {
	for _, n := range []int64{1, 8, 16, 96, 97, 1000} {
		var b bytes.Buffer
		writeExposition(&b, n)
		p := textparse.NewPromParser(b.Bytes(), labels.NewSymbolTable(), false)
		seen := map[string]float64{}
		for {
			e, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("scrape %d: %v\n%s", n, err, b.String())
			}
			if e != textparse.EntrySeries {
				continue
			}
			var ls labels.Labels
			p.Labels(&ls)
			_, _, v := p.Series()
			key := labelKey(ls.Map())
			if _, dup := seen[key]; dup {
				t.Fatalf("scrape %d: series %s twice", n, key)
			}
			seen[key] = v
		}
		if got, ok := seen[labelKey(map[string]string{"__name__": "e2e_escape", "path": escapedPath, "shard": "a"})]; !ok || got != float64(n%5) {
			t.Errorf("scrape %d: escaped label value did not round-trip (value %v); series: %d", n, got, len(seen))
		}
		if v, ok := seen[`{__name__="e2e_special",kind="nan",shard="b"}`]; !ok || !math.IsNaN(v) {
			t.Errorf("scrape %d: NaN gauge: %v %v", n, v, ok)
		}
		_, flap := seen[`{__name__="e2e_flap",shard="both"}`]
		if want := (n/8)%2 == 0; flap != want {
			t.Errorf("scrape %d: e2e_flap present %v, want %v", n, flap, want)
		}
		if v := seen[`{__name__="e2e_temperature_celsius",room="東京",shard="a"}`]; v == 0 {
			t.Errorf("scrape %d: unicode label value lost", n)
		}
	}
}

func TestDiffNotices(t *testing.T) {
	a := []series{
		{key: `{a="1"}`, points: []point{{1000, "1"}, {2000, "2.5"}}},
		{key: `{a="2"}`, points: []point{{1000, "NaN"}}},
	}
	for _, tc := range []struct {
		name   string
		b      []series
		approx bool
		want   string
	}{
		{"equal", a, false, ""},
		{"empty", nil, false, "missing in B"},
		{"extra", append(append([]series(nil), a...), series{key: `{a="3"}`}), false, "extra in B"},
		{"duplicate", []series{a[0], a[0], a[1]}, false, "twice"},
		{"value", []series{{key: `{a="1"}`, points: []point{{1000, "1"}, {2000, "2.5000001"}}}, a[1]}, true, "sample 1"},
		{"timestamp", []series{{key: `{a="1"}`, points: []point{{1000, "1"}, {2001, "2.5"}}}, a[1]}, false, "sample 1"},
		{"short", []series{{key: `{a="1"}`, points: []point{{1000, "1"}}}, a[1]}, false, "B 1"},
		{"tolerance", []series{{key: `{a="1"}`, points: []point{{1000, "1.0000000000000002"}, {2000, "2.5"}}}, a[1]}, true, ""},
		{"exact", []series{{key: `{a="1"}`, points: []point{{1000, "1.0000000000000002"}, {2000, "2.5"}}}, a[1]}, false, "sample 0"},
		{"stale NaN is no value", []series{a[0], {key: `{a="2"}`, points: []point{{1000, "0"}}}}, true, "sample 0"},
	} {
		msg, _, _ := diff(a, tc.b, tc.approx)
		if tc.want == "" && msg != "" || tc.want != "" && !strings.Contains(msg, tc.want) {
			t.Errorf("%s: diff says %q, want %q", tc.name, msg, tc.want)
		}
	}
}

func TestKeepGoroutines(t *testing.T) {
	dump := "goroutine 1 [running]:\nmain.main()\n\tmain.go:1\n\n" +
		"goroutine 7 [chan receive, 29 minutes]:\ngithub.com/prom-hbase/prom-hbase/store.(*cursor).nextBatch(...)\n\tfetch.go:207\n\n" +
		"goroutine 9 [IO wait]:\ninternal/poll.(*FD).Read(...)\n\tfd_unix.go:165\n"
	got := keepGoroutines(dump, "prom-hbase/prom-hbase/", 100)
	if !strings.Contains(got, "goroutine 7 [chan receive") || strings.Contains(got, "goroutine 1 ") || strings.Contains(got, "goroutine 9 ") {
		t.Errorf("kept the wrong goroutines:\n%s", got)
	}
	if !strings.Contains(got, "(1 goroutines shown, 2 left out)") {
		t.Errorf("no count of what was left out:\n%s", got)
	}
	if got := keepGoroutines(dump, "prom-hbase/prom-hbase/", 2); !strings.Contains(got, "(0 goroutines shown, 3 left out)") {
		t.Errorf("a goroutine longer than the line budget was kept:\n%s", got)
	}
}
