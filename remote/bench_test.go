package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table/hbasetable"
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

// benchWrite posts pre-encoded bodies through the handler (configured by
// cfg) into st and reports samples/s and allocations per sample.
func benchWrite(b *testing.B, st store.Appender, cfg WriteConfig, hdr map[string]string, bodies [][]byte) {
	h := NewWriteHandler(st, cfg, NewMetrics(nil), slog.New(slog.DiscardHandler))
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
// acknowledges at once): snappy, decoding, validation, answer. The store
// reports no series IDs, so with the series cache ("v1-cache") every
// series misses it: what a miss adds.
func BenchmarkWriteHandler(b *testing.B) {
	b.Run("v1", func(b *testing.B) { benchWrite(b, nopStore{}, WriteConfig{}, hdrV1, benchBodies(b, false, 1)) })
	b.Run("v1-cache", func(b *testing.B) { benchWrite(b, nopStore{}, benchCache, hdrV1, benchBodies(b, false, 1)) })
	b.Run("v2", func(b *testing.B) { benchWrite(b, nopStore{}, WriteConfig{}, hdrV2, benchBodies(b, true, 1)) })
	b.Run("v2-cache", func(b *testing.B) { benchWrite(b, nopStore{}, benchCache, hdrV2, benchBodies(b, true, 1)) })
}

// benchCache is a handler with the series cache, as the adapter's default.
var benchCache = WriteConfig{SeriesCacheBytes: 256 << 20}

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
// the real store on the embedded Pebble backend; "v1-cache" with the
// series cache, which every series after the first request hits
// ("v2-cache": looked up by its labels).
func BenchmarkWriteEmbedded(b *testing.B) {
	b.Run("v1", func(b *testing.B) { benchWrite(b, openPebbleStore(b), WriteConfig{}, hdrV1, benchBodies(b, false, 50)) })
	b.Run("v1-cache", func(b *testing.B) { benchWrite(b, openPebbleStore(b), benchCache, hdrV1, benchBodies(b, false, 50)) })
	b.Run("v2", func(b *testing.B) { benchWrite(b, openPebbleStore(b), WriteConfig{}, hdrV2, benchBodies(b, true, 50)) })
	b.Run("v2-cache", func(b *testing.B) { benchWrite(b, openPebbleStore(b), benchCache, hdrV2, benchBodies(b, true, 50)) })
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
		cfg  WriteConfig
		hdr  map[string]string
		v2   bool
	}{{"v1", WriteConfig{}, hdrV1, false}, {"v1-cache", benchCache, hdrV1, false}, {"v2", WriteConfig{}, hdrV2, true}, {"v2-cache", benchCache, hdrV2, true}} {
		b.Run(v.name, func(b *testing.B) {
			benchWrite(b, openHBaseStore(b), v.cfg, v.hdr, benchBodies(b, v.v2, 50))
		})
	}
}

