package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/klauspost/compress/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/store"
)

// TestHistogramRoundTrip writes histograms of every kind with Prometheus's
// own remote-write client (1.0 and 2.0) and reads them back with its
// remote-read client, SAMPLES and STREAMED_XOR_CHUNKS, on the in-memory
// store (a plain Querier: the handler encodes the chunks itself).
func TestHistogramRoundTrip(t *testing.T) {
	testHistogramRoundTrip(t, newFakeStore())
}

// testHistogramRoundTrip is shared with the tests on real stores.
func testHistogramRoundTrip(t *testing.T, st appendQuerier) {
	ctx := context.Background()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{MaxBytesInFrame: 2048})
	const t0 = int64(1_700_000_000_000)
	sets := map[string][]histSeries{
		"v1": histTestSeries(11, "rt-v1", 300, t0), // 300: more than one chunk
		"v2": histTestSeries(12, "rt-v2", 300, t0),
	}
	for _, v := range []string{"v1", "v2"} {
		t.Run("write_"+v, func(t *testing.T) {
			msg, body := remoteapi.WriteV1MessageType, encodeV1(t, toV1Hist(sets[v]), nil)
			if v == "v2" {
				msg, body = remoteapi.WriteV2MessageType, encodeV2(t, toV2Hist(sets[v]))
			}
			c, err := remote.NewWriteClient("test", &remote.ClientConfig{URL: srv.url(t, "/api/v1/write"), Timeout: timeout(), WriteProtoMsg: msg})
			if err != nil {
				t.Fatal(err)
			}
			stats, err := c.Store(ctx, body, 0)
			if err != nil {
				t.Fatalf("Store: %v", err)
			}
			floats, hists := countHist(sets[v])
			if v == "v2" && (!stats.Confirmed || stats.Samples != floats || stats.Histograms != hists) {
				t.Fatalf("stats %+v, want %d samples and %d histograms", stats, floats, hists)
			}
		})
	}
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		t.Run("read_"+rt.String(), func(t *testing.T) {
			c, err := remote.NewReadClient("test", &remote.ClientConfig{
				URL: srv.url(t, "/api/v1/read"), Timeout: timeout(), ChunkedReadLimit: 50 << 20,
				AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"v1", "v2"} {
				q, err := remote.ToQuery(t0, t0+1_000_000_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "rt-"+v)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				ss, err := c.Read(ctx, q, true)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				compareHistSeries(t, readHistSeries(t, ss), sortedHistSeries(sets[v]), rt == prompb.ReadRequest_STREAMED_XOR_CHUNKS)
			}
		})
	}
}

// readHistSeries collects what Prometheus's client reads, merging the
// frames of one series.
func readHistSeries(t *testing.T, ss storage.SeriesSet) []histSeries {
	t.Helper()
	var out []histSeries
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		if len(out) == 0 || labels.Compare(out[len(out)-1].labels, s.Labels()) != 0 {
			out = append(out, histSeries{labels: s.Labels()})
		}
		cur := &out[len(out)-1]
		it = s.Iterator(it)
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			switch typ {
			case chunkenc.ValFloat:
				ts, v := it.At()
				cur.samples = append(cur.samples, store.Sample{T: ts, V: v})
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				cur.histograms = append(cur.histograms, store.HistogramSample{T: ts, H: h})
			case chunkenc.ValFloatHistogram:
				ts, fh := it.AtFloatHistogram(nil)
				cur.histograms = append(cur.histograms, store.HistogramSample{T: ts, FH: fh})
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatalf("series set: %v", err)
	}
	return out
}

// compareHistSeries compares series read with those written: floats by
// bits, histograms field by field (chunked: as chunks keep them).
func compareHistSeries(t *testing.T, got, want []histSeries, chunked bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if labels.Compare(g.labels, w.labels) != 0 {
			t.Fatalf("series %d: %s, want %s", i, g.labels, w.labels)
		}
		if len(g.samples) != len(w.samples) || len(g.histograms) != len(w.histograms) {
			t.Fatalf("%s: %d samples and %d histograms, want %d and %d", w.labels, len(g.samples), len(g.histograms), len(w.samples), len(w.histograms))
		}
		for j := range w.samples {
			if g.samples[j].T != w.samples[j].T || diffBits("value", g.samples[j].V, w.samples[j].V) != "" {
				t.Fatalf("%s sample %d: %v, want %v", w.labels, j, g.samples[j], w.samples[j])
			}
		}
		for j := range w.histograms {
			d := diffHistogram(g.histograms[j], w.histograms[j])
			if chunked {
				d = diffHistogramChunked(g.histograms[j], w.histograms[j])
			}
			if d != "" {
				t.Fatalf("%s histogram %d (t=%d): %s", w.labels, j, w.histograms[j].T, d)
			}
		}
	}
}

