package cellcodec

import (
	"encoding/binary"
	"fmt"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// A packed cell holds the XOR chunks of one run of float samples of an hour
// row, each still cut as Prometheus cuts (SamplesPerChunk), so that a
// series-hour costs the backend one cell however many chunks it holds; a
// writer that bounds its cells' size (HBase refuses cells over 10 MiB by
// default) puts a longer run into several packed cells of consecutive
// chunks, which a row holds side by side as it holds plain chunk cells. Its
// cost is per cell: at 15 s scrapes (two chunks an hour) one cell an hour
// read 26-29 % more samples a second over a day a query and took 4.4 % off
// the data table (BENCHMARKS.md).
//
// Its qualifier is a chunk qualifier of encoding EncPackedXOR whose offsets
// bound the whole run. Its value is an entry per chunk, in time order:
//
//	uvarint gap     the chunk's first offset minus the least it may have:
//	                the qualifier's first offset for the first entry (so 0),
//	                the previous entry's last offset + 1 after that
//	uvarint span    the chunk's last offset minus its first
//	uvarint length  of the chunk's bytes
//	the chunk, exactly as chunkenc.XORChunk.Bytes returns it
//
// and the last entry's last offset is the qualifier's. A reader thus has
// every chunk's bounds without decoding it, and sends each on untouched.
// The encoding byte is 0x80 | chunkenc.EncXOR, leaving room for packed
// histogram chunks beside it; a build that predates packed cells refuses the
// encoding rather than misread it.

// EncPackedXOR is the encoding byte of a packed cell's qualifier.
const EncPackedXOR = chunkenc.Encoding(0x80 | chunkenc.EncXOR)

// CellChunks reads the chunks of one chunk cell: the one a plain chunk cell
// holds, each of a packed cell's, or a dense cell as one chunk of encoding
// EncDenseFloat (dense.go), with Next, At and Err. Shapes are
// checked in constant time per chunk: the qualifier, the offsets' order and
// range, each chunk's header; the bits when they are decoded. The zero value
// holds nothing; Reset aims it at a cell.
type CellChunks struct {
	hourMillis int64
	rest       []byte // a packed cell's entries not read yet
	bound      uint64 // least offset the next packed entry may start at
	last       uint32 // the qualifier's last offset
	pending    bool   // a plain cell's chunk, decoded by Reset, not yet returned
	started    bool   // a packed entry has been read
	cur        Chunk
	err        error
}

// Reset aims r at the chunk cell (qualifier q, value v) of the row whose
// first millisecond is hourMillis.
func (r *CellChunks) Reset(hourMillis int64, q, v []byte) {
	*r = CellChunks{hourMillis: hourMillis}
	if IsFenceQualifier(q) {
		_, r.err = fenceCount(v) // no chunk: the row's fence (fence.go)
		return
	}
	var enc chunkenc.Encoding // EncNone for a qualifier of no chunk cell: decodeChunk says why
	if len(q) == ChunkQualifierLen && q[0] == chunkQualifierPrefix {
		enc = chunkenc.Encoding(q[1])
	}
	if enc != EncPackedXOR && enc != EncDenseFloat {
		r.cur, r.err = decodeChunk(hourMillis, q, v)
		r.pending = r.err == nil
		return
	}
	lo, hi := binary.BigEndian.Uint32(q[2:6]), binary.BigEndian.Uint32(q[6:10])
	if lo > hi || hi >= HourMillis {
		r.err = fmt.Errorf("%w: chunk qualifier %x: offsets out of order or beyond the hour", ErrMalformedCell, q)
		return
	}
	if len(v) == 0 {
		r.err = fmt.Errorf("%w: chunk cell %x holds nothing", ErrMalformedCell, q)
		return
	}
	if enc == EncDenseFloat {
		// One chunk, its samples decoded by AppendChunkSamples: a dense
		// cell is no chunk Prometheus could take as it is.
		r.cur = Chunk{Encoding: EncDenseFloat, MinT: hourMillis + int64(lo), MaxT: hourMillis + int64(hi), Data: v}
		r.pending = true
		return
	}
	r.rest, r.bound, r.last = v, uint64(lo), hi
}

// Next moves to the cell's next chunk; false at the end or on error.
func (r *CellChunks) Next() bool {
	if r.pending {
		r.pending = false
		return true
	}
	if r.err != nil || len(r.rest) == 0 {
		return false
	}
	if err := r.nextPacked(); err != nil {
		r.err, r.rest = err, nil
		return false
	}
	return true
}

func (r *CellChunks) nextPacked() error {
	gap, n := binary.Uvarint(r.rest)
	if n <= 0 || (!r.started && gap != 0) {
		return fmt.Errorf("%w: packed chunk entry: bad gap", ErrMalformedCell)
	}
	r.rest = r.rest[n:]
	span, n := binary.Uvarint(r.rest)
	if n <= 0 {
		return fmt.Errorf("%w: packed chunk entry: bad span", ErrMalformedCell)
	}
	r.rest = r.rest[n:]
	size, n := binary.Uvarint(r.rest)
	if n <= 0 || size < chunkHeaderLen || size > uint64(len(r.rest)-n) {
		return fmt.Errorf("%w: packed chunk entry: bad length", ErrMalformedCell)
	}
	r.rest = r.rest[n:]
	// bound is at most HourMillis and the terms are clamped at 2^32, so the
	// sums cannot wrap, and a clamped term still fails the comparison with
	// the qualifier's last offset (below HourMillis).
	lo := r.bound + min(gap, 1<<32)
	hi := lo + min(span, 1<<32)
	if hi > uint64(r.last) || (len(r.rest) == int(size) && hi != uint64(r.last)) {
		return fmt.Errorf("%w: packed chunk entry [%d, %d] outside the cell's bounds (last %d)", ErrMalformedCell, lo, hi, r.last)
	}
	r.cur = Chunk{Encoding: chunkenc.EncXOR, MinT: r.hourMillis + int64(lo), MaxT: r.hourMillis + int64(hi), Data: r.rest[:size:size]}
	r.rest, r.bound, r.started = r.rest[size:], hi+1, true
	return nil
}

// At is the current chunk; its Data aliases the cell's value.
func (r *CellChunks) At() Chunk { return r.cur }

// Err is what stopped Next early, wrapping ErrMalformedCell.
func (r *CellChunks) Err() error { return r.err }

// AppendCellChunks appends the chunks of a chunk cell to dst; on error dst
// comes back as it was given.
func AppendCellChunks(dst []Chunk, hourMillis int64, q, v []byte) ([]Chunk, error) {
	start := len(dst)
	var r CellChunks
	r.Reset(hourMillis, q, v)
	for r.Next() {
		dst = append(dst, r.At())
	}
	if r.err != nil {
		return dst[:start], r.err
	}
	return dst, nil
}

// AppendPackedValue appends the value of a packed cell holding chunks: XOR
// chunks of the row whose first millisecond is hourMillis, in time order and
// not overlapping. Its qualifier's offsets are those of chunks[0].MinT and
// of the last chunk's MaxT.
func AppendPackedValue(dst []byte, hourMillis int64, chunks []Chunk) ([]byte, error) {
	if len(chunks) == 0 {
		return dst, fmt.Errorf("packed chunk cell of no chunk")
	}
	bound := chunks[0].MinT
	if bound < hourMillis {
		return dst, fmt.Errorf("packed chunk 0 starts at %d, before the hour %d", bound, hourMillis)
	}
	for i, c := range chunks {
		if c.Encoding != chunkenc.EncXOR || len(c.Data) < chunkHeaderLen {
			return dst, fmt.Errorf("packed chunk %d: encoding %s, %d bytes: only XOR chunks pack", i, c.Encoding, len(c.Data))
		}
		if c.MinT < bound || c.MaxT < c.MinT || c.MaxT >= hourMillis+HourMillis {
			return dst, fmt.Errorf("packed chunk %d [%d, %d]: overlaps the one before it or leaves the hour", i, c.MinT, c.MaxT)
		}
		dst = binary.AppendUvarint(dst, uint64(c.MinT-bound))
		dst = binary.AppendUvarint(dst, uint64(c.MaxT-c.MinT))
		dst = binary.AppendUvarint(dst, uint64(len(c.Data)))
		dst = append(dst, c.Data...)
		bound = c.MaxT + 1
	}
	return dst, nil
}
