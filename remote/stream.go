package remote

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

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
// request's buffers for labels, chunks and the marshalled frames.
//
// Frames are sent in batches: once flushBytes of them wait, or flushDelay
// after the first of them was written, whichever comes first. A flush per
// frame (what Prometheus's own server does) costs a write system call per
// series on each side, a tenth of the CPU of a read of small series; the
// delay keeps a client from waiting on a frame while the store fetches the
// next ones. A timer goroutine may flush, so sending is under mu.
type streamWriter struct {
	w        http.ResponseWriter
	flusher  http.Flusher
	bufs     *readBuffers
	maxBytes int
	delay    time.Duration // flushDelay; tests change it

	mu      sync.Mutex
	timer   *time.Timer
	armed   bool  // the timer will flush what is pending
	started bool  // the status line went out
	closed  bool  // the handler is done with w: nothing more is sent
	err     error // a send by the timer failed
}

const (
	flushBytes = 64 << 10
	flushDelay = 2 * time.Millisecond
)

// send writes what is pending and, if flush, flushes it. Called with mu
// held.
func (sw *streamWriter) send(flush bool) error {
	if !sw.started {
		sw.w.Header().Set("Content-Type", streamedContentType)
		sw.w.WriteHeader(http.StatusOK)
		sw.started = true
	}
	p := sw.bufs.pending
	sw.bufs.pending = p[:0]
	if len(p) > 0 {
		if _, err := sw.w.Write(p); err != nil {
			return fmt.Errorf("writing frames: %w", err)
		}
	}
	if flush {
		sw.flusher.Flush()
	}
	return nil
}

func (sw *streamWriter) onTimer() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.armed = false
	if sw.closed || len(sw.bufs.pending) == 0 || sw.err != nil {
		return
	}
	sw.err = sw.send(true)
}

// finish sends what is pending (the status line alone when no frame was
// written) and stops the timer. The handler returns next, and net/http
// flushes what it buffered then, so finish does not: a flush of its own
// is one more write system call.
//
// An answer that nothing was sent of yet is all pending, so it goes out
// with its length rather than chunked: net/http then writes it in two
// system calls (its 4 KiB buffer, filled after the header, and the rest)
// where a chunked body takes four (the chunk's end and the body's end a
// write each), and the client reads it in as few. That is the common
// case of a small query, answered within flushDelay of its first frame.
func (sw *streamWriter) finish() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.stop()
	if sw.err != nil {
		return sw.err
	}
	if !sw.started {
		sw.w.Header().Set("Content-Length", strconv.Itoa(len(sw.bufs.pending)))
	}
	return sw.send(false)
}

// abort stops the timer and drops what is pending; it reports whether the
// status line went out already.
func (sw *streamWriter) abort() (started bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.stop()
	sw.bufs.pending = sw.bufs.pending[:0]
	return sw.started
}

func (sw *streamWriter) stop() {
	sw.closed = true
	if sw.timer != nil {
		sw.timer.Stop()
	}
}

// writeSeries sends one series of a store without chunks: its samples and
// histograms are encoded into chunks first (seriesEncoder). It returns the
// number of float and histogram samples sent.
func (sw *streamWriter) writeSeries(queryIndex int64, s store.Series) (floats, histograms int, err error) {
	chunks, err := sw.bufs.enc.encode(s)
	if err != nil {
		return 0, 0, err
	}
	return sw.writeChunkSeries(queryIndex, store.ChunkSeries{Labels: s.Labels, Chunks: chunks})
}

// chunkTypes maps the chunk encodings a store hands over to remote read's.
var chunkTypes = map[chunkenc.Encoding]prompb.Chunk_Encoding{
	chunkenc.EncXOR:            prompb.Chunk_XOR,
	chunkenc.EncHistogram:      prompb.Chunk_HISTOGRAM,
	chunkenc.EncFloatHistogram: prompb.Chunk_FLOAT_HISTOGRAM,
}

// writeChunkSeries sends one series' chunks, as they are, in as many frames
// as MaxBytesInFrame asks for (a frame overshoots by at most its last chunk,
// as Prometheus's own); a series without chunks (a series-only query) is one
// frame without chunks. It returns the number of float and histogram
// samples sent.
func (sw *streamWriter) writeChunkSeries(queryIndex int64, s store.ChunkSeries) (floats, histograms int, err error) {
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
		return 0, 0, sw.writeFrame(queryIndex)
	}
	left := budget
	var frameFloats, frameHistograms int
	for i, c := range s.Chunks {
		typ, ok := chunkTypes[c.Encoding]
		if !ok {
			return floats, histograms, fmt.Errorf("chunk of encoding %s: remote read streams only XOR, histogram and float histogram chunks", c.Encoding)
		}
		chk := prompb.Chunk{MinTimeMs: c.MinTime, MaxTimeMs: c.MaxTime, Type: typ, Data: c.Data}
		b.chunks = append(b.chunks, chk)
		if typ == prompb.Chunk_XOR {
			frameFloats += c.Samples
		} else {
			frameHistograms += c.Samples
		}
		left -= chk.Size()
		if left > 0 && i+1 < len(s.Chunks) {
			continue
		}
		if err := sw.writeFrame(queryIndex); err != nil {
			return floats, histograms, err
		}
		floats, histograms = floats+frameFloats, histograms+frameHistograms
		frameFloats, frameHistograms = 0, 0
		b.chunks = b.chunks[:0]
		left = budget
	}
	return floats, histograms, nil
}

// writeFrame appends the frame of the series in the buffers to what is
// pending, and sends or schedules it.
func (sw *streamWriter) writeFrame(queryIndex int64) error {
	b := sw.bufs
	series := prompb.ChunkedSeries{Labels: b.lbls, Chunks: b.chunks}
	resp := prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{&series}, QueryIndex: queryIndex}
	size := resp.Size()
	hdr := uvarintLen(uint64(size)) + 4

	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.err != nil {
		return sw.err
	}
	start := len(b.pending)
	p := slices.Grow(b.pending, hdr+size)[:start+hdr+size]
	data := p[start+hdr:]
	if _, err := resp.MarshalToSizedBuffer(data); err != nil {
		return fmt.Errorf("encoding ChunkedReadResponse: %w", err)
	}
	appendFrameHeader(p[start:start:start+hdr], data)
	b.pending = p
	if len(p) >= flushBytes {
		return sw.send(true)
	}
	if !sw.armed {
		sw.armed = true
		if sw.timer == nil {
			sw.timer = time.AfterFunc(sw.delay, sw.onTimer)
		} else {
			sw.timer.Reset(sw.delay)
		}
	}
	return nil
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}
