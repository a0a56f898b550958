package remote

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/prom-hbase/prom-hbase/store"
)

func lbls(kv ...string) []prompb.Label {
	var out []prompb.Label
	for i := 0; i < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func oneSample() []prompb.Sample { return []prompb.Sample{{Timestamp: 1000, Value: 1}} }

// TestWriteBadRequests sends one bad request of each kind and checks the
// status, that the message names the problem, and that nothing was stored.
func TestWriteBadRequests(t *testing.T) {
	testWriteBadRequests(t, newFakeStore())
}

// TestWriteBadRequestsPebble runs the same on the real store.
func TestWriteBadRequestsPebble(t *testing.T) {
	testWriteBadRequests(t, openPebbleStore(t))
}

// countSamples counts every sample st holds, through its Querier.
func countSamples(t *testing.T, st appendQuerier) int {
	t.Helper()
	ss := st.Select(context.Background(), store.Query{Start: math.MinInt64 / 2, End: math.MaxInt64 / 2,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".*")}})
	defer ss.Close()
	n := 0
	for ss.Next() {
		n += len(ss.At().Samples)
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func testWriteBadRequests(t *testing.T, st appendQuerier) {
	good := prompb.TimeSeries{Labels: lbls("__name__", "up", "job", "a"), Samples: oneSample()}
	v1 := func(series ...prompb.TimeSeries) []byte {
		return encodeV1(t, append([]prompb.TimeSeries{good}, series...), nil)
	}
	v2raw := func(req *writev2.Request) []byte { return encodeV2(t, req) }
	hugeClaim := binary.AppendUvarint(nil, 1<<30) // snappy header: 1 GiB decoded
	hugeClaim = append(hugeClaim, 0x00, 'x')

	cases := []struct {
		name   string
		method string
		hdr    map[string]string
		body   []byte
		code   int
		msg    string
	}{
		{"wrong method", http.MethodGet, hdrV1, nil, 405, "method GET not allowed"},
		{"missing content type", "", map[string]string{"Content-Encoding": "snappy"}, v1(), 415, "missing Content-Type"},
		{"wrong content type", "", map[string]string{"Content-Type": "application/json", "Content-Encoding": "snappy"}, v1(), 415, "unsupported Content-Type"},
		{"unknown proto message", "", map[string]string{"Content-Type": "application/x-protobuf;proto=foo.Bar", "Content-Encoding": "snappy"}, v1(), 415, `unsupported protobuf message "foo.Bar"`},
		{"missing content encoding", "", map[string]string{"Content-Type": "application/x-protobuf"}, v1(), 415, "missing Content-Encoding"},
		{"gzip encoding", "", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, v1(), 415, `unsupported Content-Encoding "gzip"`},
		{"truncated snappy", "", hdrV1, v1()[:20], 400, "snappy"},
		{"not snappy", "", hdrV1, []byte("hello, world: definitely not snappy"), 400, "snappy"},
		{"garbage protobuf", "", hdrV1, snappy.Encode(nil, []byte{0x0a, 0xff, 0xff, 0xff, 0x0f, 1, 2}), 400, "truncated or malformed protobuf"},
		{"garbage protobuf v2", "", hdrV2, snappy.Encode(nil, []byte{0x2a, 0x05, 0x0a}), 400, "truncated or malformed protobuf"},
		{"2.0 body sent as 1.0", "", hdrV1, encodeV2(t, toV2(testSeries(2, 2, 1000))), 400, "remote write 2.0 body sent with a 1.0 Content-Type"},
		{"1.0 body sent as 2.0", "", hdrV2, v1(), 400, "remote write 1.0 body sent with the 2.0 Content-Type"},
		{"unsorted labels", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("job", "a", "__name__", "up"), Samples: oneSample()}), 400, `series 1 {"job"="a", "__name__"="up"}: labels not sorted`},
		{"duplicate labels", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("__name__", "up", "a", "1", "a", "2"), Samples: oneSample()}), 400, `duplicate label name "a"`},
		{"empty label name", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("", "x", "__name__", "up"), Samples: oneSample()}), 400, "label with an empty name"},
		{"no labels", "", hdrV1, v1(prompb.TimeSeries{Samples: oneSample()}), 400, "series has no __name__ label"},
		{"no __name__", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("job", "a"), Samples: oneSample()}), 400, `series 1 {"job"="a"}: series has no __name__ label`},
		{"empty __name__", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("__name__", "", "job", "a"), Samples: oneSample()}), 400, "series has no __name__ label (or an empty one)"},
		{"no __name__ v2", "", hdrV2, v2raw(&writev2.Request{Symbols: []string{"", "job", "a"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}), 400, "series has no __name__ label"},
		{"no samples v1", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("__name__", "up", "job", "b")}), 400, "series has no samples: at least one sample or histogram is required"},
		{"no samples v2", "", hdrV2, v2raw(&writev2.Request{Symbols: []string{"", "__name__", "up"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}, {LabelsRefs: []uint32{1, 2}}}}), 400, "series 1 {\"__name__\"=\"up\"}: series has no samples"},
		{"NUL label value", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("__name__", "up", "a", "\x00x"), Samples: oneSample()}), 400, "beginning with a NUL byte are reserved"},
		{"invalid metadata v1", "", hdrV1, encodeV1(t, []prompb.TimeSeries{good}, []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "", Help: "no name"}}), 400, "metadata of metric family \"\": the name must be non-empty"},
		{"metadata name too long v1", "", hdrV1, encodeV1(t, []prompb.TimeSeries{good}, []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: strings.Repeat("n", 32_001)}}), 400, "the name is 32001 bytes long, more than the 32000 a stored string may take"},
		{"invalid utf8 value", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("__name__", "up\xff"), Samples: oneSample()}), 400, "not valid UTF-8"},
		{"invalid utf8 name", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("__name__", "up", "b\xc3", "x"), Samples: oneSample()}), 400, "not valid UTF-8"},
		{"too many labels", "", hdrV1, v1(prompb.TimeSeries{Labels: manyLabels(40), Samples: oneSample()}), 400, "41 labels, more than the limit of 30"},
		{"huge label value", "", hdrV1, v1(prompb.TimeSeries{Labels: lbls("__name__", "up", "a", strings.Repeat("v", 5000)), Samples: oneSample()}), 400, `value of label "a" is 5000 bytes long, more than the limit of 2048`},
		{"symbol ref out of range", "", hdrV2, v2raw(&writev2.Request{Symbols: []string{"", "__name__", "up"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}, {LabelsRefs: []uint32{1, 9}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}), 400, "timeseries[1]: labels_refs[1]: symbol reference out of range: 9"},
		{"odd label refs", "", hdrV2, v2raw(&writev2.Request{Symbols: []string{"", "__name__", "up"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 1}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}), 400, "odd length"},
		{"help ref out of range", "", hdrV2, v2raw(&writev2.Request{Symbols: []string{"", "__name__", "up"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}, Metadata: writev2.Metadata{HelpRef: 50}}}}), 400, "metadata.help_ref"},
		{"body too large", "", hdrV1, make([]byte, 70_000), 413, "exceeds the limit of 65536 bytes"},
		{"billion-sample claim", "", hdrV1, hugeClaim, 413, "claims 1073741824 bytes decompressed"},
		{"request memory", "", hdrV2, v2raw(wideV2(5000, 30)), 413, "more than the limit of 4194304 bytes per request"},
	}
	srv := newTestServer(t, st, WriteConfig{
		MaxBodyBytes: 64 << 10, MaxDecodedBytes: 1 << 20, MaxRequestMemory: 4 << 20,
		Limits: Limits{MaxLabels: 30, MaxLabelNameLength: 1024, MaxLabelValueLength: 2048},
	}, ReadConfig{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, srv.URL+"/api/v1/write", strings.NewReader(string(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body strings.Builder
			_, _ = fmt.Fprint(&body, readAll(resp))
			if resp.StatusCode != tc.code || !strings.Contains(body.String(), tc.msg) {
				t.Fatalf("got %d %q, want %d containing %q", resp.StatusCode, body.String(), tc.code, tc.msg)
			}
			if tc.hdr["Content-Type"] == hdrV2["Content-Type"] && tc.code != 415 {
				for _, h := range []string{headerSamplesWritten, headerHistogramsWritten, headerExemplarsWritten} {
					if resp.Header.Get(h) != "0" {
						t.Errorf("%s = %q, want 0", h, resp.Header.Get(h))
					}
				}
			}
			if n := countSamples(t, st); n != 0 {
				t.Fatalf("store holds %d samples after a refused request", n)
			}
			if f, ok := st.(*fakeStore); ok && f.writes != 0 {
				t.Fatalf("the store was called (%d writes) for a refused request", f.writes)
			}
		})
	}
}

