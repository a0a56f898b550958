// Package cellcodec owns the cell layout of the data table's hour rows
// (DESIGN.md section 2): raw sample cells and compacted chunk cells, how an
// hour is cut into chunks, and the merge of both kinds into the samples of a
// row.
//
// A raw cell holds one sample: its qualifier is the 4-byte big-endian
// millisecond offset within the hour, its value the 8 big-endian bytes of the
// float64 (bit-exact: every NaN payload, the staleness marker among them,
// comes back as written), its cell timestamp the sample time.
//
// A chunk cell holds compacted samples of the hour. Its 10-byte qualifier is
// 0x01, the chunk's encoding (a chunkenc.Encoding byte: XOR today, room for
// histogram chunks beside it), then the big-endian u32 millisecond offsets
// within the hour of the chunk's first and last samples; its value is the
// chunk exactly as tsdb/chunkenc writes it, header included, which is what
// Prometheus takes in a streamed remote read; its cell timestamp is the time
// of its last sample, so retention drops it with its newest sample. A
// chunk's time range is thus known without decoding it, chunk cells sort
// after every raw cell of their row (offsets < 2^24, so raw qualifiers start
// with 0x00), and among themselves by their first sample.
//
// It must not know row keys, UIDs, series, nor any backend.
package cellcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// LayoutVersion is the version of the cell layout, recorded by the store in
// its schema row; it changes whenever a reader of the old layout would
// misread the new one. Chunk cells came with version 1 still, as no store
// wrote one before their final layout; an adapter built before them reports
// a row holding one as malformed, so every adapter sharing the tables is
// upgraded before any runs the compactor.
const LayoutVersion = 1

const (
	// RawQualifierLen is the length of a raw cell's qualifier.
	RawQualifierLen = 4
	// RawValueLen is the length of a raw cell's value.
	RawValueLen = 8
	// HourMillis is the span of a row; raw offsets are below it.
	HourMillis = 3600 * 1000
)

// ErrMalformedCell marks a cell that does not fit the layout.
var ErrMalformedCell = errors.New("malformed cell")

// AppendRawQualifier appends the qualifier of a raw cell for a sample at
// offsetMillis (< HourMillis) into its hour.
func AppendRawQualifier(dst []byte, offsetMillis uint32) []byte {
	return binary.BigEndian.AppendUint32(dst, offsetMillis)
}

// AppendRawValue appends the value of a raw cell: v's IEEE-754 bits,
// big-endian, untouched (NaN payloads included).
func AppendRawValue(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

// IsRawQualifier reports whether q has the shape of a raw cell's qualifier.
func IsRawQualifier(q []byte) bool {
	return len(q) == RawQualifierLen && q[0] == 0
}

// DecodeRaw decodes a raw cell. It checks the lengths and that the offset
// lies within an hour.
func DecodeRaw(qualifier, value []byte) (offsetMillis uint32, v float64, err error) {
	if len(qualifier) != RawQualifierLen {
		return 0, 0, fmt.Errorf("%w: raw qualifier of %d bytes, want %d", ErrMalformedCell, len(qualifier), RawQualifierLen)
	}
	if len(value) != RawValueLen {
		return 0, 0, fmt.Errorf("%w: raw value of %d bytes, want %d", ErrMalformedCell, len(value), RawValueLen)
	}
	offsetMillis = binary.BigEndian.Uint32(qualifier)
	if offsetMillis >= HourMillis {
		return 0, 0, fmt.Errorf("%w: raw offset %d ms beyond the hour", ErrMalformedCell, offsetMillis)
	}
	return offsetMillis, math.Float64frombits(binary.BigEndian.Uint64(value)), nil
}
