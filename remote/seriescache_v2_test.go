package remote

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// TestAppendLabelFields: a 2.0 series' cache key is its labels as
// Prometheus's 1.0 sender writes them (empty strings left out), and decodes
// as 1.0 label fields to the same labels.
func TestAppendLabelFields(t *testing.T) {
	for _, ls := range [][]labels.Label{
		{{Name: "__name__", Value: "up"}, {Name: "job", Value: "node"}},
		{{Name: "__name__", Value: "x"}, {Name: "empty", Value: ""}, {Name: "", Value: "v"}, {Name: "", Value: ""}},
		{{Name: "long", Value: strings.Repeat("v", 300)}, {Name: "z", Value: "ü\x00"}},
	} {
		var pls []prompb.Label
		for _, l := range ls {
			pls = append(pls, prompb.Label{Name: l.Name, Value: l.Value})
		}
		want, err := (&prompb.TimeSeries{Labels: pls}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got := appendLabelFields([]byte("prefix"), ls)
		if string(got) != "prefix"+string(want) {
			t.Errorf("%v: %x, Prometheus writes %x", ls, got[6:], want)
		}
		var r writeRequest
		if err := r.decodeV1Series(got[6:]); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.series[0].Labels, ls) {
			t.Errorf("decoded as 1.0: %v, want %v", r.series[0].Labels, ls)
		}
	}
	if got := appendLabelFields(nil, nil); len(got) != 0 {
		t.Errorf("no labels: %x", got)
	}
}

// renumberSymbols reverses the order of a 2.0 request's symbols after the
// first (""), so that every reference changes: what a sender's next
// request, whose symbol table is its own, looks like.
func renumberSymbols(req *writev2.Request) *writev2.Request {
	n := uint32(len(req.Symbols))
	re := func(ref uint32) uint32 {
		if ref == 0 {
			return 0
		}
		return n - ref
	}
	out := &writev2.Request{Symbols: []string{req.Symbols[0]}}
	for i := n - 1; i >= 1; i-- {
		out.Symbols = append(out.Symbols, req.Symbols[i])
	}
	for _, ts := range req.Timeseries {
		refs := make([]uint32, len(ts.LabelsRefs))
		for i, r := range ts.LabelsRefs {
			refs[i] = re(r)
		}
		ts.LabelsRefs = refs
		ts.Metadata.HelpRef, ts.Metadata.UnitRef = re(ts.Metadata.HelpRef), re(ts.Metadata.UnitRef)
		out.Timeseries = append(out.Timeseries, ts)
	}
	return out
}

// TestWriteSeriesCacheShared: a series sent in 1.0 first is found in the
// cache when it comes in 2.0 (TestWriteSeriesCache has each on its own).
func TestWriteSeriesCacheShared(t *testing.T) {
	const t0 = int64(1_700_000_000_000)
	const n = 30
	shared := openPebbleStore(t)
	srvS := newTestServer(t, shared, WriteConfig{SeriesCacheBytes: 1 << 20}, ReadConfig{})
	first := testSeries(n, 1, t0)
	for i := range first {
		first[i].Labels = append(first[i].Labels, prompb.Label{Name: "zrack", Value: "b"})
	}
	if code, _, msg := post(t, srvS.URL+"/api/v1/write", hdrV1, encodeV1(t, first, nil)); code != http.StatusNoContent {
		t.Fatalf("1.0: %d %s", code, msg)
	}
	later := testSeries(n, 1, t0+15000)
	for i := range later {
		later[i].Labels = first[i].Labels
	}
	if code, _, msg := post(t, srvS.URL+"/api/v1/write", hdrV2, encodeV2(t, toV2(later))); code != http.StatusNoContent {
		t.Fatalf("2.0: %d %s", code, msg)
	}
	if hits, misses := testutil.ToFloat64(srvS.m.seriesCacheHits), testutil.ToFloat64(srvS.m.seriesCacheMisses); hits != n || misses != n {
		t.Errorf("2.0 after 1.0: %v hits and %v misses, want %d and %d", hits, misses, n, n)
	}
	got := readAllSeries(t, shared)
	if strings.Count(got, "\n") != n || strings.Count(got, "=") != n*(2+len(first[0].Labels)) { // one a sample and one a label
		t.Errorf("stored:\n%s", got)
	}
}

// TestWriteSeriesCacheV2Checks: a 2.0 series served from the cache is still
// checked for what it carries and named by its labels; one whose labels
// are too large to key the cache by is decoded without it.
func TestWriteSeriesCacheV2Checks(t *testing.T) {
	st := openPebbleStore(t)
	srv := newTestServer(t, st, WriteConfig{SeriesCacheBytes: 1 << 20}, ReadConfig{})
	const t0 = int64(1_700_000_000_000)
	series := testSeries(3, 2, t0)
	if code, _, msg := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, toV2(series))); code != http.StatusNoContent {
		t.Fatalf("%d %s", code, msg)
	}
	empty := toV2([]prompb.TimeSeries{{Labels: series[1].Labels}})
	code, _, msg := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, empty))
	if code != http.StatusBadRequest || !strings.Contains(msg, "no samples") || !strings.Contains(msg, `"host-1:9100"`) {
		t.Errorf("a cached series without samples: %d %s", code, msg)
	}
	if hits := testutil.ToFloat64(srv.m.seriesCacheHits); hits != 1 {
		t.Errorf("%v hits, want the 1 of the empty series", hits)
	}

	// Labels of 4,000 bytes each (the value limit is 4,096), past the
	// key's bound together.
	big := []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "big"}}, Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}}}
	for i := range maxV2CacheKey/4000 + 1 {
		big[0].Labels = append(big[0].Labels, prompb.Label{Name: fmt.Sprintf("blob%d", i), Value: strings.Repeat(string(rune('a'+i)), 4000)})
	}
	before := testutil.ToFloat64(srv.m.seriesCacheHits) + testutil.ToFloat64(srv.m.seriesCacheMisses)
	for round := range 2 {
		big[0].Samples[0].Timestamp = t0 + int64(round)*15000
		if code, _, msg := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, toV2(big))); code != http.StatusNoContent {
			t.Fatalf("round %d: %.300s", round, fmt.Sprint(code, msg))
		}
	}
	if n := testutil.ToFloat64(srv.m.seriesCacheHits) + testutil.ToFloat64(srv.m.seriesCacheMisses); n != before {
		t.Errorf("%v cache lookups for a series of more than %d label bytes", n-before, maxV2CacheKey)
	}
	got := readAllSeries(t, st)
	if !strings.Contains(got, fmt.Sprintf(`"}: %d=%x %d=%x`, t0, math.Float64bits(1), t0+15000, math.Float64bits(1))) || strings.Count(got, "\n") != 4 {
		t.Errorf("the large series is not stored whole:\n%.500s", got)
	}
}
