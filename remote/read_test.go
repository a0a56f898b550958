package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/store"
)

func fillStore(t *testing.T, st appendQuerier, series []prompb.TimeSeries) {
	t.Helper()
	var r writeRequest
	if err := r.decodeV1(mustMarshal(t, &prompb.WriteRequest{Timeseries: series})); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(context.Background(), r.series); err != nil {
		t.Fatal(err)
	}
}

func mustMarshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readRequest(t testing.TB, types []prompb.ReadRequest_ResponseType, qs ...*prompb.Query) []byte {
	return snappy.Encode(nil, mustMarshal(t, &prompb.ReadRequest{Queries: qs, AcceptedResponseTypes: types}))
}

func query(t testing.TB, start, end int64, hints *storage.SelectHints, ms ...*labels.Matcher) *prompb.Query {
	t.Helper()
	q, err := remote.ToQuery(start, end, ms, hints)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

var readHdr = map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy", "X-Prometheus-Remote-Read-Version": "0.1.0"}

// TestReadStreamedFrames reads the raw stream: frame bounds, chunk sizes,
// query indexes, label order, and several queries in one request.
func TestReadStreamedFrames(t *testing.T) {
	st := newFakeStore()
	fillStore(t, st, testSeries(10, 1000, 0))
	const maxFrame = 2048
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{MaxBytesInFrame: maxFrame})
	body := readRequest(t, []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
		query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_0")),
		query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_1")),
	)
	resp, err := http.Post(srv.URL+"/api/v1/read", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse" {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	cr := remote.NewChunkedReader(resp.Body, 1<<20, nil)
	samples := map[int64]map[string]int{0: {}, 1: {}}
	var prevQuery int64
	var prev string
	frames := 0
	for {
		var res prompb.ChunkedReadResponse
		err := cr.NextProto(&res)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		frames++
		if len(res.ChunkedSeries) != 1 {
			t.Fatalf("%d series in a frame, want 1", len(res.ChunkedSeries))
		}
		// Like Prometheus, a frame may overshoot by its last chunk.
		if cs := res.ChunkedSeries[0]; len(cs.Chunks) > 0 {
			if last := cs.Chunks[len(cs.Chunks)-1].Size(); res.Size()-last > maxFrame {
				t.Fatalf("frame of %d bytes (last chunk %d), limit %d", res.Size(), last, maxFrame)
			}
		}
		if res.QueryIndex < prevQuery {
			t.Fatalf("query index went back from %d to %d", prevQuery, res.QueryIndex)
		}
		cs := res.ChunkedSeries[0]
		key := labelsString(cs.Labels)
		if res.QueryIndex == prevQuery && key < prev {
			t.Fatalf("series out of order: %s after %s", key, prev)
		}
		prevQuery, prev = res.QueryIndex, key
		for _, c := range cs.Chunks {
			chk, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
			if err != nil {
				t.Fatal(err)
			}
			if n := chk.NumSamples(); n > samplesPerChunk || n == 0 {
				t.Fatalf("chunk of %d samples", n)
			}
			samples[res.QueryIndex][key] += chk.NumSamples()
		}
	}
	if frames <= 7 {
		t.Fatalf("%d frames for 7 series: series were not split at the frame limit", frames)
	}
	for qi, want := range map[int64]string{0: "metric_0", 1: "metric_1"} {
		for k, n := range samples[qi] {
			if !strings.Contains(k, want) || n != 1000 {
				t.Fatalf("query %d: series %s with %d samples", qi, k, n)
			}
		}
		if len(samples[qi]) == 0 {
			t.Fatalf("query %d: no series", qi)
		}
	}
}

func labelsString(ls []prompb.Label) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Name + "\xff" + l.Value + "\xff")
	}
	return b.String()
}

// TestReadSeriesHint: func=series is answered with label sets only.
func TestReadSeriesHint(t *testing.T) {
	st := newFakeStore()
	fillStore(t, st, testSeries(6, 10, 0))
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		c, err := remote.NewReadClient("t", &remote.ClientConfig{URL: srv.url(t, "/api/v1/read"), Timeout: timeout(), ChunkedReadLimit: 1 << 20, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt}})
		if err != nil {
			t.Fatal(err)
		}
		q := query(t, 0, 1<<40, &storage.SelectHints{Func: "series", Start: 0, End: 1 << 40}, labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_1"))
		ss, err := c.Read(context.Background(), q, true)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var it chunkenc.Iterator
		for ss.Next() {
			n++
			if ss.At().Labels().Get("__name__") != "metric_1" {
				t.Fatalf("%s: unexpected series %s", rt, ss.At().Labels())
			}
			it = ss.At().Iterator(it)
			if it.Next() != chunkenc.ValNone {
				t.Fatalf("%s: series-only answer carries samples", rt)
			}
		}
		if ss.Err() != nil || n != 2 {
			t.Fatalf("%s: %d series, err %v", rt, n, ss.Err())
		}
	}
}

