package cellcodec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Raw histogram values (layout version 2). The value of a raw histogram
// cell is, in this order:
//
//	kind      1 byte: chunkenc.EncHistogram (integer) or EncFloatHistogram
//	hint      1 byte: the CounterResetHint
//	schema    zigzag varint
//	zero thr. 8 bytes, float64 bits big-endian
//	sum       8 bytes, float64 bits (the stale NaN and any payload kept)
//	count     uvarint (integer) or 8 float64 bytes (float)
//	zero cnt  uvarint (integer) or 8 float64 bytes (float)
//	spans     positive then negative: uvarint n, n x (varint offset, uvarint length)
//	buckets   positive then negative: uvarint n, n x (varint delta | 8 float64 bytes)
//	custom    uvarint n, n x 8 float64 bytes (the custom bucket bounds)
//
// It is at least 26 bytes long, so never RawValueLen: the length alone tells
// a histogram cell from a float one, and both share the raw qualifier, so a
// float and a histogram written at one time are one cell, newest write wins.

// minHistValueLen is the shortest raw histogram value: every count zero.
const minHistValueLen = 2 + 1 + 8 + 8 + 1 + 1 + 2 + 2 + 1

// IsHistogramValue reports whether a raw cell's value holds a histogram
// rather than a float. It checks the length and kind byte only.
func IsHistogramValue(v []byte) bool {
	return len(v) >= minHistValueLen && (v[0] == byte(chunkenc.EncHistogram) || v[0] == byte(chunkenc.EncFloatHistogram))
}

// AppendHistogramValue appends the raw value of an integer histogram.
func AppendHistogramValue(dst []byte, h *histogram.Histogram) []byte {
	dst = appendHistHeader(dst, chunkenc.EncHistogram, h.CounterResetHint, h.Schema, h.ZeroThreshold, h.Sum)
	dst = binary.AppendUvarint(dst, h.Count)
	dst = binary.AppendUvarint(dst, h.ZeroCount)
	dst = appendSpans(appendSpans(dst, h.PositiveSpans), h.NegativeSpans)
	for _, bs := range [2][]int64{h.PositiveBuckets, h.NegativeBuckets} {
		dst = binary.AppendUvarint(dst, uint64(len(bs)))
		for _, b := range bs {
			dst = binary.AppendVarint(dst, b)
		}
	}
	return appendFloats(dst, h.CustomValues)
}

// AppendFloatHistogramValue appends the raw value of a float histogram.
func AppendFloatHistogramValue(dst []byte, fh *histogram.FloatHistogram) []byte {
	dst = appendHistHeader(dst, chunkenc.EncFloatHistogram, fh.CounterResetHint, fh.Schema, fh.ZeroThreshold, fh.Sum)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(fh.Count))
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(fh.ZeroCount))
	dst = appendSpans(appendSpans(dst, fh.PositiveSpans), fh.NegativeSpans)
	dst = appendFloats(dst, fh.PositiveBuckets)
	dst = appendFloats(dst, fh.NegativeBuckets)
	return appendFloats(dst, fh.CustomValues)
}

func appendHistHeader(dst []byte, kind chunkenc.Encoding, hint histogram.CounterResetHint, schema int32, zt, sum float64) []byte {
	dst = append(dst, byte(kind), byte(hint))
	dst = binary.AppendVarint(dst, int64(schema))
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(zt))
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(sum))
}

func appendSpans(dst []byte, spans []histogram.Span) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for _, s := range spans {
		dst = binary.AppendVarint(dst, int64(s.Offset))
		dst = binary.AppendUvarint(dst, uint64(s.Length))
	}
	return dst
}

func appendFloats(dst []byte, fs []float64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(fs)))
	for _, f := range fs {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
	}
	return dst
}

// DecodeHistogramValue decodes a raw histogram value into exactly one of h
// and fh, newly allocated (empty slices come back nil). It checks the shape
// a chunk appender relies on: known kind and hint, a schema Prometheus
// knows, span lengths adding up to the bucket counts, custom values only
// with the custom-bucket schema, and no trailing bytes.
func DecodeHistogramValue(v []byte) (h *histogram.Histogram, fh *histogram.FloatHistogram, err error) {
	if !IsHistogramValue(v) {
		return nil, nil, fmt.Errorf("%w: raw histogram value of %d bytes, kind %x", ErrMalformedCell, len(v), firstByte(v))
	}
	d := histDecoder{b: v[2:]}
	kind, hint := chunkenc.Encoding(v[0]), histogram.CounterResetHint(v[1])
	schema := d.varint()
	zt, sum := d.float(), d.float()
	if kind == chunkenc.EncHistogram {
		h = &histogram.Histogram{CounterResetHint: hint, Schema: int32(schema), ZeroThreshold: zt, Sum: sum}
		h.Count, h.ZeroCount = d.uvarint(), d.uvarint()
		h.PositiveSpans, h.NegativeSpans = d.spans(), d.spans()
		h.PositiveBuckets, h.NegativeBuckets = d.ints(), d.ints()
		h.CustomValues = d.floats()
	} else {
		fh = &histogram.FloatHistogram{CounterResetHint: hint, Schema: int32(schema), ZeroThreshold: zt, Sum: sum}
		fh.Count, fh.ZeroCount = d.float(), d.float()
		fh.PositiveSpans, fh.NegativeSpans = d.spans(), d.spans()
		fh.PositiveBuckets, fh.NegativeBuckets = d.floats(), d.floats()
		fh.CustomValues = d.floats()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err == nil {
		d.err = checkHistShape(hint, schema, h, fh)
	}
	if d.err != nil {
		return nil, nil, fmt.Errorf("%w: raw histogram value: %w", ErrMalformedCell, d.err)
	}
	return h, fh, nil
}

func firstByte(v []byte) int {
	if len(v) == 0 {
		return -1
	}
	return int(v[0])
}
