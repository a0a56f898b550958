package cellcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A fence cell guards a compacted row against a compactor that read it
// before another folded it. Every fold of a row writes the row's one fence
// cell, and writes only if the fence still holds what it read there: the
// condition is a single cell (HBase's CheckAndMutate takes one), yet any
// fold in between changes it, whichever of the row's cells that fold
// changed. A condition on a chunk cell would miss a fold that left that
// cell as it was and changed another.
//
// Its qualifier is a chunk qualifier's prefix and encoding byte EncFence,
// with no offsets: it sorts after every raw and chunk qualifier of a row,
// raw decoders skip it as a chunk cell, and CellChunks reads no chunk from
// it. Its value counts the row's folds, as a uvarint: a fold writes one
// more than it read (1 where there was none). Only the fold whose
// condition held moves the count from n, so it never comes back to a
// value a stale compactor read, and a count of one byte (the first 127
// folds) keeps the cell small.

// EncFence is the encoding byte of the fence cell's qualifier.
const EncFence = 0xFF

var fenceQualifier = []byte{chunkQualifierPrefix, EncFence}

// AppendFenceQualifier appends the fence cell's qualifier.
func AppendFenceQualifier(dst []byte) []byte { return append(dst, fenceQualifier...) }

// IsFenceQualifier reports whether q is the fence cell's qualifier.
func IsFenceQualifier(q []byte) bool { return bytes.Equal(q, fenceQualifier) }

// AppendNextFence appends the value a fold writes into a fence that held
// prev (nil: the row had none).
func AppendNextFence(dst, prev []byte) ([]byte, error) {
	n := uint64(0)
	if prev != nil {
		var err error
		if n, err = fenceCount(prev); err != nil {
			return dst, err
		}
	}
	return binary.AppendUvarint(dst, n+1), nil
}

// fenceCount decodes a fence cell's value.
func fenceCount(v []byte) (uint64, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || k != len(v) || n == 0 || n == 1<<64-1 {
		return 0, fmt.Errorf("%w: fence cell value %x", ErrMalformedCell, v)
	}
	return n, nil
}