// TestReadHistogramChunksPassedThrough: a ChunkQuerier's histogram and
// float-histogram chunks are sent byte for byte with their encoding, and
// the read counters count their samples by kind.
func TestReadHistogramChunksPassedThrough(t *testing.T) {
	var enc seriesEncoder
	hs := histTestSeries(5, "stub", 200, 0)
	var series []store.ChunkSeries
	wantFloats, wantHists := 0, 0
	for _, s := range hs {
		chunks, err := enc.encode(store.Series{Labels: s.labels, Samples: s.samples, Histograms: s.histograms})
		if err != nil {
			t.Fatal(err)
		}
		chunks = slices.Clone(chunks) // the encoder's are reused
		for i := range chunks {
			chunks[i].Data = bytes.Clone(chunks[i].Data)
		}
		series = append(series, store.ChunkSeries{Labels: s.labels, Chunks: chunks})
		wantFloats += len(s.samples)
		wantHists += len(s.histograms)
	}
	series = sortedChunkSeries(series)
	st := &chunkStub{appendQuerier: newFakeStore(), series: series}
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{MaxBytesInFrame: 1024})
	body := readRequest(t, []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
		query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")))
	resp, err := http.Post(srv.URL+"/api/v1/read", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cr := remote.NewChunkedReader(resp.Body, 1<<20, nil)
	got := map[string][]prompb.Chunk{}
	for {
		var res prompb.ChunkedReadResponse
		err := cr.NextProto(&res)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		cs := res.ChunkedSeries[0]
		key := labelsString(cs.Labels)
		got[key] = append(got[key], cs.Chunks...)
	}
	types := map[chunkenc.Encoding]prompb.Chunk_Encoding{chunkenc.EncXOR: prompb.Chunk_XOR, chunkenc.EncHistogram: prompb.Chunk_HISTOGRAM, chunkenc.EncFloatHistogram: prompb.Chunk_FLOAT_HISTOGRAM}
	seen := map[prompb.Chunk_Encoding]bool{}
	for _, s := range series {
		key := labelsString(prompbLabels(s.Labels))
		if len(got[key]) != len(s.Chunks) {
			t.Fatalf("%s: %d chunks, want %d", key, len(got[key]), len(s.Chunks))
		}
		for i, c := range s.Chunks {
			g := got[key][i]
			if !bytes.Equal(g.Data, c.Data) || g.MinTimeMs != c.MinTime || g.MaxTimeMs != c.MaxTime || g.Type != types[c.Encoding] {
				t.Fatalf("%s chunk %d: sent %s [%d, %d], want %s [%d, %d]", key, i, g.Type, g.MinTimeMs, g.MaxTimeMs, c.Encoding, c.MinTime, c.MaxTime)
			}
			seen[g.Type] = true
		}
	}
	if len(seen) != 3 {
		t.Fatalf("chunk types sent: %v, want all three", seen)
	}
	if f, h := testutil.ToFloat64(srv.m.samplesRead), testutil.ToFloat64(srv.m.histogramsRead); f != float64(wantFloats) || h != float64(wantHists) {
		t.Fatalf("read counters %v samples and %v histograms, want %d and %d", f, h, wantFloats, wantHists)
	}
}

func sortedChunkSeries(s []store.ChunkSeries) []store.ChunkSeries {
	out := append([]store.ChunkSeries(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && labels.Compare(out[j-1].Labels, out[j].Labels) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// TestReadSamplesHistogramFields: a SAMPLES answer carries each histogram
// as stored, integer or float, every field and the hint kept (checked on
// the wire, not through a client's conversion).
func TestReadSamplesHistogramFields(t *testing.T) {
	st := newFakeStore()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	series := histTestSeries(7, "fields", 20, 1000)
	if code, _, body := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, toV1Hist(series), nil)); code != 204 {
		t.Fatalf("write: %d %q", code, body)
	}
	body := readRequest(t, nil, query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchEqual, "job", "fields")))
	code, _, raw := post(t, srv.URL+"/api/v1/read", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"}, body)
	if code != 200 {
		t.Fatalf("read: %d %q", code, raw)
	}
	var resp prompb.ReadResponse
	decoded := mustSnappyDecode(t, []byte(raw))
	if err := resp.Unmarshal(decoded); err != nil {
		t.Fatal(err)
	}
	want := sortedHistSeries(series)
	got := resp.Results[0].Timeseries
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d", len(got), len(want))
	}
	for i, w := range want {
		if len(got[i].Histograms) != len(w.histograms) {
			t.Fatalf("%s: %d histograms, want %d", w.labels, len(got[i].Histograms), len(w.histograms))
		}
		for j, wh := range w.histograms {
			ph := got[i].Histograms[j]
			g := store.HistogramSample{T: ph.Timestamp}
			if ph.IsFloatHistogram() {
				g.FH = ph.ToFloatHistogram()
			} else {
				g.H = ph.ToIntHistogram()
			}
			if d := diffHistogram(g, wh); d != "" {
				t.Fatalf("%s histogram %d: %s", w.labels, j, d)
			}
		}
	}
}

func mustSnappyDecode(t *testing.T, b []byte) []byte {
	t.Helper()
	d, err := snappy.Decode(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
