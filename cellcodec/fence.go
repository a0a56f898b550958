package cellcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A fence cell guards a compacted row against a compactor that read it
// before another folded it. Every fold of a row writes a fresh random value
// into the row's one fence cell, and writes only if the fence still holds
// what it read there: the condition is a single cell (HBase's
// CheckAndMutate takes one), yet any fold in between changes it, whichever
// of the row's cells that fold changed. A condition on a chunk cell would
// miss a fold that left that cell as it was and changed another.
//
// Its qualifier is a chunk qualifier's prefix and encoding byte EncFence,
// with no offsets: it sorts after every raw and chunk qualifier of a row,
// raw decoders skip it as a chunk cell, and CellChunks reads no chunk from
// it. Its value is FenceValueLen opaque bytes.

// EncFence is the encoding byte of the fence cell's qualifier.
const EncFence = 0xFF

// FenceValueLen is the length of a fence cell's value.
const FenceValueLen = 8

var fenceQualifier = []byte{chunkQualifierPrefix, EncFence}

// AppendFenceQualifier appends the fence cell's qualifier.
func AppendFenceQualifier(dst []byte) []byte { return append(dst, fenceQualifier...) }

// IsFenceQualifier reports whether q is the fence cell's qualifier.
func IsFenceQualifier(q []byte) bool { return bytes.Equal(q, fenceQualifier) }

// AppendFenceValue appends the fence value of stamp: a fold's stamp must
// differ from every earlier fold's of the row (a random number does).
func AppendFenceValue(dst []byte, stamp uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, stamp)
}

// checkFence checks a fence cell's value.
func checkFence(v []byte) error {
	if len(v) != FenceValueLen {
		return fmt.Errorf("%w: fence cell of %d bytes, want %d", ErrMalformedCell, len(v), FenceValueLen)
	}
	return nil
}
