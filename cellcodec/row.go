package cellcodec

import (
	"fmt"
	"slices"

	"github.com/prom-hbase/prom-hbase/table"
)

// AppendRowSamples appends to dst the samples of one hour row whose first
// millisecond is hourMillis, keeping those with mint <= T <= maxt, sorted by
// T without duplicates. The row may hold raw cells, chunk cells or both (a
// compaction racing late writes): where both hold a sample for the same T,
// the raw cell wins, being the later write. Cells may come in any order,
// though a backend's qualifier order is the cheap case. On error dst comes
// back as it was given.
func AppendRowSamples(dst []Sample, hourMillis int64, cells []table.Cell, mint, maxt int64) ([]Sample, error) {
	start := len(dst)
	sorted := true
	last := int64(0)
	hasChunk := false
	for i := range cells {
		c := &cells[i]
		if IsChunkQualifier(c.Qualifier) {
			hasChunk = true
			continue
		}
		off, v, err := DecodeRaw(c.Qualifier, c.Value)
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
		dst = append(dst, Sample{T: t, V: v})
	}
	// Chunk samples go after every raw sample, so that the stable sort below
	// keeps the raw one first among equal times.
	if hasChunk {
		for i := range cells {
			c := &cells[i]
			if !IsChunkQualifier(c.Qualifier) {
				continue
			}
			n := len(dst)
			var err error
			dst, err = appendChunkSamples(dst, c.Qualifier, c.Value, mint, maxt)
			if err != nil {
				return dst[:start], fmt.Errorf("cell %d of row: %w", i, err)
			}
			if len(dst) > n {
				if n > start && dst[n].T <= last {
					sorted = false
				}
				last = dst[len(dst)-1].T
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
