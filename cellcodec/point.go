package cellcodec

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
)

// Point is one sample of a row of any kind: a float (H and FH nil), an
// integer histogram (H set) or a float histogram (FH set). A series may
// switch kinds from one sample to the next.
type Point struct {
	T  int64
	V  float64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// IsHistogram reports whether p is a histogram sample of either kind.
func (p Point) IsHistogram() bool { return p.H != nil || p.FH != nil }

// Histogram returns p as a HistogramSample.
func (p Point) Histogram() HistogramSample { return HistogramSample{T: p.T, H: p.H, FH: p.FH} }

// DecodeRawPoint decodes a raw cell of either kind into a point of the row
// whose first millisecond is hourMillis.
func DecodeRawPoint(hourMillis int64, qualifier, value []byte) (Point, error) {
	if len(value) == RawValueLen {
		off, v, err := DecodeRaw(qualifier, value)
		return Point{T: hourMillis + int64(off), V: v}, err
	}
	if len(qualifier) != RawQualifierLen {
		return Point{}, fmt.Errorf("%w: raw qualifier of %d bytes, want %d", ErrMalformedCell, len(qualifier), RawQualifierLen)
	}
	off := uint32(qualifier[0])<<24 | uint32(qualifier[1])<<16 | uint32(qualifier[2])<<8 | uint32(qualifier[3])
	if off >= HourMillis {
		return Point{}, fmt.Errorf("%w: raw offset %d ms beyond the hour", ErrMalformedCell, off)
	}
	h, fh, err := DecodeHistogramValue(value)
	if err != nil {
		return Point{}, err
	}
	return Point{T: hourMillis + int64(off), H: h, FH: fh}, nil
}

// AppendRowPoints is AppendRowSamples for rows that may hold histograms:
// it appends the points of the row with mint <= T <= maxt, sorted by T
// without duplicates, a raw cell winning over a chunk sample of the same T
// (the later write) and, among chunks, the first in qualifier order. On
// error dst comes back as it was given.
func AppendRowPoints[C Cells](dst []Point, hourMillis int64, cells C, mint, maxt int64) ([]Point, error) {
	start := len(dst)
	n := cells.Len()
	for i := range n {
		q, v := cells.Cell(i)
		if IsChunkQualifier(q) {
			continue
		}
		p, err := DecodeRawPoint(hourMillis, q, v)
		if err != nil {
			return dst[:start], fmt.Errorf("cell %d of row: %w", i, err)
		}
		if p.T >= mint && p.T <= maxt {
			dst = append(dst, p)
		}
	}
	// Chunk samples go after every raw one, so that the stable sort below
	// keeps the raw one first among equal times.
	var (
		fs []Sample
		hs []HistogramSample
		cr CellChunks
	)
	for i := range n {
		q, v := cells.Cell(i)
		if !IsChunkQualifier(q) {
			continue
		}
		var err error
		for cr.Reset(hourMillis, q, v); err == nil && cr.Next(); {
			c := cr.At()
			if c.MaxT < mint || c.MinT > maxt {
				continue
			}
			if c.IsFloat() {
				fs, err = AppendChunkSamples(fs[:0], c, mint, maxt)
				for _, s := range fs {
					dst = append(dst, Point{T: s.T, V: s.V})
				}
			} else {
				hs, err = AppendChunkHistograms(hs[:0], c, mint, maxt)
				for _, s := range hs {
					dst = append(dst, Point{T: s.T, H: s.H, FH: s.FH})
				}
			}
		}
		if err == nil {
			err = cr.Err()
		}
		if err != nil {
			return dst[:start], fmt.Errorf("cell %d of row: %w", i, err)
		}
	}
	s := dst[start:]
	slices.SortStableFunc(s, func(a, b Point) int { return compareT(Sample{T: a.T}, Sample{T: b.T}) })
	return dst[:start+len(slices.CompactFunc(s, func(a, b Point) bool { return a.T == b.T }))], nil
}

// staleNaNBits is Prometheus's staleness marker (value.StaleNaN).
const staleNaNBits = 0x7ff0000000000002

// IsStaleMarker reports whether a histogram sample is a staleness marker.
func (s HistogramSample) IsStaleMarker() bool {
	switch {
	case s.H != nil:
		return math.Float64bits(s.H.Sum) == staleNaNBits
	case s.FH != nil:
		return math.Float64bits(s.FH.Sum) == staleNaNBits
	}
	return false
}
