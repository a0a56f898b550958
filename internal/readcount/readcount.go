// Package readcount counts the samples of a remote-read answer, as the load
// tool (cmd/benchtool) checks every pass it times: a reader that answered
// fewer samples than were written must not be reported as fast. It knows
// Prometheus's remote-read wire formats only, never how or where the
// answering side stores anything.
package readcount

import (
	"errors"
	"fmt"
	"io"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// maxFrameBytes bounds one frame of a streamed answer: far above what a
// server sends (Prometheus's default is 1 MiB), low enough that a corrupt
// length cannot take the reader's memory.
const maxFrameBytes = 50 << 20

// Samples counts the float samples of a SAMPLES answer: a snappy-compressed
// prometheus.ReadResponse.
func Samples(r io.Reader) (int64, error) {
	compressed, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	raw, err := snappy.Decode(nil, compressed)
	if err != nil {
		return 0, fmt.Errorf("decoding snappy: %w", err)
	}
	var resp prompb.ReadResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return 0, fmt.Errorf("decoding read response: %w", err)
	}
	var n int64
	for _, q := range resp.Results {
		for _, ts := range q.Timeseries {
			n += int64(len(ts.Samples))
		}
	}
	return n, nil
}

// Streamed counts the samples in the chunks of a STREAMED_XOR_CHUNKS
// answer, frame by frame, each frame's checksum checked.
func Streamed(r io.Reader) (int64, error) {
	cr := remote.NewChunkedReader(r, maxFrameBytes, nil)
	var n int64
	for {
		var resp prompb.ChunkedReadResponse
		err := cr.NextProto(&resp)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("decoding frame: %w", err)
		}
		for _, s := range resp.ChunkedSeries {
			for _, ch := range s.Chunks {
				c, err := chunkenc.FromData(chunkenc.Encoding(ch.Type), ch.Data)
				if err != nil {
					return n, fmt.Errorf("decoding chunk: %w", err)
				}
				n += int64(c.NumSamples())
			}
		}
	}
}
