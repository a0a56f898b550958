// Package cellcodec owns the cell layout of the data table's hour rows
// (DESIGN.md section 2): raw sample cells and compacted chunk cells, how an
// hour is cut into chunks, and the merge of both kinds into the samples of a
// row.
//
// A raw cell holds one sample: its qualifier is the 4-byte big-endian
// millisecond offset within the hour, its cell timestamp the sample time.
// A float's value is the 8 big-endian bytes of the float64 (bit-exact: every
// NaN payload, the staleness marker among them, comes back as written). A
// native histogram's value (integer or float) is never 8 bytes long: a kind
// byte, then every field of the histogram (histraw.go). A float and a
// histogram at the same time are the same cell: the newest write wins.
//
// A chunk cell holds compacted samples of the hour. Its 10-byte qualifier is
// 0x01, the chunk's encoding (a chunkenc.Encoding byte: XOR, histogram or
// float histogram), then the big-endian u32 millisecond offsets
// within the hour of the chunk's first and last samples; its value is the
// chunk exactly as tsdb/chunkenc writes it, header included, which is what
// Prometheus takes in a streamed remote read (a histogram chunk's value
// wraps it: its length before it, the samples' counter-reset hints after
// it, see histhints.go); its cell timestamp is the time
// of its last sample, so retention drops it with its newest sample. A
// chunk's time range is thus known without decoding it, chunk cells sort
// after every raw cell of their row (offsets < 2^24, so raw qualifiers start
// with 0x00), and among themselves by encoding, then by their first sample.
//
// A packed cell (packed.go) holds all the XOR chunks of one run of floats
// of the hour, each with its bounds, so that a series-hour is one cell.
//
// A dense cell (dense.go) holds one run of floats in a code of its own:
// decimal mantissas and times as bit-packed deltas, 0.76 bytes a sample on
// the benchmark set against XOR's 3.03. No chunk Prometheus could take as
// it is, it is read as one chunk of encoding EncDenseFloat whose samples
// AppendChunkSamples decodes; the compactor stores it where it is much
// smaller than the run's XOR chunks.
//
// The compactor turns an hour's samples into chunks run by run: floats
// into XOR chunks of near-equal counts (SamplesPerChunk) or a dense cell,
// one cell a run; integer and float histograms into histogram chunks cut
// where Prometheus's head would cut them and wherever a chunk would not
// give a sample back exactly as written (histchunk.go); a histogram that no
// chunk gives back exactly stays raw.
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
// misread the new one. Version 1: float raw cells and XOR chunk cells.
// Version 2 adds raw histogram cells and histogram and float-histogram
// chunk cells. Version 3 adds packed cells (packed.go), version 4 dense
// cells (dense.go), version 5 fence cells (fence.go). Each reads every older
// table as it is, so an adapter upgrades the recorded version in place,
// after which adapters of an older version refuse the tables rather than
// misread a cell they do not know.
const LayoutVersion = 5

// OldestReadableLayoutVersion is the oldest layout version this one reads
// unchanged and upgrades in place.
const OldestReadableLayoutVersion = 1

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
