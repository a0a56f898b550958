package e2e

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/prompb"
)

// The native-histogram parts of the suite, checked without HBase: the
// target exposes what Prometheus parses into each kind of histogram, the
// generated history is valid, and the comparison notices a histogram that
// differs.

// protoAccept is the Accept header of a Prometheus 3 scrape that asks for
// the protobuf format first (scrape_protocols: [PrometheusProto, ...]).
const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,text/plain;version=0.0.4;q=0.1"

func TestHistTargetExposition(t *testing.T) {
	ht := newHistTarget()
	var body []byte
	var ctype string
	for range 98 { // past the reset at scrape 97
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", protoAccept)
		rec := httptest.NewRecorder()
		ht.ServeHTTP(rec, req)
		body, ctype = rec.Body.Bytes(), rec.Header().Get("Content-Type")
	}
	if !strings.HasPrefix(ctype, "application/vnd.google.protobuf") {
		t.Fatalf("Content-Type %q, want protobuf", ctype)
	}
	// As the scrape job parses it: native histograms on, classic ones
	// converted to custom buckets.
	p, err := textparse.New(body, ctype, labels.NewSymbolTable(), textparse.ParserOptions{ConvertClassicHistogramsToNHCB: true})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		h  *histogram.Histogram
		fh *histogram.FloatHistogram
	}
	got := map[string]seen{}
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e != textparse.EntryHistogram {
			continue
		}
		var ls labels.Labels
		p.Labels(&ls)
		_, _, h, fh := p.Histogram()
		got[ls.Get("__name__")+"/"+ls.Get("shard")] = seen{h, fh}
	}
	for _, s := range shards {
		lat := got["e2e_native_latency_seconds/"+s].h
		if lat == nil || lat.Schema != 3 || len(lat.PositiveSpans) < 3 || lat.Count != 12 {
			// Scrape 97 starts afresh, scrape 98 adds its six observations.
			t.Errorf("shard %s: latency %v, want schema 3, gaps between spans, 12 observations since the reset", s, lat)
		}
		d := got["e2e_native_delta/"+s].h
		if d == nil || d.Schema != 0 || len(d.NegativeBuckets) == 0 || d.ZeroCount == 0 || d.ZeroThreshold != 0.01 {
			t.Errorf("shard %s: delta %v, want schema 0, negative buckets and a zero bucket", s, d)
		}
		w := got["e2e_native_weight/"+s].fh
		if w == nil || w.Schema != 1 || w.Count == float64(int64(w.Count)) || len(w.NegativeBuckets) != 2 {
			t.Errorf("shard %s: weight %v, want a float histogram of schema 1 with fractional counts", s, w)
		} else if err := w.Validate(); err != nil {
			t.Errorf("shard %s: weight: %v", s, err)
		}
		sz := got["e2e_classic_size_bytes/"+s].h
		if s == "a" {
			if sz != nil {
				t.Errorf("shard a: size %v; remote write 1.0 would drop it", sz)
			}
		} else if sz == nil || sz.Schema != histogram.CustomBucketsSchema || len(sz.CustomValues) != 5 {
			t.Errorf("shard %s: size %v, want custom buckets with 5 bounds", s, sz)
		}
	}
}