// TestReadBadRequests covers the refusals of the read endpoint.
func TestReadBadRequests(t *testing.T) {
	st := newFakeStore()
	fillStore(t, st, testSeries(4, 100, 0))
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{SampleLimit: 250, MaxRequestBytes: 4096})
	up := labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")
	samplesOnly := []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}
	badRegex := &prompb.Query{EndTimestampMs: 10, Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "job", Value: "(["}}}
	for _, tc := range []struct {
		name   string
		method string
		body   []byte
		code   int
		msg    string
	}{
		{"wrong method", http.MethodPut, nil, 405, "method PUT not allowed"},
		{"not snappy", "", []byte("plain text"), 400, "snappy"},
		{"garbage protobuf", "", snappy.Encode(nil, []byte{0x0a, 0x7f}), 400, "decoding prometheus.ReadRequest"},
		{"bad regex", "", readRequest(t, samplesOnly, badRegex), 400, "query 0: matcher job=~"},
		{"no matchers", "", readRequest(t, samplesOnly, &prompb.Query{EndTimestampMs: 10}), 400, "query 0 has no matchers"},
		{"unknown response type", "", readRequest(t, []prompb.ReadRequest_ResponseType{7}, query(t, 0, 10, nil, up)), 400, "none of the accepted response types"},
		{"sample limit", "", readRequest(t, samplesOnly, query(t, 0, 1<<40, nil, up)), 400, "exceeded sample limit (250)"},
		{"body too large", "", make([]byte, 5000), 413, "exceeds the limit of 4096 bytes"},
		{"decoded too large", "", append([]byte{0x80, 0x80, 0x04}, 0), 413, "claims 65536 bytes decompressed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, _ := http.NewRequest(method, srv.URL+"/api/v1/read", bytes.NewReader(tc.body))
			for k, v := range readHdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got := readAll(resp)
			if resp.StatusCode != tc.code || !strings.Contains(got, tc.msg) {
				t.Fatalf("got %d %q, want %d with %q", resp.StatusCode, got, tc.code, tc.msg)
			}
		})
	}
}

