package remote

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/store"
)

// countHistograms counts every histogram sample st holds, through its
// Querier.
func countHistograms(t *testing.T, st appendQuerier) int {
	t.Helper()
	ss := st.Select(context.Background(), store.Query{Start: math.MinInt64 / 2, End: math.MaxInt64 / 2,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".*")}})
	defer ss.Close()
	n := 0
	for ss.Next() {
		n += len(ss.At().Histograms)
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriteHistogramsAnswer: a request of floats and histograms of every
// kind is answered 204, the 2.0 headers count exactly what was written, and
// the metrics count it.
func TestWriteHistogramsAnswer(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		name := map[bool]string{false: "v1", true: "v2"}[v2]
		t.Run(name, func(t *testing.T) {
			st := newFakeStore()
			srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
			series := histTestSeries(1, "answer", 40, 1_700_000_000_000)
			floats, hists := countHist(series)
			body, hdr := encodeV1(t, toV1Hist(series), nil), hdrV1
			if v2 {
				body, hdr = encodeV2(t, toV2Hist(series)), hdrV2
			}
			code, rh, msg := post(t, srv.URL+"/api/v1/write", hdr, body)
			if code != 204 {
				t.Fatalf("got %d %q", code, msg)
			}
			if v2 && (rh.Get(headerSamplesWritten) != strconv.Itoa(floats) || rh.Get(headerHistogramsWritten) != strconv.Itoa(hists) || rh.Get(headerExemplarsWritten) != "0") {
				t.Fatalf("headers %v, want %d samples and %d histograms", rh, floats, hists)
			}
			if !v2 && rh.Get(headerHistogramsWritten) != "" {
				t.Fatalf("a 1.0 answer carries %s", headerHistogramsWritten)
			}
			if st.numSamples() != floats || st.numHistograms() != hists {
				t.Fatalf("stored %d samples and %d histograms, want %d and %d", st.numSamples(), st.numHistograms(), floats, hists)
			}
			m := srv.metrics()
			for name, c := range map[string]struct {
				got  float64
				want int
			}{
				"samples received": {testutil.ToFloat64(m.samplesReceived), floats}, "samples written": {testutil.ToFloat64(m.samplesWritten), floats},
				"histograms received": {testutil.ToFloat64(m.histogramsReceived), hists}, "histograms written": {testutil.ToFloat64(m.histogramsWritten), hists},
			} {
				if c.got != float64(c.want) {
					t.Errorf("%s: %v, want %d", name, c.got, c.want)
				}
			}
		})
	}
}

// Hand-built histogram messages, for what the generated code cannot
// express (both count kinds, unknown enum values).
func hField(b []byte, num protowire.Number, v any) []byte {
	switch v := v.(type) {
	case uint64:
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, v)
	case int64: // sint
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeZigZag(v))
	case float64:
		b = protowire.AppendTag(b, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v))
	case []byte:
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	panic("unknown field value")
}

func rawSpan(offset int64, length uint64) []byte {
	return hField(hField(nil, 1, offset), 2, length)
}

// rawV1 is a 1.0 request of one series with one float sample, a valid
// series beside it, and the raw histogram message h in the first.
func rawV1(h []byte) []byte {
	series := func(name string, hist []byte) []byte {
		var ts []byte
		ts = hField(ts, 1, hField(hField(nil, 1, []byte("__name__")), 2, []byte(name)))
		ts = hField(ts, 1, hField(hField(nil, 1, []byte("job")), 2, []byte("bad")))
		ts = hField(ts, 2, hField(hField(nil, 1, 1.5), 2, uint64(1000)))
		if hist != nil {
			ts = hField(ts, 4, hist)
		}
		return ts
	}
	var req []byte
	req = hField(req, 1, series("good", nil))
	req = hField(req, 1, series("broken", h))
	return req
}

// rawV2 is the same as a 2.0 request.
func rawV2(h []byte) []byte {
	var req []byte
	for _, s := range []string{"", "__name__", "good", "broken", "job", "bad"} {
		req = hField(req, 4, []byte(s))
	}
	series := func(nameRef uint64, hist []byte) []byte {
		refs := protowire.AppendVarint(protowire.AppendVarint(protowire.AppendVarint(protowire.AppendVarint(nil, 1), nameRef), 4), 5)
		ts := hField(nil, 1, refs)
		if hist == nil {
			return hField(ts, 2, hField(hField(nil, 1, 1.5), 2, uint64(1000)))
		}
		return hField(ts, 3, hist)
	}
	req = hField(req, 5, series(2, nil))
	req = hField(req, 5, series(3, h))
	return req
}

