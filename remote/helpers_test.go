package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/prom-hbase/prom-hbase/store"
)

// appendQuerier is what the handlers need of a store.
type appendQuerier interface {
	store.Appender
	store.Querier
}

// staleNaN is Prometheus's staleness marker, which must survive bit-exact.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

type testServer struct {
	*httptest.Server
	reg *prometheus.Registry
	m   *Metrics
}

func (s *testServer) metrics() *Metrics { return s.m }

func newTestServer(t testing.TB, st appendQuerier, wcfg WriteConfig, rcfg ReadConfig) *testServer {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	logger := slog.New(slog.DiscardHandler)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/write", NewWriteHandler(st, wcfg, m, logger))
	mux.Handle("/api/v1/read", NewReadHandler(st, rcfg, m, logger))
	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, reg: reg, m: m}
}

func (s *testServer) url(t testing.TB, path string) *config_util.URL {
	t.Helper()
	u, err := url.Parse(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return &config_util.URL{URL: u}
}

// testSeries builds n series of k samples each, with values that exercise
// bit-exactness: staleness markers, infinities, NaN. (Not -0: Prometheus's
// own gogo encoding drops a float field equal to 0, so -0 arrives as 0.)
func testSeries(n, k int, t0 int64) []prompb.TimeSeries {
	specials := []float64{staleNaN, math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64}
	out := make([]prompb.TimeSeries, n)
	for i := range out {
		lset := labels.FromStrings(
			"__name__", fmt.Sprintf("metric_%d", i%3),
			"instance", fmt.Sprintf("host-%d:9100", i),
			"job", "node",
			"zone", "Zürich ☃",
		)
		ts := prompb.TimeSeries{Labels: prompb.FromLabels(lset, nil)}
		for j := range k {
			v := float64(i*1000+j) * 1.5
			if j%17 == 5 {
				v = specials[(i+j)%len(specials)]
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(j)*15000 + int64(i), Value: v})
		}
		out[i] = ts
	}
	return out
}

func encodeV1(t testing.TB, series []prompb.TimeSeries, md []prompb.MetricMetadata) []byte {
	t.Helper()
	b, err := (&prompb.WriteRequest{Timeseries: series, Metadata: md}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, b)
}

func toV2(series []prompb.TimeSeries) *writev2.Request {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, s := range series {
		var b labels.ScratchBuilder
		ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(s.ToLabels(&b, nil), nil)}
		for _, x := range s.Samples {
			ts.Samples = append(ts.Samples, writev2.Sample{Value: x.Value, Timestamp: x.Timestamp})
		}
		ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize("help text"), UnitRef: st.Symbolize("seconds")}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	return req
}

func encodeV2(t testing.TB, req *writev2.Request) []byte {
	t.Helper()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, b)
}

// post sends body with the given headers and returns status, headers, body.
func post(t testing.TB, u string, hdr map[string]string, body []byte) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var (
	hdrV1 = map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	hdrV2 = map[string]string{"Content-Type": "application/x-protobuf;proto=io.prometheus.write.v2.Request", "Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "2.0.0"}
)

func timeout() model.Duration { return model.Duration(30 * time.Second) }
