package opentsdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Prefixes of OpenTSDB's extended columns: the first byte of an odd-length
// qualifier.
const (
	prefixAnnotation = 0x01
	prefixAppend     = 0x05
	prefixHistogram  = 0x06
)

// Bits of a point's qualifier.
const (
	flagFloat  = 0x8  // the value is IEEE 754
	lengthMask = 0x7  // value length - 1
	flagsMask  = 0xF  // flagFloat | lengthMask
	msNibble   = 0xF0 // a first byte with this nibble starts a 4-byte ms qualifier
	// msOffsetMask keeps the millisecond offset of a 4-byte qualifier
	// (bits 6 to 27).
	msOffsetMask = 0x0FFFFFC0
	msShift      = 6
	secShift     = 4
)

// columnKind is what a column holds.
type columnKind uint8

const (
	kindSingle     columnKind = iota // one point, 2- or 4-byte qualifier
	kindCompacted                    // several points, a meta byte at the end
	kindAppend                       // (qualifier, value) pairs in the value
	kindAnnotation                   // a JSON annotation: skipped
	kindHistogram                    // an OpenTSDB histogram: skipped
	kindUnknown                      // another extended type: skipped
)

// errCorrupt marks a column in a layout OpenTSDB never writes.
var errCorrupt = errors.New("corrupt column")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCorrupt, fmt.Sprintf(format, args...))
}

// point is one decoded point of a row: T in milliseconds, and the write it
// came from (the column's HBase timestamp, then its place in the row) so
// that duplicates keep the most recent.
type point struct {
	T   int64
	V   float64
	ver int64
	seq int
}

// classify tells a column's kind from its qualifier alone.
func classify(q []byte) columnKind {
	switch {
	case len(q) == 0:
		return kindUnknown
	case len(q)%2 == 1:
		switch q[0] {
		case prefixAppend:
			return kindAppend
		case prefixAnnotation:
			return kindAnnotation
		case prefixHistogram:
			return kindHistogram
		}
		return kindUnknown
	case len(q) == 2, len(q) == 4 && q[0]&msNibble == msNibble:
		return kindSingle
	}
	return kindCompacted
}

// appendColumn appends the points of one column of a row whose base time
// is base (seconds) to dst. ver is the column's HBase timestamp; seq numbers
// the points in the row, continued from its value. Columns without float
// points (annotations, histograms) append nothing; their kind says why.
func appendColumn(dst []point, base int64, q, v []byte, ver int64, seq int) ([]point, columnKind, error) {
	kind := classify(q)
	var err error
	switch kind {
	case kindSingle:
		dst, err = appendSingle(dst, base, q, v, ver, seq)
	case kindCompacted:
		dst, err = appendCompacted(dst, base, q, v, ver, seq)
	case kindAppend:
		dst, err = appendAppends(dst, base, v, ver, seq)
	}
	return dst, kind, err
}

// appendSingle decodes a one-point column. A 2-byte qualifier's value is
// fixed up as OpenTSDB does before it reads it (Internal.extractDataPoints):
// an 8-byte value flagged as a 4-byte float loses its 4 leading zeros
// (fixFloatingPointValue), and the value's length wins over the flags
// (fixQualifierFlags). A millisecond qualifier's flags must fit its value.
func appendSingle(dst []point, base int64, q, v []byte, ver int64, seq int) ([]point, error) {
	t, flags, _, err := qualifier(q, base)
	if err != nil {
		return dst, err
	}
	if len(q) == 4 && len(v) != valueSize(flags) {
		return dst, corrupt("%d-byte value for a qualifier of %d bytes", len(v), valueSize(flags))
	}
	if flags&flagFloat != 0 && valueSize(flags) == 4 && len(v) == 8 {
		if binary.BigEndian.Uint32(v) != 0 {
			return dst, corrupt("8-byte value flagged as a 4-byte float, its first 4 bytes not zero")
		}
		v = v[4:]
	}
	f, err := value(v, flags&flagFloat != 0)
	if err != nil {
		return dst, err
	}
	return append(dst, point{T: t, V: f, ver: ver, seq: seq}), nil
}