// TestReadConcurrencyLimit: past the limit a read waits QueueTimeout, then
// is refused with 429.
func TestReadConcurrencyLimit(t *testing.T) {
	st := newFakeStore()
	fillStore(t, st, testSeries(1, 1, 0))
	st.selectGate = make(chan struct{})
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{ConcurrentLimit: 1, QueueTimeout: 50 * time.Millisecond})
	body := readRequest(t, nil, query(t, 0, 10, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")))
	var wg sync.WaitGroup
	wg.Add(1)
	first := make(chan int, 1)
	go func() {
		defer wg.Done()
		code, _, _ := post(t, srv.URL+"/api/v1/read", readHdr, body)
		first <- code
	}()
	select { // wait until the first read holds the only slot
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("first read never reached the store")
	}
	code, _, msg := post(t, srv.URL+"/api/v1/read", readHdr, body)
	if code != http.StatusTooManyRequests || !strings.Contains(msg, "too many concurrent remote reads (limit 1)") {
		t.Fatalf("second read: %d %q", code, msg)
	}
	close(st.selectGate)
	wg.Wait()
	if c := <-first; c != 200 {
		t.Fatalf("first read: %d", c)
	}
}

// TestReadTimeout: a read the store does not finish gets 503 naming the
// read timeout once it passed, for both response types, and gives its slot
// back.
func TestReadTimeout(t *testing.T) {
	st := newFakeStore()
	fillStore(t, st, testSeries(1, 1, 0))
	st.selectGate = make(chan struct{})
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{ConcurrentLimit: 1, Timeout: 100 * time.Millisecond})
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		body := readRequest(t, []prompb.ReadRequest_ResponseType{rt}, query(t, 0, 10, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")))
		code, _, msg := post(t, srv.URL+"/api/v1/read", readHdr, body)
		if code != http.StatusServiceUnavailable || !strings.Contains(msg, "query 0: remote read did not finish within the read timeout of 100ms") {
			t.Errorf("%s: %d %q, want 503 naming the read timeout", rt, code, msg)
		}
	}
}

// TestReadStreamFailureMidway: a storage error after the first frame must
// reach the client as an error, not as a stream that looks complete.
func TestReadStreamFailureMidway(t *testing.T) {
	st := newFakeStore()
	fillStore(t, st, testSeries(5, 10, 0))
	st.failAfter = 2
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	c, err := remote.NewReadClient("t", &remote.ClientConfig{URL: srv.url(t, "/api/v1/read"), Timeout: timeout(), ChunkedReadLimit: 1 << 20, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.Read(context.Background(), query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")), true)
	if err == nil {
		for ss.Next() {
		}
		err = ss.Err()
	}
	if err == nil {
		t.Fatal("a stream cut by a storage error read as complete")
	}

	// Before the first frame, the failure is a proper 503.
	st.failAfter = 0
	st.failWith = errors.New("no region server")
	_, err = c.Read(context.Background(), query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")), true)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "no region server") {
		t.Fatalf("err = %v", err)
	}
}

// chunkStub is a store.ChunkQuerier answering every query with the same
// series, to check that the handler sends a store's chunks as they are.
type chunkStub struct {
	appendQuerier
	series []store.ChunkSeries
}

func (c *chunkStub) SelectChunks(context.Context, store.Query) store.ChunkSeriesSet {
	return &chunkStubSet{series: c.series, i: -1}
}

type chunkStubSet struct {
	series []store.ChunkSeries
	i      int
}

func (s *chunkStubSet) Next() bool            { s.i++; return s.i < len(s.series) }
func (s *chunkStubSet) At() store.ChunkSeries { return s.series[s.i] }
func (s *chunkStubSet) Err() error            { return nil }
func (s *chunkStubSet) Close()                {}

// stubChunks encodes n chunks of per samples each, 1 s apart, from t0.
func stubChunks(t *testing.T, n, per int, t0 int64) []store.Chunk {
	var out []store.Chunk
	for i := range n {
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			t.Fatal(err)
		}
		first := t0 + int64(i*per)*1000
		for j := range per {
			app.Append(0, first+int64(j)*1000, float64(j))
		}
		out = append(out, store.Chunk{MinTime: first, MaxTime: first + int64(per-1)*1000, Encoding: chunkenc.EncXOR, Samples: per, Data: c.Bytes()})
	}
	return out
}

// TestReadStreamedPassesChunksThrough: the chunks a ChunkQuerier gives are
// sent byte for byte, in order, split across frames at the frame limit, and
// Prometheus's own client reads them back.
func TestReadStreamedPassesChunksThrough(t *testing.T) {
	st := &chunkStub{appendQuerier: newFakeStore(), series: []store.ChunkSeries{
		{Labels: labels.FromStrings("__name__", "a", "i", "1"), Chunks: stubChunks(t, 30, 240, 0)},
		{Labels: labels.FromStrings("__name__", "a", "i", "2"), Chunks: stubChunks(t, 1, 7, 5000)},
		{Labels: labels.FromStrings("__name__", "b"), Chunks: stubChunks(t, 3, 120, 0)},
	}}
	const maxFrame = 4096
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{MaxBytesInFrame: maxFrame})
	body := readRequest(t, []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
		query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")))
	resp, err := http.Post(srv.URL+"/api/v1/read", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cr := remote.NewChunkedReader(resp.Body, 1<<20, nil)
	got := map[string][]prompb.Chunk{}
	frames := 0
	for {
		var res prompb.ChunkedReadResponse
		err := cr.NextProto(&res)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		frames++
		cs := res.ChunkedSeries[0]
		if last := cs.Chunks[len(cs.Chunks)-1].Size(); res.Size()-last > maxFrame {
			t.Fatalf("frame of %d bytes (last chunk %d), limit %d", res.Size(), last, maxFrame)
		}
		key := labelsString(cs.Labels)
		got[key] = append(got[key], cs.Chunks...)
	}
	if frames <= len(st.series) {
		t.Fatalf("%d frames: the long series was not split", frames)
	}
	for _, s := range st.series {
		key := labelsString(prompbLabels(s.Labels))
		if len(got[key]) != len(s.Chunks) {
			t.Fatalf("%s: %d chunks, want %d", key, len(got[key]), len(s.Chunks))
		}
		for i, c := range s.Chunks {
			g := got[key][i]
			if !bytes.Equal(g.Data, c.Data) || g.MinTimeMs != c.MinTime || g.MaxTimeMs != c.MaxTime || g.Type != prompb.Chunk_XOR {
				t.Fatalf("%s chunk %d: sent [%d, %d] %x, want [%d, %d] %x", key, i, g.MinTimeMs, g.MaxTimeMs, g.Data, c.MinTime, c.MaxTime, c.Data)
			}
		}
	}
	if n := testutil.ToFloat64(srv.m.samplesRead); n != 30*240+7+3*120 {
		t.Fatalf("samples read metric %v, want %d", n, 30*240+7+3*120)
	}

	// Prometheus's client takes the stream.
	c, err := remote.NewReadClient("t", &remote.ClientConfig{URL: srv.url(t, "/api/v1/read"), Timeout: timeout(), ChunkedReadLimit: 1 << 20, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.Read(context.Background(), query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")), true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil || n != 30*240+7+3*120 {
		t.Fatalf("Prometheus's client read %d samples, err %v", n, err)
	}
}

func prompbLabels(ls labels.Labels) []prompb.Label {
	var out []prompb.Label
	ls.Range(func(l labels.Label) { out = append(out, prompb.Label{Name: l.Name, Value: l.Value}) })
	return out
}