// BenchmarkReadScaleHBase shows that a streamed read holds what one metric's
// distinct series need, not what series x hours need, and that its first
// frame leaves after the first metric's series are found: it reads 48 hours
// of 1k series and of 100k series (one sample an hour; the cost is per row),
// in metrics of 1k series, and 100k series in one metric, from the test
// HBase, and reports the peak heap growth during the read and the time to
// the first frame. The data is written once into tables of the prefix
// readscale_ and kept for later runs. Run it alone:
//
//	go test ./remote -run '^$' -bench ReadScaleHBase -benchtime 1x -timeout 60m
//
// On the shared test HBase (1 GiB of heap, many tables) the 100k cases are
// heavy; -bench 'ReadScaleHBase/series=(1000|10000)/' runs the small ones.
func BenchmarkReadScaleHBase(b *testing.B) {
	zk := hbasetest.ZK(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := hbasetable.Open(ctx, hbasetable.Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	benchReadScale(b, openStore(b, db, "readscale_"))
}

// BenchmarkReadScalePebble is BenchmarkReadScaleHBase on the embedded
// backend, in a fresh directory.
func BenchmarkReadScalePebble(b *testing.B) {
	benchReadScale(b, openPebbleStore(b))
}

func benchReadScale(b *testing.B, st *store.Store) {
	for _, c := range []struct{ series, perMetric int }{{1000, 1000}, {10_000, 1000}, {100_000, 1000}, {100_000, 100_000}} {
		b.Run(fmt.Sprintf("series=%d/per-metric=%d", c.series, c.perMetric), func(b *testing.B) {
			job := fmt.Sprintf("scale-%d-%d", c.series, c.perMetric)
			const hours = 48
			t0 := int64(1_700_000_000_000) / 3_600_000 * 3_600_000
			ensureScaleData(b, st, job, c.series, c.perMetric, hours, t0)
			body := readRequest(b, []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
				query(b, t0, t0+hours*3_600_000-1, nil,
					labels.MustNewMatcher(labels.MatchRegexp, "__name__", "readscale_m.+"), // not the marker
					labels.MustNewMatcher(labels.MatchEqual, "job", job)))
			h := NewReadHandler(st, ReadConfig{}, NewMetrics(nil), slog.New(slog.NewTextHandler(os.Stderr, nil)))
			var m readMeasure
			for b.Loop() {
				r := measureRead(b, h, body)
				r.peak = max(r.peak, m.peak)
				m = r
			}
			if m.frames < int64(c.series) {
				b.Fatalf("%d frames for %d series", m.frames, c.series)
			}
			b.ReportMetric(float64(m.peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(m.firstFrame.Milliseconds()), "first-frame-ms")
			b.ReportMetric(float64(m.total.Milliseconds()), "read-ms")
			b.ReportMetric(float64(m.frames), "frames")
		})
	}
}

type readMeasure struct {
	peak              uint64 // heap growth over the heap before the read
	firstFrame, total time.Duration
	frames            int64
}

// measureRead serves one request and samples the heap every 2 ms, with
// garbage collected promptly so that the heap measures what the read holds.
func measureRead(b *testing.B, h http.Handler, body []byte) readMeasure {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := heap()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if v := heap(); v > base && v-base > peak.Load() {
					peak.Store(v - base)
				}
			}
		}
	}()
	w := &timingWriter{discardWriter: discardWriter{hdr: http.Header{}}, start: time.Now()}
	r, _ := http.NewRequest(http.MethodPost, "/api/v1/read", bytes.NewReader(body))
	func() {
		// A read that fails after its first frame aborts the handler (the
		// reason is in the log).
		defer func() {
			if p := recover(); p != nil {
				close(stop)
				<-done
				b.Fatalf("read aborted after %d frames: %v", w.frames, p)
			}
		}()
		h.ServeHTTP(w, r)
	}()
	total := time.Since(w.start)
	close(stop)
	<-done
	if w.code != http.StatusOK {
		b.Fatalf("status %d", w.code)
	}
	return readMeasure{peak: peak.Load(), firstFrame: w.first, total: total, frames: w.frames}
}

// timingWriter notes when the first frame is written and counts frames.
type timingWriter struct {
	discardWriter
	start  time.Time
	first  time.Duration
	frames int64
}

func (w *timingWriter) Write(p []byte) (int, error) {
	if w.frames == 0 {
		w.first = time.Since(w.start)
	}
	w.frames++
	return len(p), nil
}

// ensureScaleData writes n series of job (perMetric series per metric), one
// sample an hour for hours hours from t0, unless a marker series says it is
// there already.
func ensureScaleData(b *testing.B, st *store.Store, job string, n, perMetric, hours int, t0 int64) {
	ctx := context.Background()
	marker := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "readscale_done"), labels.MustNewMatcher(labels.MatchEqual, "job", job)}
	ss := st.Select(ctx, store.Query{Start: t0, End: t0, Matchers: marker, SeriesOnly: true})
	found := ss.Next()
	err := ss.Err()
	ss.Close()
	if err != nil {
		b.Fatal(err)
	}
	if found {
		return
	}
	start := time.Now()
	const perWrite = 10_000
	lsets := make([][]labels.Label, n)
	for i := range lsets {
		lsets[i] = []labels.Label{
			{Name: "__name__", Value: fmt.Sprintf("readscale_m%d", i/perMetric)},
			{Name: "instance", Value: fmt.Sprintf("host-%06d:9100", i)},
			{Name: "job", Value: job},
		}
	}
	samples := make([]store.Sample, n)
	for h := range hours {
		for lo := 0; lo < n; lo += perWrite {
			batch := make([]store.SeriesIn, 0, perWrite)
			for i := lo; i < min(lo+perWrite, n); i++ {
				samples[i] = store.Sample{T: t0 + int64(h)*3_600_000 + int64(i%3_600_000), V: float64(i)}
				batch = append(batch, store.SeriesIn{Labels: lsets[i], Samples: samples[i : i+1]})
			}
			if err := st.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	done := []store.SeriesIn{{Labels: []labels.Label{{Name: "__name__", Value: "readscale_done"}, {Name: "job", Value: job}}, Samples: []store.Sample{{T: t0, V: 1}}}}
	if err := st.Write(ctx, done); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d series x %d hours in %v", n, hours, time.Since(start).Round(time.Second))
}