// appendCompacted decodes a compacted column: n qualifiers (2 or 4 bytes
// each), n values of the lengths their flags say, one meta byte.
func appendCompacted(dst []point, base int64, q, v []byte, ver int64, seq int) ([]point, error) {
	vi := 0
	for qi := 0; qi < len(q); seq++ {
		p, qn, vn, err := nextPoint(q[qi:], v[vi:], false, base)
		if err != nil {
			return dst, err
		}
		p.ver, p.seq = ver, seq
		dst = append(dst, p)
		qi, vi = qi+qn, vi+vn
	}
	if vi != len(v)-1 {
		return dst, corrupt("compacted value of %d bytes, its points take %d and the meta byte 1", len(v), vi)
	}
	return dst, nil
}

// appendAppends decodes an append column: (qualifier, value) pairs one
// after another, in the order written (a later pair at the same time
// overrides an earlier one, as AppendDataPoints.parseKeyValue keeps it).
func appendAppends(dst []point, base int64, v []byte, ver int64, seq int) ([]point, error) {
	for i := 0; i < len(v); seq++ {
		p, qn, vn, err := nextPoint(v[i:], nil, true, base)
		if err != nil {
			return dst, err
		}
		p.ver, p.seq = ver, seq
		dst = append(dst, p)
		i += qn + vn
	}
	return dst, nil
}

// nextPoint reads one point of a compacted or append column: its
// qualifier at the start of q, its value at the start of v or, when
// interleaved (an append column), right after the qualifier. qn and vn are
// the bytes they take.
func nextPoint(q, v []byte, interleaved bool, base int64) (p point, qn, vn int, err error) {
	t, flags, qn, err := qualifier(q, base)
	if err != nil {
		return p, 0, 0, err
	}
	if interleaved {
		v = q[qn:]
	}
	vn = valueSize(flags)
	if vn > len(v) {
		return p, 0, 0, corrupt("a %d-byte value cut short", vn)
	}
	f, err := value(v[:vn], flags&flagFloat != 0)
	return point{T: t, V: f}, qn, vn, err
}

// qualifier reads the point qualifier at the start of b: its time (ms),
// flags and size (4 bytes when its first nibble is 0xF, else 2).
func qualifier(b []byte, base int64) (t int64, flags byte, n int, err error) {
	if len(b) >= 1 && b[0]&msNibble == msNibble {
		if len(b) < 4 {
			return 0, 0, 0, corrupt("millisecond qualifier cut short")
		}
		u := binary.BigEndian.Uint32(b)
		return base*1000 + int64(u&msOffsetMask)>>msShift, b[3] & flagsMask, 4, nil
	}
	if len(b) < 2 {
		return 0, 0, 0, corrupt("qualifier cut short")
	}
	off := int64(binary.BigEndian.Uint16(b) >> secShift)
	return (base + off) * 1000, b[1] & flagsMask, 2, nil
}

// valueSize is the value length a point's flags say.
func valueSize(flags byte) int { return int(flags&lengthMask) + 1 }

// value reads a point's value: a signed big-endian integer of 1, 2, 4 or 8
// bytes, or an IEEE 754 float of 4 or 8 bytes.
func value(b []byte, isFloat bool) (float64, error) {
	if isFloat {
		switch len(b) {
		case 4:
			return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
		case 8:
			return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
		}
		return 0, corrupt("float value of %d bytes", len(b))
	}
	switch len(b) {
	case 1:
		return float64(int8(b[0])), nil
	case 2:
		return float64(int16(binary.BigEndian.Uint16(b))), nil
	case 4:
		return float64(int32(binary.BigEndian.Uint32(b))), nil
	case 8:
		return float64(int64(binary.BigEndian.Uint64(b))), nil
	}
	return 0, corrupt("integer value of %d bytes", len(b))
}