func manyLabels(n int) []prompb.Label {
	out := lbls("__name__", "up")
	for i := range n {
		out = append(out, prompb.Label{Name: fmt.Sprintf("l%03d", i), Value: "v"})
	}
	return out
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestWriteMetadata checks that both versions' metadata reach the store.
func TestWriteMetadata(t *testing.T) {
	st := newFakeStore()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	code, _, body := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, toV2(testSeries(3, 1, 1000))))
	if code != 204 {
		t.Fatalf("v2: %d %q", code, body)
	}
	code, _, body = post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, nil, []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "requests", Help: "Requests served.", Unit: "requests"}}))
	if code != 204 {
		t.Fatalf("v1: %d %q", code, body)
	}
	want := map[string]store.Metadata{
		"metric_0": {MetricFamilyName: "metric_0", Type: "gauge", Unit: "seconds", Help: "help text"},
		"metric_1": {MetricFamilyName: "metric_1", Type: "gauge", Unit: "seconds", Help: "help text"},
		"metric_2": {MetricFamilyName: "metric_2", Type: "gauge", Unit: "seconds", Help: "help text"},
		"requests": {MetricFamilyName: "requests", Type: "counter", Unit: "requests", Help: "Requests served."},
	}
	if fmt.Sprint(st.metadata) != fmt.Sprint(want) {
		t.Fatalf("metadata %v, want %v", st.metadata, want)
	}
}