func TestNativeHistoryValid(t *testing.T) {
	h := makeHistory(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	nh := makeNativeHistory(h)
	kinds := map[string]bool{}
	for _, s := range nh.series {
		name := labelValue(s.Labels, "__name__")
		last := int64(-1)
		for _, hp := range s.Histograms {
			if hp.Timestamp <= last {
				t.Fatalf("%s: histogram at %d after %d", name, hp.Timestamp, last)
			}
			last = hp.Timestamp
			var err error
			if hp.IsFloatHistogram() {
				kinds["float"] = true
				err = hp.ToFloatHistogram().Validate()
			} else {
				kinds["int"] = true
				err = hp.ToIntHistogram().Validate()
			}
			if err != nil {
				t.Fatalf("%s at %d: %v", name, hp.Timestamp, err)
			}
			if hp.Schema == histogram.CustomBucketsSchema {
				kinds["custom"] = true
			}
			if hp.ResetHint == 3 { // GAUGE
				kinds["gauge"] = true
			}
		}
		if len(s.Samples) > 0 && len(s.Histograms) > 0 {
			kinds["switch"] = true
		}
	}
	for _, k := range []string{"float", "int", "custom", "gauge", "switch"} {
		if !kinds[k] {
			t.Errorf("no %s histogram in the native history", k)
		}
	}
	// A late sample is one more sample of its series, in time order.
	before := nh.samples
	nh.merge(nh.late())
	if nh.samples != before+6 {
		t.Errorf("merge of late samples: %d samples, want %d", nh.samples, before+6)
	}

	// The raw check notices what it must: a copy read back is equal; a
	// changed bucket, reset hint, kind or sum is not.
	read := func(change func(*prompb.Histogram)) []*prompb.TimeSeries {
		var out []*prompb.TimeSeries
		for _, s := range nh.series {
			c := prompb.TimeSeries{Labels: s.Labels, Samples: s.Samples, Histograms: slices.Clone(s.Histograms)}
			if name := labelValue(s.Labels, "__name__"); change != nil && (name == "e2e_nhistory_latency" || name == "e2e_nhistory_weight") {
				change(&c.Histograms[100])
			}
			out = append(out, &c)
		}
		return out
	}
	if d := nh.diffRead(read(nil)); d != "" {
		t.Errorf("history differs from a copy of itself: %s", d)
	}
	for name, change := range map[string]func(*prompb.Histogram){
		"bucket": func(h *prompb.Histogram) {
			if h.IsFloatHistogram() {
				h.PositiveCounts = slices.Clone(h.PositiveCounts)
				h.PositiveCounts[1] += 0.5
			} else {
				h.PositiveDeltas = slices.Clone(h.PositiveDeltas)
				h.PositiveDeltas[1]++
			}
		},
		"hint": func(h *prompb.Histogram) { h.ResetHint = prompb.Histogram_NO },
		"kind": func(h *prompb.Histogram) {
			if h.IsFloatHistogram() {
				*h = prompb.FromIntHistogram(h.Timestamp, &histogram.Histogram{Schema: h.Schema, Sum: h.Sum})
			} else {
				*h = prompb.FromFloatHistogram(h.Timestamp, h.ToFloatHistogram())
			}
		},
		"sum":       func(h *prompb.Histogram) { h.Sum = math.Nextafter(h.Sum, math.Inf(1)) },
		"timestamp": func(h *prompb.Histogram) { h.Timestamp++ },
	} {
		d := nh.diffRead(read(change))
		if strings.Count(d, "\n") != 1 {
			t.Errorf("changed %s in two series: the check says %q, want one line each", name, d)
		}
	}
}

func TestDiffNoticesHistograms(t *testing.T) {
	h := func(v string) []series { return []series{{key: `{a="1"}`, points: []point{{1000, v}}}} }
	base := `{"count":"3","sum":"1.5","buckets":[[0,"0.5","1","1"],[0,"1","2","2"]]}`
	for _, tc := range []struct {
		name, b string
		approx  bool
		want    string
	}{
		{"equal", base, false, ""},
		{"count", strings.Replace(base, `"count":"3"`, `"count":"4"`, 1), true, "sample 0"},
		{"bucket count", strings.Replace(base, `"2","2"`, `"2","3"`, 1), true, "sample 0"},
		{"boundary", strings.Replace(base, `"1","2","2"`, `"1","2.5","2"`, 1), true, "sample 0"},
		{"rule", strings.Replace(base, `[0,"1"`, `[1,"1"`, 1), true, "sample 0"},
		{"bucket missing", `{"count":"3","sum":"1.5","buckets":[[0,"0.5","1","1"]]}`, true, "sample 0"},
		{"float for histogram", "3", true, "sample 0"},
		{"tolerance", strings.Replace(base, `"sum":"1.5"`, `"sum":"1.5000000000000002"`, 1), true, ""},
		{"exact", strings.Replace(base, `"sum":"1.5"`, `"sum":"1.5000000000000002"`, 1), false, "sample 0"},
	} {
		msg, _, _ := diff(h(base), h(tc.b), tc.approx)
		if tc.want == "" && msg != "" || tc.want != "" && !strings.Contains(msg, tc.want) {
			t.Errorf("%s: diff says %q, want %q", tc.name, msg, tc.want)
		}
	}
}
