package main

import (
	"fmt"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// A 2.0 request carries the same series and samples as the 1.0 one of the
// same points.
func TestRemoteWrite2SameAs1(t *testing.T) {
	set := seriesSet("r", 50, 4)
	var pts []point
	for i := range set {
		pts = append(pts, point{series: i, t: int64(1000 + i), v: float64(i) / 3})
	}
	r1, err := remoteWrite("u")(set, pts)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := remoteWrite2("u")(set, pts)
	if err != nil {
		t.Fatal(err)
	}
	var w1 prompb.WriteRequest
	var w2 writev2.Request
	for _, c := range []struct {
		body []byte
		into interface{ Unmarshal([]byte) error }
	}{{r1.body, &w1}, {r2.body, &w2}} {
		raw, err := snappy.Decode(nil, c.body)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.into.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
	}
	if r2.points != len(pts) || len(w2.Timeseries) != len(w1.Timeseries) || r2.headers["X-Prometheus-Remote-Write-Version"] != "2.0.0" {
		t.Fatalf("2.0: %d points, %d series, headers %v; 1.0: %d series", r2.points, len(w2.Timeseries), r2.headers, len(w1.Timeseries))
	}
	for i, ts := range w2.Timeseries {
		var got string
		for j := 0; j < len(ts.LabelsRefs); j += 2 {
			got += fmt.Sprintf("%s=%s,", w2.Symbols[ts.LabelsRefs[j]], w2.Symbols[ts.LabelsRefs[j+1]])
		}
		var want string
		for _, l := range w1.Timeseries[i].Labels {
			want += fmt.Sprintf("%s=%s,", l.Name, l.Value)
		}
		s1 := w1.Timeseries[i].Samples
		if got != want || len(ts.Samples) != 1 || ts.Samples[0].Timestamp != s1[0].Timestamp || ts.Samples[0].Value != s1[0].Value {
			t.Fatalf("series %d: 2.0 %s %v, 1.0 %s %v", i, got, ts.Samples, want, s1)
		}
	}
}
