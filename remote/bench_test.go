package remote

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/store"
)

// benchSamples is the size of a remote-write request in the benchmarks:
// Prometheus's default max_samples_per_send.
const benchSamples = 2000

// benchSeries is what Prometheus sends: one sample per series, labels like
// a node exporter's. Timestamps advance with i, so every request is new data.
func benchSeries(i int) []prompb.TimeSeries {
	s := testSeries(benchSamples, 1, int64(i)*15000)
	for j := range s {
		s[j].Labels = append(s[j].Labels, prompb.Label{Name: "pod", Value: "api-7d9f8b6c5d-x2x9p"})
		labelsSorted := labels.New(prompbToLabels(s[j].Labels)...)
		s[j].Labels = prompb.FromLabels(labelsSorted, nil)
	}
	return s
}

func prompbToLabels(ls []prompb.Label) []labels.Label {
	out := make([]labels.Label, len(ls))
	for i, l := range ls {
		out[i] = labels.Label{Name: l.Name, Value: l.Value}
	}
	return out
}

// discardWriter is a ResponseWriter that allocates nothing per request.
type discardWriter struct {
	hdr  http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.hdr }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }
func (d *discardWriter) Flush()                      {}

// nopStore acknowledges writes without storing: the handler's own cost.
type nopStore struct{}

func (nopStore) Write(context.Context, []store.SeriesIn) error         { return nil }
func (nopStore) WriteMetadata(context.Context, []store.Metadata) error { return nil }
func (nopStore) Select(context.Context, store.Query) store.SeriesSet   { return &fakeSet{i: -1} }

// benchWrite posts pre-encoded bodies through the handler into st and
// reports samples/s and allocations per sample.
func benchWrite(b *testing.B, st store.Appender, hdr map[string]string, bodies [][]byte) {
	h := NewWriteHandler(st, WriteConfig{}, NewMetrics(nil), slog.New(slog.DiscardHandler))
	w := &discardWriter{hdr: http.Header{}}
	reqs := make([]*http.Request, len(bodies))
	for i, body := range bodies {
		r, _ := http.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		reqs[i] = r
	}
	// One request first, so that UID assignment of the new series (a
	// one-off per series) and the pools' first fill are not measured.
	reqs[0].Body = io.NopCloser(bytes.NewReader(bodies[0]))
	h.ServeHTTP(w, reqs[0])
	if w.code != http.StatusNoContent {
		b.Fatalf("status %d", w.code)
	}
	var before, after runtime.MemStats
	b.ResetTimer()
	runtime.ReadMemStats(&before)
	for i := 0; b.Loop(); i++ {
		r := reqs[i%len(reqs)]
		r.Body = io.NopCloser(bytes.NewReader(bodies[i%len(bodies)]))
		h.ServeHTTP(w, r)
		if w.code != http.StatusNoContent {
			b.Fatalf("status %d", w.code)
		}
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N) * benchSamples
	b.ReportMetric(n/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/sample")
}

func benchBodies(b *testing.B, v2 bool, n int) [][]byte {
	var out [][]byte
	for i := range n {
		if v2 {
			out = append(out, encodeV2(b, toV2(benchSeries(i))))
		} else {
			out = append(out, encodeV1(b, benchSeries(i), nil))
		}
	}
	return out
}

// BenchmarkWriteHandler measures the HTTP layer alone (a store that
// acknowledges at once): snappy, decoding, validation, answer.
func BenchmarkWriteHandler(b *testing.B) {
	b.Run("v1", func(b *testing.B) { benchWrite(b, nopStore{}, hdrV1, benchBodies(b, false, 1)) })
	b.Run("v2", func(b *testing.B) { benchWrite(b, nopStore{}, hdrV2, benchBodies(b, true, 1)) })
}

// BenchmarkDecode measures the protobuf decoders alone.
func BenchmarkDecode(b *testing.B) {
	v1 := mustMarshal(b, &prompb.WriteRequest{Timeseries: benchSeries(0)})
	v2 := mustMarshal(b, toV2(benchSeries(0)))
	var r writeRequest
	b.Run("v1", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(v1)))
		for b.Loop() {
			if err := r.decodeV1(v1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v2", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(v2)))
		for b.Loop() {
			if err := r.decodeV2(v2); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchRead reads every series of st through the handler, streamed.
func benchRead(b *testing.B, st store.Querier, matchers ...*labels.Matcher) {
	h := NewReadHandler(st, ReadConfig{}, NewMetrics(nil), slog.New(slog.DiscardHandler))
	body := readRequest(b, []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}, query(b, 0, 1<<50, nil, matchers...))
	w := &discardWriter{hdr: http.Header{}}
	r, _ := http.NewRequest(http.MethodPost, "/api/v1/read", nil)
	b.ReportAllocs()
	for b.Loop() {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkReadStreamed: 100 series of 1,000 samples from the in-memory
// double, so the figure is the cost of chunk encoding and framing.
func BenchmarkReadStreamed(b *testing.B) {
	st := newFakeStore()
	series := testSeries(100, 1000, 0)
	var r writeRequest
	if err := r.decodeV1(mustMarshal(b, &prompb.WriteRequest{Timeseries: series})); err != nil {
		b.Fatal(err)
	}
	if err := st.Write(context.Background(), r.series); err != nil {
		b.Fatal(err)
	}
	benchRead(b, st, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "metric_.*"))
	b.ReportMetric(float64(b.N)*100_000/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkWriteEmbedded: requests of 2,000 samples through the handler into
// the real store on the embedded Pebble backend.
func BenchmarkWriteEmbedded(b *testing.B) {
	b.Run("v1", func(b *testing.B) { benchWrite(b, openPebbleStore(b), hdrV1, benchBodies(b, false, 50)) })
	b.Run("v2", func(b *testing.B) { benchWrite(b, openPebbleStore(b), hdrV2, benchBodies(b, true, 50)) })
}

// BenchmarkReadEmbedded: a streamed read of 100 series of 1,000 samples from
// the real store on Pebble.
func BenchmarkReadEmbedded(b *testing.B) {
	st := openPebbleStore(b)
	var r writeRequest
	if err := r.decodeV1(mustMarshal(b, &prompb.WriteRequest{Timeseries: testSeries(100, 1000, 0)})); err != nil {
		b.Fatal(err)
	}
	if err := st.Write(context.Background(), r.series); err != nil {
		b.Fatal(err)
	}
	benchRead(b, st, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "metric_.*"))
	b.ReportMetric(float64(b.N)*100_000/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkWriteHBase: the same requests into the real store on HBase (the
// test HBase: one region server on loopback).
func BenchmarkWriteHBase(b *testing.B) {
	for _, v := range []struct {
		name string
		hdr  map[string]string
		v2   bool
	}{{"v1", hdrV1, false}, {"v2", hdrV2, true}} {
		b.Run(v.name, func(b *testing.B) {
			benchWrite(b, openHBaseStore(b), v.hdr, benchBodies(b, v.v2, 50))
		})
	}
}
