package remote

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/store"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendFrame appends data as one frame of a streamed remote-read response,
// as Prometheus's ChunkedWriter writes it: the length as a uvarint, the
// CRC-32 (Castagnoli) of data as a big-endian uint32, then data.
func AppendFrame(dst, data []byte) []byte {
	return append(appendFrameHeader(dst, data), data...)
}

func appendFrameHeader(dst, data []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(data)))
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(data, castagnoli))
}

// streamWriter writes the frames of one streamed read, reusing the
// request's buffers for labels, chunks and the marshalled frame.
type streamWriter struct {
	w        http.ResponseWriter
	flusher  http.Flusher
	bufs     *readBuffers
	maxBytes int
	started  bool
}

// writeSeries sends one series of a store without chunks: its samples are
// cut into XOR chunks of at most samplesPerChunk samples first. It returns
// the number of samples sent.
func (sw *streamWriter) writeSeries(queryIndex int64, s store.Series) (int, error) {
	b := sw.bufs
	b.storeChunks = b.storeChunks[:0]
	for start := 0; start < len(s.Samples); start += samplesPerChunk {
		end := min(start+samplesPerChunk, len(s.Samples))
		chk, err := sw.encodeChunk(len(b.storeChunks), s.Samples[start:end])
		if err != nil {
			return 0, err
		}
		b.storeChunks = append(b.storeChunks, chk)
	}
	return sw.writeChunkSeries(queryIndex, store.ChunkSeries{Labels: s.Labels, Chunks: b.storeChunks})
}

// writeChunkSeries sends one series' chunks, as they are, in as many frames
// as MaxBytesInFrame asks for (a frame overshoots by at most its last chunk,
// as Prometheus's own); a series without chunks (a series-only query) is one
// frame without chunks. It returns the number of samples sent.
func (sw *streamWriter) writeChunkSeries(queryIndex int64, s store.ChunkSeries) (int, error) {
	b := sw.bufs
	// The frame is written before the next call to Next, so labels and
	// chunk bytes need not be copied.
	b.lbls = b.lbls[:0]
	s.Labels.Range(func(l labels.Label) {
		b.lbls = append(b.lbls, prompb.Label{Name: l.Name, Value: l.Value})
	})
	budget := sw.maxBytes
	for i := range b.lbls {
		budget -= b.lbls[i].Size()
	}
	b.chunks = b.chunks[:0]
	if len(s.Chunks) == 0 {
		return 0, sw.writeFrame(queryIndex)
	}
	left, sent := budget, 0
	for i, c := range s.Chunks {
		if c.Encoding != chunkenc.EncXOR {
			return sent, fmt.Errorf("chunk of encoding %s: only XOR chunks are streamed", c.Encoding)
		}
		chk := prompb.Chunk{MinTimeMs: c.MinTime, MaxTimeMs: c.MaxTime, Type: prompb.Chunk_XOR, Data: c.Data}
		b.chunks = append(b.chunks, chk)
		left -= chk.Size()
		if left > 0 && i+1 < len(s.Chunks) {
			continue
		}
		if err := sw.writeFrame(queryIndex); err != nil {
			return sent, err
		}
		for _, c := range b.chunks {
			sent += int(binary.BigEndian.Uint16(c.Data))
		}
		b.chunks = b.chunks[:0]
		left = budget
	}
	return sent, nil
}

// encodeChunk encodes samples into the i-th reusable XOR chunk.
func (sw *streamWriter) encodeChunk(i int, samples []store.Sample) (store.Chunk, error) {
	b := sw.bufs
	for len(b.xor) <= i {
		b.xor = append(b.xor, chunkenc.NewXORChunk())
	}
	c := b.xor[i]
	c.Reset(append(c.Bytes()[:0], 0, 0)) // an empty chunk is its 2-byte sample count
	app, err := c.Appender()
	if err != nil {
		return store.Chunk{}, fmt.Errorf("XOR chunk appender: %w", err)
	}
	for _, s := range samples {
		app.Append(0, s.T, s.V)
	}
	return store.Chunk{
		MinTime:  samples[0].T,
		MaxTime:  samples[len(samples)-1].T,
		Encoding: chunkenc.EncXOR,
		Samples:  len(samples),
		Data:     c.Bytes(),
	}, nil
}

func (sw *streamWriter) writeFrame(queryIndex int64) error {
	b := sw.bufs
	series := prompb.ChunkedSeries{Labels: b.lbls, Chunks: b.chunks}
	resp := prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{&series}, QueryIndex: queryIndex}
	size := resp.Size()
	hdr := binary.MaxVarintLen64 + 4
	if cap(b.frame) < hdr+size {
		b.frame = make([]byte, hdr+size)
	}
	frame := b.frame[:hdr+size]
	if _, err := resp.MarshalToSizedBuffer(frame[hdr:]); err != nil {
		return fmt.Errorf("encoding ChunkedReadResponse: %w", err)
	}
	data := frame[hdr:]
	// Put the header right before the data, so the frame goes out in one write.
	var head [binary.MaxVarintLen64 + 4]byte
	h := appendFrameHeader(head[:0], data)
	start := hdr - len(h)
	copy(frame[start:], h)

	if !sw.started {
		sw.w.Header().Set("Content-Type", streamedContentType)
		sw.w.WriteHeader(http.StatusOK)
		sw.started = true
	}
	if _, err := sw.w.Write(frame[start:]); err != nil {
		return fmt.Errorf("writing frame: %w", err)
	}
	sw.flusher.Flush()
	return nil
}
