package cellcodec

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Histogram chunks are cut bit-exact: every sample read back from a chunk
// cell equals the sample written in every field. chunkenc does not promise
// that by itself: its appender recodes earlier samples when bucket layouts
// differ (inserting empty buckets), its iterator reports hints by position
// (histhints.go keeps the rest beside the chunk), and it returns a stale
// sample as {Sum: StaleNaN} alone. So a chunk is built the way Prometheus's
// head builds one (same kind, no counter reset or layout change, cut at
// chunkenc.TargetBytesPerHistogramChunk once it holds
// chunkenc.MinSamplesPerHistogramChunk, and at SamplesPerChunk samples as
// an XOR chunk; besides, before MaxHistogramChunkBytes), then decoded and
// compared with its
// input, and cut before the first sample that does not come back as it was.
// A sample that comes back wrong even alone (a stale marker with more than
// its Sum) goes into no chunk and stays raw.

// NextHistogramChunk builds the longest histogram chunk starting at
// samples[0], of its kind (integer or float), from a prefix of samples
// (sorted by T, no duplicates), that gives every sample back exactly once
// its hints trailer is applied. It returns the chunk's encoding, its bytes
// (newly allocated, as chunkenc writes them), the hints trailer and how
// many samples it holds; n == 0 means samples[0] fits in no chunk.
func NextHistogramChunk(samples []HistogramSample) (enc chunkenc.Encoding, chunk, hints []byte, n int) {
	n = len(samples)
	var got []histogram.CounterResetHint
	for n > 0 {
		c, k, over := buildHistChunk(samples[:n])
		if over {
			// The chunk grew past its bound with its last sample: build it
			// again without that one.
			n = k - 1
			continue
		}
		if k == 0 {
			break
		}
		var ok int
		ok, got = exactPrefix(c, samples[:k], got[:0])
		if ok == k {
			return c.Encoding(), append([]byte(nil), c.Bytes()...), appendHints(nil, samples[:k], got), k
		}
		// A later sample may have recoded earlier ones: rebuild without it.
		n = ok
	}
	return chunkenc.EncNone, nil, nil, 0
}

// MaxHistogramChunkBytes bounds a histogram chunk: a chunk of more than one
// sample is cut before the sample that would take it past this. Prometheus's
// head puts at least chunkenc.MinSamplesPerHistogramChunk samples in a
// chunk whatever their size, and ten histograms of tens of thousands of
// buckets come to megabytes, more than a cell should hold (HBase refuses a
// cell over 10 MiB).
const MaxHistogramChunkBytes = 256 << 10

// buildHistChunk appends samples to a new chunk as far as Prometheus's head
// would without cutting, and returns the chunk and how many it took. over
// reports that the n-th sample took the chunk past MaxHistogramChunkBytes:
// the chunk is to be built again of the first n-1. A panic in chunkenc (it
// trusts its input) leaves the samples out.
func buildHistChunk(samples []HistogramSample) (c chunkenc.Chunk, n int, over bool) {
	defer func() {
		if recover() != nil {
			c, n, over = nil, 0, false
		}
	}()
	isFloat := samples[0].FH != nil
	if isFloat {
		c = chunkenc.NewFloatHistogramChunk()
	} else {
		c = chunkenc.NewHistogramChunk()
	}
	app, err := c.Appender()
	if err != nil {
		return nil, 0, false
	}
	for i, s := range samples {
		if (s.FH != nil) != isFloat || i == SamplesPerChunk {
			return c, i, false
		}
		if i >= chunkenc.MinSamplesPerHistogramChunk && len(c.Bytes()) >= chunkenc.TargetBytesPerHistogramChunk {
			return c, i, false
		}
		var newChunk chunkenc.Chunk
		if isFloat {
			newChunk, _, app, err = app.AppendFloatHistogram(nil, 0, s.T, s.FH.Copy(), true)
		} else {
			newChunk, _, app, err = app.AppendHistogram(nil, 0, s.T, s.H.Copy(), true)
		}
		if err != nil || newChunk != nil {
			return c, i, false // a counter reset or layout change: Prometheus cuts here
		}
		if i > 0 && len(c.Bytes()) > MaxHistogramChunkBytes {
			return c, i + 1, true
		}
	}
	return c, len(samples), false
}

// exactPrefix decodes c and returns how many of its first samples equal
// want in every field but the hint, with a hint that may be kept beside the
// chunk (hintStorable); got collects the hints the chunk reads.
func exactPrefix(c chunkenc.Chunk, want []HistogramSample, got []histogram.CounterResetHint) (int, []histogram.CounterResetHint) {
	it := c.Iterator(nil)
	for i := range want {
		var s HistogramSample
		switch it.Next() {
		case chunkenc.ValHistogram:
			s.T, s.H = it.AtHistogram(nil)
		case chunkenc.ValFloatHistogram:
			s.T, s.FH = it.AtFloatHistogram(nil)
		default:
			return i, got
		}
		h := s.hint()
		if !hintStorable(want[i].hint(), h, i == 0) {
			return i, got
		}
		s.setHint(want[i].hint())
		if !SameHistogramSample(s, want[i]) {
			return i, got
		}
		got = append(got, h)
	}
	return len(want), got
}