func marshalHist(t *testing.T, h prompb.Histogram) []byte {
	t.Helper()
	b, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriteInvalidHistograms: every kind of malformed histogram is answered
// 400 naming the series and what is wrong, nothing of the request is
// written, and the rejections are counted as invalid_histogram.
func TestWriteInvalidHistograms(t *testing.T) {
	testWriteInvalidHistograms(t, newFakeStore())
}

func testWriteInvalidHistograms(t *testing.T, st appendQuerier) {
	intH := func(h histogram.Histogram) []byte { return marshalHist(t, prompb.FromIntHistogram(2000, &h)) }
	floatH := func(h histogram.FloatHistogram) []byte { return marshalHist(t, prompb.FromFloatHistogram(2000, &h)) }
	spans := []histogram.Span{{Offset: 0, Length: 2}}
	// One bucket more than a stored histogram may hold (its cell would be
	// refused by HBase long before a million).
	tooWide := histogram.Histogram{Schema: 8, Count: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: seriesrules.MaxHistogramBuckets + 1}},
		PositiveBuckets: append([]int64{1}, make([]int64, seriesrules.MaxHistogramBuckets)...)}
	for _, tc := range []struct {
		name, rule string
		hist       []byte
		decodeErr  bool // malformed protobuf: the message names the field, not the series
	}{
		{"both counts", "both count_int and count_float", hField(hField(nil, 1, uint64(1)), 2, 1.0), false},
		{"no count", "neither count_int nor count_float", hField(nil, 3, 1.0), false},
		{"float buckets in integer histogram", "positive_counts is set in a histogram whose count is count_int", hField(hField(nil, 1, uint64(1)), 13, 1.0), false},
		{"deltas in float histogram", "positive_deltas is set in a histogram whose count is count_float", hField(hField(nil, 2, 1.0), 12, int64(1)), false},
		{"integer and float buckets", "both negative_deltas and positive_counts", hField(hField(hField(nil, 2, 1.0), 9, int64(1)), 13, 1.0), false},
		{"unknown reset hint", "unknown reset_hint 7", hField(hField(nil, 1, uint64(0)), 14, uint64(7)), false},
		{"spans and buckets disagree", "spans specify different number of buckets", intH(histogram.Histogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []int64{1}}), false},
		{"float spans and buckets disagree", "spans specify different number of buckets", floatH(histogram.FloatHistogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []float64{1, 0, 0}}), false},
		{"count disagrees", "observation count should equal", intH(histogram.Histogram{Count: 5, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}}), false},
		{"negative bucket", "negative", intH(histogram.Histogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []int64{2, -3}}), false},
		{"negative float count", "negative", floatH(histogram.FloatHistogram{Count: -1}), false},
		{"schema too small", "got schema -7", intH(histogram.Histogram{Schema: -7}), false},
		{"schema unknown", "got schema 60", intH(histogram.Histogram{Schema: 60}), false},
		{"custom bounds not increasing", "strictly increasing", intH(histogram.Histogram{Schema: -53, Count: 1, PositiveSpans: spans, PositiveBuckets: []int64{1, -1}, CustomValues: []float64{2, 1}}), false},
		{"custom buckets with negative side", "must not have negative spans", intH(histogram.Histogram{Schema: -53, NegativeSpans: spans, NegativeBuckets: []int64{0, 0}, CustomValues: []float64{1}}), false},
		{"exponential with custom bounds", "must not have custom bounds", intH(histogram.Histogram{Schema: 3, CustomValues: []float64{1}}), false},
		{"negative span offset", "offset", intH(histogram.Histogram{Count: 2, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}, {Offset: -2, Length: 1}}, PositiveBuckets: []int64{1, 0}}), false},
		{"too many buckets", "32769 buckets (and custom bounds), more than the limit of 32768", intH(tooWide), false},
		{"truncated", "truncated", []byte{0x08}, true},
		{"packed doubles cut", "not a multiple of 8", hField(hField(nil, 2, 1.0), 13, []byte{1, 2, 3}), true},
		{"span of wrong wire type", "wrong wire type", hField(hField(nil, 1, uint64(0)), 11, uint64(3)), true},
	} {
		for _, v2 := range []bool{false, true} {
			name := tc.name + map[bool]string{false: " v1", true: " v2"}[v2]
			t.Run(name, func(t *testing.T) {
				srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
				raw, hdr := rawV1(tc.hist), hdrV1
				if v2 {
					raw, hdr = rawV2(tc.hist), hdrV2
				}
				code, rh, body := post(t, srv.URL+"/api/v1/write", hdr, snappy.Encode(nil, raw))
				if code != 400 || !strings.Contains(body, tc.rule) {
					t.Fatalf("got %d %q, want 400 saying %q", code, body, tc.rule)
				}
				if !tc.decodeErr && (!strings.Contains(body, `"__name__"="broken"`) || !strings.Contains(body, "histogram 0")) {
					t.Fatalf("the answer does not name the series and histogram: %q", body)
				}
				if v2 && (rh.Get(headerSamplesWritten) != "0" || rh.Get(headerHistogramsWritten) != "0") {
					t.Fatalf("headers %v", rh)
				}
				if n, h := countSamples(t, st), countHistograms(t, st); n != 0 || h != 0 {
					t.Fatalf("%d samples and %d histograms written", n, h)
				}
				if !tc.decodeErr {
					if got := testutil.ToFloat64(srv.metrics().histogramsRejected.WithLabelValues(seriesrules.ReasonInvalidHistogram)); got != 1 {
						t.Fatalf("invalid_histogram rejections %v, want 1", got)
					}
					// The whole request is refused: its float samples too
					// (the 2.0 one has none in the broken series).
					want := map[bool]float64{false: 2, true: 1}[v2]
					if got := testutil.ToFloat64(srv.metrics().samplesRejected.WithLabelValues(seriesrules.ReasonInvalidHistogram)); got != want {
						t.Fatalf("float samples rejected for the request %v, want %v", got, want)
					}
				}
			})
		}
	}
}

