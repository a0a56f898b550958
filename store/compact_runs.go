package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/table"
)

// MaxChunkCellBytes bounds the value of a chunk cell the compactor and
// WriteHistory write. HBase refuses a cell over hbase.server.keyvalue.maxsize
// (10 MiB by default), and a refused cell would fail, pass after pass, the
// whole batch of rows it was planned in; a cell is also read whole, into one
// HFile block, however little of it a query wants. At 15 s scrapes an hour's
// cell is a few hundred bytes; only runs of thousands of samples a minute
// (about 120,000 an hour of incompressible values) reach the bound.
const MaxChunkCellBytes = 1 << 20

// addFloatRun plans the cells of a run of float samples of one row: XOR
// chunks, cellcodec.ChunkCount of near-equal counts, in one plain chunk cell
// or, for more than one chunk, one packed cell (cellcodec/packed.go); or,
// unless p.xorOnly, a dense cell (cellcodec/dense.go) where that saves at
// least DenseMinSaving of the XOR cells' bytes. A run of more than
// cellcodec.MaxChunkSamples samples (sub-second scrapes) stays XOR. Chunks
// whose packed cell would exceed MaxChunkCellBytes (p.maxCellBytes in
// tests) go into as many cells as keep each within it, in time order.
func (p *compactPlan) addFloatRun(key []byte, hourMillis int64, pts []cellcodec.Point) error {
	p.samples = p.samples[:0]
	for _, pt := range pts {
		p.samples = append(p.samples, Sample{T: pt.T, V: pt.V})
	}
	n := cellcodec.ChunkCount(len(p.samples))
	clear(p.packed)
	p.packed = p.packed[:0]
	for k := range n {
		part := p.samples[len(p.samples)*k/n : len(p.samples)*(k+1)/n]
		var err error
		if p.xorBuf, err = cellcodec.AppendChunkValue(p.xorBuf[:0], part); err != nil {
			return fmt.Errorf("encode chunk: %w", err)
		}
		p.packed = append(p.packed, cellcodec.Chunk{Encoding: chunkenc.EncXOR, MinT: part[0].T, MaxT: part[len(part)-1].T, Data: bytes.Clone(p.xorBuf)})
	}
	limit := p.cellLimit()
	clear(p.xorCells)
	p.xorCells = p.xorCells[:0]
	xorBytes := 0
	for chunks := p.packed; len(chunks) > 0; {
		k := packCount(chunks, limit)
		c, err := xorCell(hourMillis, chunks[:k])
		if err != nil {
			return err
		}
		p.xorCells = append(p.xorCells, c)
		xorBytes += len(c.Data)
		chunks = chunks[k:]
	}
	if !p.xorOnly && len(p.samples) <= cellcodec.MaxChunkSamples {
		dense, err := cellcodec.AppendDenseValue(nil, hourMillis, p.samples)
		if err != nil {
			return fmt.Errorf("encode dense cell: %w", err)
		}
		if len(dense) <= limit && float64(len(dense)) <= float64(xorBytes)*(1-DenseMinSaving) {
			p.putChunk(key, hourMillis, cellcodec.EncDenseFloat, p.samples[0].T, p.samples[len(p.samples)-1].T, dense)
			return nil
		}
	}
	for _, c := range p.xorCells {
		p.putChunk(key, hourMillis, c.Encoding, c.MinT, c.MaxT, c.Data)
	}
	return nil
}

func (p *compactPlan) cellLimit() int {
	if p.maxCellBytes > 0 {
		return p.maxCellBytes
	}
	return MaxChunkCellBytes
}

// packCount is how many of chunks, from the first, one packed cell of at
// most limit bytes holds: at least one, since a chunk of at most
// cellcodec.SamplesPerChunk samples is far below any limit worth setting.
func packCount(chunks []cellcodec.Chunk, limit int) int {
	size := 0
	for i, c := range chunks {
		// An entry's three uvarints take at most 5 + 4 + 5 bytes: offsets
		// within the hour, a chunk's length well under 2^32.
		size += len(c.Data) + 14
		if size > limit && i > 0 {
			return i
		}
	}
	return len(chunks)
}

