package store

import (
	"fmt"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/table"
)

// This file is the read path's only contact with the cell layout: everything
// it needs of cellcodec goes through these few functions.

// storedChunk is a compacted chunk of a row: its encoding, the times of its
// first and last samples (from the cell, without decoding) and its bytes,
// aliasing the cell. A chunk cell holds one, or several if packed.
type storedChunk = cellcodec.Chunk

// isChunkCell reports whether a cell is a chunk cell (of any encoding).
func isChunkCell(c *table.Cell) bool { return cellcodec.IsChunkQualifier(c.Qualifier) }

// appendCellChunks checks a chunk cell's shape and appends those of its
// chunks whose bounds reach into [mint, maxt].
func appendCellChunks(dst []storedChunk, hourMillis int64, c *table.Cell, mint, maxt int64) ([]storedChunk, error) {
	var r cellcodec.CellChunks
	for r.Reset(hourMillis, c.Qualifier, c.Value); r.Next(); {
		if ch := r.At(); ch.MaxT >= mint && ch.MinT <= maxt {
			dst = append(dst, ch)
		}
	}
	return dst, r.Err()
}

// decodeRawCell decodes a raw sample cell of the row starting at hourMillis.
func decodeRawCell(hourMillis int64, c *table.Cell) (Sample, error) {
	off, v, err := cellcodec.DecodeRaw(c.Qualifier, c.Value)
	if err != nil {
		return Sample{}, err
	}
	return Sample{T: hourMillis + int64(off), V: v}, nil
}

// appendChunkSamples appends the samples of c in [mint, maxt].
func appendChunkSamples(dst []Sample, c storedChunk, mint, maxt int64) ([]Sample, error) {
	return cellcodec.AppendChunkSamples(dst, c, mint, maxt)
}

// isHistogramCell reports whether a raw cell holds a histogram sample.
func isHistogramCell(c *table.Cell) bool { return len(c.Value) != cellcodec.RawValueLen }

// appendChunkHistograms appends the samples of a histogram chunk in
// [mint, maxt].
func appendChunkHistograms(dst []HistogramSample, c storedChunk, mint, maxt int64) ([]HistogramSample, error) {
	dst, err := cellcodec.AppendChunkHistograms(dst, c, mint, maxt)
	if err != nil {
		return dst, fmt.Errorf("chunk [%d, %d]: %w", c.MinT, c.MaxT, err)
	}
	return dst, nil
}