// TestWriteHistogramStaleMarker: a staleness marker as a histogram (sum =
// the stale NaN, nothing else) is valid, integer or float.
func TestWriteHistogramStaleMarker(t *testing.T) {
	st := newFakeStore()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	ts := prompb.TimeSeries{Labels: lbls("__name__", "h", "job", "stale")}
	ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(1000, staleHistogram(histInt, 0).H), prompb.FromFloatHistogram(2000, staleHistogram(histFloat, 0).FH))
	code, _, body := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, []prompb.TimeSeries{ts}, nil))
	if code != 204 {
		t.Fatalf("got %d %q", code, body)
	}
	if st.numHistograms() != 2 {
		t.Fatalf("%d histograms stored, want 2", st.numHistograms())
	}
}

// TestWriteHistogramSchemaReduced: schemas finer than 8 (9..52) are
// reduced to 8, as Prometheus's receiver does; the buckets merge.
func TestWriteHistogramSchemaReduced(t *testing.T) {
	st := newFakeStore()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	h := &histogram.Histogram{Schema: 10, Count: 9, Sum: 3.5, PositiveSpans: []histogram.Span{{Offset: 1, Length: 6}}, PositiveBuckets: []int64{1, 1, 0, 0, -1, 0}}
	fh := &histogram.FloatHistogram{Schema: 52, Count: 3, Sum: 1, NegativeSpans: []histogram.Span{{Offset: 0, Length: 3}}, NegativeBuckets: []float64{1, 1, 1}}
	ts := prompb.TimeSeries{Labels: lbls("__name__", "h", "job", "fine")}
	ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(1000, h), prompb.FromFloatHistogram(2000, fh))
	code, _, body := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, []prompb.TimeSeries{ts}, nil))
	if code != 204 {
		t.Fatalf("got %d %q", code, body)
	}
	wantH, wantFH := h.Copy(), fh.Copy()
	if err := wantH.ReduceResolution(8); err != nil {
		t.Fatal(err)
	}
	if err := wantFH.ReduceResolution(8); err != nil {
		t.Fatal(err)
	}
	got := st.series[`{__name__="h", job="fine"}`].histograms
	if len(got) != 2 {
		t.Fatalf("%d histograms stored", len(got))
	}
	if d := diffHistogram(got[0], store.HistogramSample{T: 1000, H: wantH}); d != "" || got[0].H.Schema != 8 {
		t.Fatalf("integer histogram: %s", d)
	}
	if d := diffHistogram(got[1], store.HistogramSample{T: 2000, FH: wantFH}); d != "" || got[1].FH.Schema != 8 {
		t.Fatalf("float histogram: %s", d)
	}
}

