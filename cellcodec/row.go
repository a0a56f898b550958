package cellcodec

import (
	"fmt"
	"slices"
)

// Cells is what the row decoder needs of a row: its cells' qualifiers and
// values, in any order. The storage layer adapts its own cell type to it, so
// that this package need not know the storage interface. AppendRowSamples
// takes it as a type parameter: a slice type passed as an interface value
// would cost an allocation per row.
type Cells interface {
	Len() int
	Cell(i int) (qualifier, value []byte)
}

// AppendRowSamples appends to dst the float samples of one hour row holding
// floats only (a histogram cell is reported as malformed; AppendRowPoints
// reads any row) whose first millisecond is hourMillis, keeping those with mint <= T <= maxt, sorted by
// T without duplicates. The row may hold raw cells, chunk cells or both (late
// samples beside a compacted hour): where both hold a sample for the same T,
// the raw cell wins, being the later write. Chunks of one row overlap only
// while a compaction of it is interrupted, and then agree wherever no raw
// cell overrides them; the first in qualifier order wins. Cells may come in
// any order, though a backend's qualifier order is the cheap case. On error
// dst comes back as it was given.
func AppendRowSamples[C Cells](dst []Sample, hourMillis int64, cells C, mint, maxt int64) ([]Sample, error) {
	start := len(dst)
	sorted := true
	last := int64(0)
	hasChunk := false
	n := cells.Len()
	for i := range n {
		q, v := cells.Cell(i)
		if IsChunkQualifier(q) {
			hasChunk = true
			continue
		}
		off, f, err := DecodeRaw(q, v)
		if err != nil {
			return dst[:start], fmt.Errorf("cell %d of row: %w", i, err)
		}
		t := hourMillis + int64(off)
		if t < mint || t > maxt {
			continue
		}
		if len(dst) > start && t <= last {
			sorted = false
		}
		last = t
		dst = append(dst, Sample{T: t, V: f})
	}
	// Chunk samples go after every raw sample, so that the stable sort below
	// keeps the raw one first among equal times.
	if hasChunk {
		var cr CellChunks
		for i := range n {
			q, v := cells.Cell(i)
			if !IsChunkQualifier(q) {
				continue
			}
			var err error
			for cr.Reset(hourMillis, q, v); cr.Next(); {
				c := cr.At()
				if c.MaxT < mint || c.MinT > maxt {
					continue // its bounds say it has nothing in range
				}
				before := len(dst)
				if dst, err = AppendChunkSamples(dst, c, mint, maxt); err != nil {
					return dst[:start], fmt.Errorf("cell %d of row: %w", i, err)
				}
				if len(dst) > before {
					if before > start && dst[before].T <= last {
						sorted = false
					}
					last = dst[len(dst)-1].T
				}
			}
			if err := cr.Err(); err != nil {
				return dst[:start], fmt.Errorf("cell %d of row: %w", i, err)
			}
		}
	}
	if sorted {
		return dst, nil
	}
	s := dst[start:]
	slices.SortStableFunc(s, compareT)
	return dst[:start+len(slices.CompactFunc(s, sameT))], nil
}

func compareT(a, b Sample) int {
	switch {
	case a.T < b.T:
		return -1
	case a.T > b.T:
		return 1
	}
	return 0
}

func sameT(a, b Sample) bool { return a.T == b.T }