// TestWriteStoreFailures: storage faults and timeouts answer 503 (retry),
// with 0 written; the store's own invalid-input verdict answers 400. A
// metadata failure after the samples were written is a 503 that counts 0
// written too: the answer never counts more than the store said is durable.
func TestWriteStoreFailures(t *testing.T) {
	body := encodeV2(t, toV2(testSeries(2, 3, 1000)))
	for _, tc := range []struct {
		name  string
		setup func(*fakeStore)
		code  int
		msg   string
	}{
		{"storage fault", func(f *fakeStore) { f.failWith = errors.New("region server gone") }, 503, "storage unavailable: region server gone"},
		{"invalid per store", func(f *fakeStore) { f.failWith = fmt.Errorf("%w: metric UID space exhausted", store.ErrInvalidInput) }, 400, "metric UID space exhausted"},
		{"store honours deadline", func(f *fakeStore) { f.block = true }, 503, "did not acknowledge within the write timeout of 200ms"},
		{"store ignores deadline", func(f *fakeStore) { f.block, f.ignoreCtx = true, true }, 503, "did not acknowledge within the write timeout of 200ms"},
		{"metadata fault", func(f *fakeStore) { f.failMetadata = errors.New("uid table region moving") }, 503, "storage unavailable: uid table region moving"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			tc.setup(st)
			defer close(st.release)
			srv := newTestServer(t, st, WriteConfig{Timeout: 200 * time.Millisecond}, ReadConfig{})
			code, hdr, got := post(t, srv.URL+"/api/v1/write", hdrV2, body)
			if code != tc.code || !strings.Contains(got, tc.msg) {
				t.Fatalf("got %d %q, want %d with %q", code, got, tc.code, tc.msg)
			}
			if hdr.Get(headerSamplesWritten) != "0" {
				t.Fatalf("samples written header %q", hdr.Get(headerSamplesWritten))
			}
		})
	}
}

// TestWriteInvalidWritesNothing: one bad series among good ones refuses the
// whole request.
func TestWriteInvalidWritesNothing(t *testing.T) {
	st := newFakeStore()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	series := testSeries(50, 2, 1000)
	series[37].Labels = append(series[37].Labels, prompb.Label{Name: "aaa", Value: "late"})
	code, _, body := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, series, nil))
	if code != 400 || !strings.Contains(body, "series 37 ") || !strings.Contains(body, "none of its 100 samples written") {
		t.Fatalf("got %d %q", code, body)
	}
	if st.numSamples() != 0 {
		t.Fatalf("%d samples written", st.numSamples())
	}
}