// TestWriteExemplarsAccepted: exemplars are accepted and dropped (remote
// read cannot return them), as Prometheus's own receiver does without
// exemplar storage: 204, counted in -Exemplars-Written (so that a sender
// with send_exemplars: true logs no error) and in the dropped counter.
func TestWriteExemplarsAccepted(t *testing.T) {
	st := newFakeStore()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	series := histTestSeries(2, "exemplars", 6, 1_700_000_000_000)

	v1 := toV1Hist(series)
	v1[0].Exemplars = []prompb.Exemplar{{Labels: lbls("trace_id", "abc"), Value: 1, Timestamp: 1_700_000_000_000}}
	v1[5].Exemplars = []prompb.Exemplar{{Value: 2, Timestamp: 1}, {Value: 3, Timestamp: 2}}
	if code, _, body := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, v1, nil)); code != 204 {
		t.Fatalf("v1: got %d %q", code, body)
	}

	req := toV2Hist(series)
	trace := uint32(len(req.Symbols))
	req.Symbols = append(req.Symbols, "trace_id", "abc")
	req.Timeseries[0].Exemplars = []writev2.Exemplar{{LabelsRefs: []uint32{trace, trace + 1}, Value: 1, Timestamp: 1}}
	req.Timeseries[1].Exemplars = []writev2.Exemplar{{Value: 1, Timestamp: 1}, {Value: 2, Timestamp: 2}, {Value: 3, Timestamp: 3}}
	code, hdr, body := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, req))
	if code != 204 || hdr.Get(headerExemplarsWritten) != "4" {
		t.Fatalf("v2: got %d %q, %s %q; want 204 and 4", code, body, headerExemplarsWritten, hdr.Get(headerExemplarsWritten))
	}
	if got := testutil.ToFloat64(srv.metrics().exemplarsDropped); got != 7 {
		t.Fatalf("exemplars dropped %v, want 7", got)
	}

	// An exemplar pointing outside the symbols is malformed, as for
	// Prometheus's receiver.
	req.Timeseries[0].Exemplars[0].LabelsRefs = []uint32{trace, 9999}
	if code, _, body := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, req)); code != 400 || !strings.Contains(body, "exemplars[0]: labels_refs[1]: symbol reference out of range") {
		t.Fatalf("bad exemplar: got %d %q", code, body)
	}
}

// TestWriteUIDExhaustedHistograms: when the store refuses some series (UID
// space used up) and writes the rest, the 2.0 headers count exactly the
// samples and histograms of the written series, and the refused ones are
// counted as uid_exhausted.
func TestWriteUIDExhaustedHistograms(t *testing.T) {
	st := newFakeStore()
	st.refuse = func(l labels.Labels) bool { return l.Get("__name__") == "hist_float" || l.Get("__name__") == "mixed" }
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	series := histTestSeries(4, "uid", 10, 1000)
	var refusedFloats, refusedHists int
	for _, s := range series {
		if st.refuse(s.labels) {
			refusedFloats += len(s.samples)
			refusedHists += len(s.histograms)
		}
	}
	floats, hists := countHist(series)
	code, hdr, body := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, toV2Hist(series)))
	wantMsg := strconv.Itoa(floats-refusedFloats) + " of " + strconv.Itoa(floats) + " samples and " + strconv.Itoa(hists-refusedHists) + " of " + strconv.Itoa(hists) + " histograms written"
	if code != 400 || !strings.Contains(body, wantMsg) {
		t.Fatalf("got %d %q, want 400 saying %q", code, body, wantMsg)
	}
	if hdr.Get(headerSamplesWritten) != strconv.Itoa(floats-refusedFloats) || hdr.Get(headerHistogramsWritten) != strconv.Itoa(hists-refusedHists) || hdr.Get(headerExemplarsWritten) != "0" {
		t.Fatalf("headers %v, want %d samples and %d histograms", hdr, floats-refusedFloats, hists-refusedHists)
	}
	if st.numHistograms() != hists-refusedHists || st.numSamples() != floats-refusedFloats {
		t.Fatalf("store holds %d samples and %d histograms", st.numSamples(), st.numHistograms())
	}
	m := srv.metrics()
	if got := testutil.ToFloat64(m.histogramsRejected.WithLabelValues(reasonUIDExhausted)); got != float64(refusedHists) {
		t.Fatalf("uid_exhausted histogram rejections %v, want %d", got, refusedHists)
	}
	if got := testutil.ToFloat64(m.histogramsWritten); got != float64(hists-refusedHists) {
		t.Fatalf("histograms written %v, want %d", got, hists-refusedHists)
	}
}