// AppendChunkHistograms appends the samples of a histogram or float
// histogram chunk with mint <= T <= maxt, checked as AppendChunkSamples
// checks an XOR chunk's. Each histogram is newly allocated.
func AppendChunkHistograms(dst []HistogramSample, c Chunk, mint, maxt int64) ([]HistogramSample, error) {
	var ch chunkenc.Chunk
	switch c.Encoding {
	case chunkenc.EncHistogram:
		ch = chunkenc.NewHistogramChunk()
	case chunkenc.EncFloatHistogram:
		ch = chunkenc.NewFloatHistogramChunk()
	default:
		return dst, fmt.Errorf("%w: chunk encoding %s is no histogram encoding", ErrMalformedCell, c.Encoding)
	}
	if err := checkHistLayout(c.Data); err != nil {
		return dst, fmt.Errorf("histogram chunk [%d, %d]: %w", c.MinT, c.MaxT, err)
	}
	ch.Reset(c.Data)
	start := len(dst)
	dst, err := appendHistIter(dst, ch.Iterator(nil), c)
	if err != nil {
		return dst, err
	}
	if err := applyHints(dst[start:], c.Hints); err != nil {
		clear(dst[start:])
		return dst[:start], fmt.Errorf("histogram chunk [%d, %d]: %w", c.MinT, c.MaxT, err)
	}
	// Trim to the range only now: hint indexes count from the chunk's first.
	keep := dst[:start]
	for _, s := range dst[start:] {
		if s.T >= mint && s.T <= maxt {
			keep = append(keep, s)
		}
	}
	clear(dst[len(keep):])
	return keep, nil
}

// histChunkHeaderLen is the sample count and the counter-reset header.
const histChunkHeaderLen = 3

func appendHistIter(dst []HistogramSample, it chunkenc.Iterator, c Chunk) (out []HistogramSample, err error) {
	start := len(dst)
	defer func() {
		// chunkenc panics on some corrupt chunks (a schema it cannot reduce).
		if r := recover(); r != nil {
			out, err = dst[:start], fmt.Errorf("%w: histogram chunk [%d, %d]: %v", ErrMalformedCell, c.MinT, c.MaxT, r)
		}
	}()
	prev := int64(-1 << 63)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		var s HistogramSample
		switch vt {
		case chunkenc.ValHistogram:
			s.T, s.H = it.AtHistogram(nil)
		case chunkenc.ValFloatHistogram:
			s.T, s.FH = it.AtFloatHistogram(nil)
		default:
			return dst[:start], fmt.Errorf("%w: histogram chunk yields a %s", ErrMalformedCell, vt)
		}
		if s.T <= prev || s.T < c.MinT || s.T > c.MaxT {
			return dst[:start], fmt.Errorf("%w: histogram chunk [%d, %d]: sample at %d out of order or out of its bounds", ErrMalformedCell, c.MinT, c.MaxT, s.T)
		}
		prev = s.T
		dst = append(dst, s)
	}
	if err := it.Err(); err != nil {
		return dst[:start], fmt.Errorf("%w: histogram chunk [%d, %d]: %w", ErrMalformedCell, c.MinT, c.MaxT, err)
	}
	return dst, nil
}

// String formats the sample for messages.
func (s HistogramSample) String() string {
	if s.H != nil {
		return fmt.Sprintf("%d:%s", s.T, s.H)
	}
	if s.FH != nil {
		return fmt.Sprintf("%d:%s", s.T, s.FH)
	}
	return fmt.Sprintf("%d:<none>", s.T)
}

// OneHistogramChunk encodes s alone in a chunk of its kind, for a sample
// that NextHistogramChunk leaves out but that must travel as a chunk (a
// streamed read): the chunk format cannot say all of it, so it reads back
// as Prometheus's own TSDB would return it (the hint as the chunk header
// gives it, a stale marker as its Sum alone).
func OneHistogramChunk(s HistogramSample) (enc chunkenc.Encoding, data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			enc, data, err = chunkenc.EncNone, nil, fmt.Errorf("encode histogram at %d: %v", s.T, r)
		}
	}()
	var c chunkenc.Chunk
	if s.FH != nil {
		c = chunkenc.NewFloatHistogramChunk()
	} else {
		c = chunkenc.NewHistogramChunk()
	}
	app, err := c.Appender()
	if err != nil {
		return chunkenc.EncNone, nil, err
	}
	if s.FH != nil {
		_, _, _, err = app.AppendFloatHistogram(nil, 0, s.T, s.FH.Copy(), true)
	} else {
		_, _, _, err = app.AppendHistogram(nil, 0, s.T, s.H.Copy(), true)
	}
	if err != nil {
		return chunkenc.EncNone, nil, fmt.Errorf("encode histogram at %d: %w", s.T, err)
	}
	return c.Encoding(), append([]byte(nil), c.Bytes()...), nil
}