// xorCell is the cell of consecutive XOR chunks of a run: a plain chunk
// cell for one, a packed cell for more; its Data is the cell's value.
func xorCell(hourMillis int64, chunks []cellcodec.Chunk) (cellcodec.Chunk, error) {
	c := cellcodec.Chunk{Encoding: chunkenc.EncXOR, MinT: chunks[0].MinT, MaxT: chunks[len(chunks)-1].MaxT, Data: chunks[0].Data}
	if len(chunks) > 1 {
		var err error
		if c.Data, err = cellcodec.AppendPackedValue(nil, hourMillis, chunks); err != nil {
			return c, fmt.Errorf("pack %d chunks: %w", len(chunks), err)
		}
		c.Encoding = cellcodec.EncPackedXOR
	}
	return c, nil
}

// addHistogramRun plans the histogram chunks of a run of histogram samples
// (integer and float mixed) of one row, each bit-exact (see
// cellcodec.NextHistogramChunk); a sample that no chunk gives back exactly
// goes to p.keep.
func (p *compactPlan) addHistogramRun(key []byte, hourMillis int64, pts []cellcodec.Point) {
	clear(p.hists)
	p.hists = p.hists[:0]
	for _, pt := range pts {
		p.hists = append(p.hists, pt.Histogram())
	}
	for hs := p.hists; len(hs) > 0; {
		enc, chunk, hints, n := cellcodec.NextHistogramChunk(hs)
		if n == 0 {
			p.keep = append(p.keep, cellcodec.Point{T: hs[0].T, H: hs[0].H, FH: hs[0].FH})
			hs = hs[1:]
			continue
		}
		p.putChunk(key, hourMillis, enc, hs[0].T, hs[n-1].T, cellcodec.AppendHistogramChunkValue(nil, chunk, hints))
		hs = hs[n:]
	}
}

func (p *compactPlan) putChunk(key []byte, hourMillis int64, enc chunkenc.Encoding, mint, maxt int64, v []byte) {
	q := cellcodec.AppendChunkQualifier(nil, enc, uint32(mint-hourMillis), uint32(maxt-hourMillis))
	p.puts = append(p.puts, table.Cell{Row: key, Family: FamilyData, Qualifier: q, Timestamp: maxt, Value: v})
	p.bytes += len(q) + len(v)
	p.layouts[cellLayout(enc)]++
}

// kept reports whether a raw cell's qualifier is the time of a sample in
// p.keep, and which.
func (p *compactPlan) kept(hourMillis int64, q []byte) (int, bool) {
	if len(p.keep) == 0 || len(q) != cellcodec.RawQualifierLen {
		return 0, false
	}
	t := hourMillis + int64(binary.BigEndian.Uint32(q))
	return slices.BinarySearchFunc(p.keep, t, func(pt cellcodec.Point, t int64) int { return compareInt64(pt.T, t) })
}

// putKeptFromChunks plans FamilyData raw cells for the kept samples that
// FamilyData holds no raw cell of: those that came from an old chunk (which
// goes) or from FamilyRaw (whose cell goes). They stay raw for good, where
// every read takes them.
func (p *compactPlan) putKeptFromChunks(key []byte, hourMillis int64) {
	for i, pt := range p.keep {
		if p.keptRaw[i] {
			continue
		}
		q := cellcodec.AppendRawQualifier(nil, uint32(pt.T-hourMillis))
		var v []byte
		if pt.H != nil {
			v = cellcodec.AppendHistogramValue(nil, pt.H)
		} else {
			v = cellcodec.AppendFloatHistogramValue(nil, pt.FH)
		}
		p.puts = append(p.puts, table.Cell{Row: key, Family: FamilyData, Qualifier: q, Timestamp: pt.T, Value: v})
		p.bytes += len(q) + len(v)
	}
}
