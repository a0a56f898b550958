package readcount

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

func TestSamples(t *testing.T) {
	resp := prompb.ReadResponse{Results: []*prompb.QueryResult{
		{Timeseries: []*prompb.TimeSeries{{Samples: make([]prompb.Sample, 3)}, {Samples: make([]prompb.Sample, 4)}}},
		{Timeseries: []*prompb.TimeSeries{{Samples: make([]prompb.Sample, 5)}}},
	}}
	raw, err := proto.Marshal(&resp)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Samples(bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil || n != 12 {
		t.Fatalf("Samples = %d, %v; want 12", n, err)
	}
	if _, err := Samples(bytes.NewReader(raw)); err == nil || !strings.Contains(err.Error(), "snappy") {
		t.Errorf("an uncompressed answer gave %v, want a snappy error", err)
	}
}

// xorChunk is a chunk of n samples, as a server streams it.
func xorChunk(t *testing.T, n int) prompb.Chunk {
	t.Helper()
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		app.Append(0, int64(i)*15000, float64(i))
	}
	return prompb.Chunk{Type: prompb.Chunk_XOR, MaxTimeMs: int64(n-1) * 15000, Data: c.Bytes()}
}

func TestStreamed(t *testing.T) {
	var buf bytes.Buffer
	w := remote.NewChunkedWriter(&buf, nopFlusher{})
	frames := []prompb.ChunkedReadResponse{
		{ChunkedSeries: []*prompb.ChunkedSeries{{Chunks: []prompb.Chunk{xorChunk(t, 120), xorChunk(t, 7)}}}},
		{ChunkedSeries: []*prompb.ChunkedSeries{{Chunks: []prompb.Chunk{xorChunk(t, 1)}}}, QueryIndex: 1},
	}
	for i := range frames {
		b, err := proto.Marshal(&frames[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	whole := buf.Bytes()
	n, err := Streamed(bytes.NewReader(whole))
	if err != nil || n != 128 {
		t.Fatalf("Streamed = %d, %v; want 128", n, err)
	}
	// A frame cut short is an error, with what was counted before it.
	n, err = Streamed(bytes.NewReader(whole[:len(whole)-3]))
	if err == nil || n != 127 {
		t.Errorf("a cut answer gave %d, %v; want 127 and an error", n, err)
	}
}

type nopFlusher struct{}

func (nopFlusher) Flush() {}
