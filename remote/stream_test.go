package remote

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/prom-hbase/prom-hbase/store"
)

// flushCounter is a ResponseWriter that counts flushes, safe for the
// stream writer's timer.
type flushCounter struct {
	mu      sync.Mutex
	header  http.Header
	body    bytes.Buffer
	flushes int
}

func (f *flushCounter) Header() http.Header { return f.header }
func (f *flushCounter) WriteHeader(int)     {}
func (f *flushCounter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.body.Write(p)
}
func (f *flushCounter) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
}

// TestStreamWriterBatchesFrames: frames ready at once go out in a few
// writes, not a flush each, and every frame arrives intact.
func TestStreamWriterBatchesFrames(t *testing.T) {
	w := &flushCounter{header: http.Header{}}
	sw := &streamWriter{w: w, flusher: w, bufs: new(readBuffers), maxBytes: 1 << 20, delay: time.Hour}
	const n = 200
	series := make([]store.ChunkSeries, n)
	for i := range series {
		series[i] = store.ChunkSeries{Labels: labels.FromStrings("__name__", "m", "i", string(rune('a'+i%26))+string(rune('a'+i/26))),
			Chunks: stubChunks(t, 1, 120, int64(i)*1000)}
		if _, _, err := sw.writeChunkSeries(0, series[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.finish(); err != nil {
		t.Fatal(err)
	}
	// 200 frames of about 250 bytes: under 64 KiB apart from the last send.
	if w.flushes < 1 || w.flushes > 2 {
		t.Errorf("%d flushes for %d frames, want 1 or 2", w.flushes, n)
	}
	cr := remote.NewChunkedReader(&w.body, 1<<20, nil)
	for i := range n {
		var resp prompb.ChunkedReadResponse
		if err := cr.NextProto(&resp); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got := len(resp.ChunkedSeries[0].Chunks); got != 1 {
			t.Fatalf("frame %d: %d chunks", i, got)
		}
	}
	var resp prompb.ChunkedReadResponse
	if err := cr.NextProto(&resp); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

// blockingSet yields its first series, then waits for release before the
// rest: a store still fetching.
type blockingSet struct {
	chunkStubSet
	release chan struct{}
}

func (s *blockingSet) Next() bool {
	if s.i == 0 {
		<-s.release
	}
	return s.chunkStubSet.Next()
}

type blockingStub struct {
	chunkStub
	release chan struct{}
}

func (b *blockingStub) SelectChunks(context.Context, store.Query) store.ChunkSeriesSet {
	return &blockingSet{chunkStubSet: chunkStubSet{series: b.series, i: -1}, release: b.release}
}

// TestReadStreamedFrameNotHeld: a frame written while the store is still
// fetching the next series reaches the client without waiting for it.
func TestReadStreamedFrameNotHeld(t *testing.T) {
	stub := &blockingStub{release: make(chan struct{})}
	for _, v := range []string{"a", "b"} {
		stub.series = append(stub.series, store.ChunkSeries{Labels: labels.FromStrings("__name__", "m", "v", v), Chunks: stubChunks(t, 1, 10, 0)})
	}
	srv := httptest.NewServer(NewReadHandler(stub, ReadConfig{}, NewMetrics(nil), slog.New(slog.DiscardHandler)))
	defer srv.Close()
	var once sync.Once
	release := func() { once.Do(func() { close(stub.release) }) }
	defer release()
	body := readRequest(t, []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
		query(t, 0, 1<<40, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")))
	req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range readHdr {
		req.Header.Set(k, v)
	}
	got := make(chan error, 1)
	go func() {
		// The status line goes out with the first frame: Do waits for it.
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- err
			return
		}
		defer resp.Body.Close()
		var first prompb.ChunkedReadResponse
		got <- remote.NewChunkedReader(resp.Body, 1<<20, nil).NextProto(&first)
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("first frame: %v", err)
		}
	case <-time.After(20 * time.Second):
		release()
		t.Fatal("the first frame was held back while the store fetched the next series")
	}
}