// wideV2 builds a 2.0 request of n series of k labels and one sample each.
func wideV2(n, k int) *writev2.Request {
	syms := []string{"", "__name__", "up", "v"}
	refs := []uint32{1, 2}
	for i := range k - 1 {
		syms = append(syms, fmt.Sprintf("l%03d", i))
		refs = append(refs, uint32(len(syms)-1), 3)
	}
	req := &writev2.Request{Symbols: syms}
	for i := range n { // alike, so that snappy compresses them well
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{LabelsRefs: refs, Samples: []writev2.Sample{{Value: 1, Timestamp: 1000 + int64(i%2)}}})
	}
	return req
}

// TestWriteEmptyLabelValue: one rule for the HTTP layer and the store, as in
// Prometheus: a label with an empty value is accepted and means the label
// is absent, so {__name__="up", a=""} and {__name__="up"} are one series.
func TestWriteEmptyLabelValue(t *testing.T) {
	for name, st := range map[string]appendQuerier{"fake": newFakeStore(), "pebble": openPebbleStore(t)} {
		t.Run(name, func(t *testing.T) {
			srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
			series := []prompb.TimeSeries{
				{Labels: lbls("__name__", "up", "a", "", "job", "x"), Samples: []prompb.Sample{{Timestamp: 1000, Value: 1}}},
				{Labels: lbls("__name__", "up", "job", "x"), Samples: []prompb.Sample{{Timestamp: 2000, Value: 2}}},
			}
			if code, _, body := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, series, nil)); code != 204 {
				t.Fatalf("got %d %q", code, body)
			}
			ss := st.Select(context.Background(), store.Query{Start: 0, End: 10_000, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "up")}})
			defer ss.Close()
			var got []string
			for ss.Next() {
				got = append(got, fmt.Sprint(ss.At().Labels, len(ss.At().Samples)))
			}
			if err := ss.Err(); err != nil {
				t.Fatal(err)
			}
			if want := []string{`{__name__="up", job="x"} 2`}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("series %q, want %q", got, want)
			}
		})
	}
}

// TestWriteInvalidMetadataWritesNothing: metadata is validated with the
// series, before anything is written (it used to be refused after the
// samples were stored).
func TestWriteInvalidMetadataWritesNothing(t *testing.T) {
	for name, st := range map[string]appendQuerier{"fake": newFakeStore(), "pebble": openPebbleStore(t)} {
		t.Run(name, func(t *testing.T) {
			srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
			body := encodeV1(t, testSeries(3, 2, 1000), []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: "bad\xff"}})
			code, _, got := post(t, srv.URL+"/api/v1/write", hdrV1, body)
			if code != 400 || !strings.Contains(got, "none of its 6 samples written") || !strings.Contains(got, "metadata of metric family") {
				t.Fatalf("got %d %q", code, got)
			}
			if n := countSamples(t, st); n != 0 {
				t.Fatalf("%d samples written", n)
			}
		})
	}
}

// TestWriteUIDExhausted: the store refuses the series that need a UID of an
// exhausted space and writes the rest. The answer is 400 with the store's
// message (a retry cannot succeed), the Written header counts what was
// written, and the refused samples are counted as uid_exhausted.
func TestWriteUIDExhausted(t *testing.T) {
	st := newFakeStore()
	st.refuse = func(l labels.Labels) bool {
		return l.Get("instance") == "host-3:9100" || l.Get("instance") == "host-7:9100"
	}
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	code, hdr, body := post(t, srv.URL+"/api/v1/write", hdrV2, encodeV2(t, toV2(testSeries(10, 3, 1000))))
	if code != 400 || !strings.Contains(body, "24 of 30 samples written") || !strings.Contains(body, "2 series (6 samples, 0 histograms) refused") || !strings.Contains(body, "all 1-byte tagv UIDs are assigned") {
		t.Fatalf("got %d %q", code, body)
	}
	if got := hdr.Get(headerSamplesWritten); got != "24" {
		t.Fatalf("%s = %q, want 24", headerSamplesWritten, got)
	}
	if st.numSamples() != 24 {
		t.Fatalf("store holds %d samples, want 24", st.numSamples())
	}
	if got := testutil.ToFloat64(srv.metrics().samplesRejected.WithLabelValues(reasonUIDExhausted)); got != 6 {
		t.Fatalf("uid_exhausted rejections %v, want 6", got)
	}
	if got := testutil.ToFloat64(srv.metrics().samplesWritten); got != 24 {
		t.Fatalf("written counter %v, want 24", got)
	}
}
