package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/store"
)

// benchHistogramSeries is what Prometheus sends for native histograms: one
// histogram per series, of a realistic size (schema 3, about 20 buckets in
// two spans on each side), integer or float.
func benchHistogramSeries(i int, float bool) []histSeries {
	rng := rand.New(rand.NewPCG(uint64(i), 3))
	out := make([]histSeries, benchSamples)
	for j := range out {
		spans := []histogram.Span{{Offset: -3, Length: 12}, {Offset: 2, Length: 8}}
		pos, neg := make([]float64, 20), make([]float64, 20)
		for k := range pos {
			pos[k], neg[k] = float64(rng.IntN(100)), float64(rng.IntN(10))
		}
		kind := histInt
		if float {
			kind = histFloat
		}
		l := layout{schema: 3, zeroThresh: 1e-128, pos: spans, neg: spans}
		out[j] = histSeries{
			labels:     labels.FromStrings("__name__", "http_request_duration_seconds", "instance", fmt.Sprintf("host-%d:9100", j), "job", "api"),
			histograms: []store.HistogramSample{buildHistogram(kind, l, int64(i)*15000, histogram.NotCounterReset, pos, neg, 3, 1234.5)},
		}
	}
	return out
}

// BenchmarkDecodeHistograms measures the decoders on requests of 2,000
// native histograms.
func BenchmarkDecodeHistograms(b *testing.B) {
	for _, float := range []bool{false, true} {
		series := benchHistogramSeries(0, float)
		name := map[bool]string{false: "int", true: "float"}[float]
		v1 := mustMarshal(b, &prompb.WriteRequest{Timeseries: toV1Hist(series)})
		v2 := mustMarshal(b, toV2Hist(series))
		var r writeRequest
		b.Run("v1_"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(v1)))
			for b.Loop() {
				if err := r.decodeV1(v1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*benchSamples/b.Elapsed().Seconds(), "histograms/s")
		})
		b.Run("v1_"+name+"_gogo", func(b *testing.B) {
			// For comparison: the generated decoder, which allocates
			// every histogram's slices.
			b.ReportAllocs()
			b.SetBytes(int64(len(v1)))
			for b.Loop() {
				var req prompb.WriteRequest
				if err := req.Unmarshal(v1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*benchSamples/b.Elapsed().Seconds(), "histograms/s")
		})
		b.Run("v2_"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(v2)))
			for b.Loop() {
				if err := r.decodeV2(v2); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*benchSamples/b.Elapsed().Seconds(), "histograms/s")
		})
	}
}

// BenchmarkWriteHandlerHistograms measures the HTTP layer alone on requests
// of 2,000 histograms: snappy, decoding, validation, answer. (samples/s are
// histograms/s here.)
func BenchmarkWriteHandlerHistograms(b *testing.B) {
	b.Run("v1", func(b *testing.B) {
		benchWrite(b, nopStore{}, WriteConfig{}, hdrV1, [][]byte{encodeV1(b, toV1Hist(benchHistogramSeries(0, false)), nil)})
	})
	b.Run("v2", func(b *testing.B) {
		benchWrite(b, nopStore{}, WriteConfig{}, hdrV2, [][]byte{encodeV2(b, toV2Hist(benchHistogramSeries(0, false)))})
	})
}

// BenchmarkEncodeHistogramChunks measures the chunk encoding of a store
// without chunks: a series of 1,000 histograms with a reset and a layout
// change, as histTestSeries makes them.
func BenchmarkEncodeHistogramChunks(b *testing.B) {
	for _, k := range []histKind{histInt, histFloat} {
		hs := randomHistograms(rand.New(rand.NewPCG(1, 2)), k, 1000, 0, 15000)
		b.Run(k.String(), func(b *testing.B) {
			var e seriesEncoder
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.encode(store.Series{Histograms: hs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "histograms/s")
		})
	}
}

// BenchmarkReadHistograms: a read of 100 series of 100 histograms from the
// in-memory double (a plain Querier), SAMPLES (copying histograms into the
// response and marshalling it) and streamed (encoding chunks and framing).
// The double's own deep copies of the histograms are part of the figure.
func BenchmarkReadHistograms(b *testing.B) {
	st := newFakeStore()
	rng := rand.New(rand.NewPCG(5, 5))
	var batch []store.SeriesIn
	for i := range 100 {
		batch = append(batch, store.SeriesIn{
			Labels:     []labels.Label{{Name: "__name__", Value: "h"}, {Name: "i", Value: fmt.Sprint(i)}},
			Histograms: randomHistograms(rng, histKind(i%2), 100, 0, 15000),
		})
	}
	if err := st.Write(context.Background(), batch); err != nil {
		b.Fatal(err)
	}
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		b.Run(rt.String(), func(b *testing.B) {
			h := NewReadHandler(st, ReadConfig{}, NewMetrics(nil), slog.New(slog.DiscardHandler))
			body := readRequest(b, []prompb.ReadRequest_ResponseType{rt}, query(b, 0, 1<<50, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "h")))
			w := &discardWriter{hdr: http.Header{}}
			r, _ := http.NewRequest(http.MethodPost, "/api/v1/read", nil)
			b.ReportAllocs()
			for b.Loop() {
				r.Body = io.NopCloser(bytes.NewReader(body))
				w.code = 0
				h.ServeHTTP(w, r)
				if w.code != http.StatusOK && w.code != 0 { // 0: written without WriteHeader, a 200
					b.Fatalf("status %d", w.code)
				}
			}
			b.ReportMetric(float64(b.N)*10_000/b.Elapsed().Seconds(), "histograms/s")
		})
	}
}
