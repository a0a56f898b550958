package remote

import (
	"bytes"
	"context"
	"fmt"
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

// flushCounter is a ResponseWriter that counts writes and flushes, safe
// for the stream writer's timer.
type flushCounter struct {
	mu      sync.Mutex
	header  http.Header
	body    bytes.Buffer
	writes  int
	flushes int
}

func (f *flushCounter) Header() http.Header { return f.header }
func (f *flushCounter) WriteHeader(int)     {}
func (f *flushCounter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	return f.body.Write(p)
}
func (f *flushCounter) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
}

// TestStreamWriterBatchesFrames: frames ready at once go out in a few
// writes, not a flush each, and every frame arrives intact. An answer that
// fits in one batch goes out with its length, in one write and no flush
// (the handler's return flushes); a longer one is sent chunked, a flush a
// batch but none at the end.
func TestStreamWriterBatchesFrames(t *testing.T) {
	for _, tc := range []struct {
		frames          int
		writes, flushes int
		withLength      bool
	}{
		// Frames of about 250 bytes: 200 fit in a batch of 64 KiB, 400 take
		// a full batch and the rest.
		{frames: 200, writes: 1, flushes: 0, withLength: true},
		{frames: 400, writes: 2, flushes: 1, withLength: false},
	} {
		w := &flushCounter{header: http.Header{}}
		sw := &streamWriter{w: w, flusher: w, bufs: new(readBuffers), maxBytes: 1 << 20, delay: time.Hour}
		for i := range tc.frames {
			s := store.ChunkSeries{Labels: labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)),
				Chunks: stubChunks(t, 1, 120, int64(i)*1000)}
			if _, _, err := sw.writeChunkSeries(0, s); err != nil {
				t.Fatal(err)
			}
		}
		if err := sw.finish(); err != nil {
			t.Fatal(err)
		}
		if w.writes != tc.writes || w.flushes != tc.flushes {
			t.Errorf("%d frames: %d writes and %d flushes, want %d and %d", tc.frames, w.writes, w.flushes, tc.writes, tc.flushes)
		}
		cl := w.header.Get("Content-Length")
		if tc.withLength && cl != fmt.Sprint(w.body.Len()) {
			t.Errorf("%d frames: Content-Length %q for a body of %d bytes", tc.frames, cl, w.body.Len())
		}
		if !tc.withLength && cl != "" {
			t.Errorf("%d frames: Content-Length %q on an answer sent in batches", tc.frames, cl)
		}
		cr := remote.NewChunkedReader(&w.body, 1<<20, nil)
		for i := range tc.frames {
			var resp prompb.ChunkedReadResponse
			if err := cr.NextProto(&resp); err != nil {
				t.Fatalf("%d frames: frame %d: %v", tc.frames, i, err)
			}
			if got := len(resp.ChunkedSeries[0].Chunks); got != 1 {
				t.Fatalf("%d frames: frame %d: %d chunks", tc.frames, i, got)
			}
		}
		var resp prompb.ChunkedReadResponse
		if err := cr.NextProto(&resp); err != io.EOF {
			t.Fatalf("%d frames: after the last frame: %v, want EOF", tc.frames, err)
		}
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
