package cellcodec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// chunkQualifierPrefix starts every chunk qualifier; raw qualifiers start
// with 0x00, so a row's chunk cells sort after its raw cells.
const chunkQualifierPrefix = 0x01

// ChunkQualifierLen is the length of a chunk cell's qualifier: the prefix,
// the encoding, and the offsets of the chunk's first and last samples.
const ChunkQualifierLen = 10

// MaxChunkSamples is the most samples one chunk holds: XOR chunks count
// their samples in 16 bits.
const MaxChunkSamples = math.MaxUint16

// SamplesPerChunk is the number of samples the compactor aims at per chunk,
// Prometheus's own (tsdb's DefaultSamplesPerChunk): its head cuts a chunk
// once it holds 120 samples, spreading the samples of a chunk range evenly,
// because XOR compression gains next to nothing past ~120 samples while a
// reader must decode a chunk from its start to reach any sample in it. An
// hour of n samples becomes ChunkCount(n) chunks of near-equal counts, so 15
// s scrapes give two chunks an hour, each a chunk Prometheus itself could
// have cut and that a streamed read sends on untouched. The chunks of one run
// share a packed cell (packed.go).
const SamplesPerChunk = 120

// ChunkCount is how many chunks the n samples of one hour are cut into.
func ChunkCount(n int) int {
	return (n + SamplesPerChunk - 1) / SamplesPerChunk
}

// Sample is one float sample; T is in milliseconds since the epoch.
type Sample struct {
	T int64
	V float64
}

// IsChunkQualifier reports whether q is a chunk cell's qualifier, of any
// encoding. It checks the prefix only, so that a malformed chunk qualifier is
// reported by CellChunks rather than taken for a raw cell.
func IsChunkQualifier(q []byte) bool {
	return len(q) > 0 && q[0] == chunkQualifierPrefix
}

// AppendChunkQualifier appends the qualifier of a chunk of encoding enc whose
// first and last samples lie minOffset and maxOffset milliseconds into the
// hour (minOffset <= maxOffset < HourMillis). Qualifiers of one row sort by
// encoding, then by their first sample, after every raw qualifier.
func AppendChunkQualifier(dst []byte, enc chunkenc.Encoding, minOffset, maxOffset uint32) []byte {
	dst = append(dst, chunkQualifierPrefix, byte(enc))
	dst = binary.BigEndian.AppendUint32(dst, minOffset)
	return binary.BigEndian.AppendUint32(dst, maxOffset)
}

// Chunk is a decoded chunk cell: its time bounds come from the qualifier,
// so nothing is decompressed.
type Chunk struct {
	Encoding chunkenc.Encoding
	// MinT and MaxT are the times of the first and last samples, in
	// milliseconds since the epoch.
	MinT, MaxT int64
	// Data is the chunk as chunkenc writes it, header included; it aliases
	// the cell's value.
	Data []byte
	// Hints is a histogram chunk's hints trailer (histhints.go), aliasing
	// the cell's value; empty for an XOR chunk.
	Hints []byte
}

// NumSamples is the sample count from the header of an XOR or histogram
// chunk (not of a dense cell, whose Data is its value).
func (c Chunk) NumSamples() int { return int(binary.BigEndian.Uint16(c.Data)) }

// IsFloat reports whether c holds float samples (an XOR chunk or a dense
// cell), which AppendChunkSamples decodes, rather than histograms.
func (c Chunk) IsFloat() bool { return c.Encoding == chunkenc.EncXOR || c.Encoding == EncDenseFloat }

// chunkHeaderLen is the XOR chunk's sample count header.
const chunkHeaderLen = 2

// decodeChunk reads a plain chunk cell (one chunk; CellChunks reads any) of
// the row whose first millisecond is hourMillis. It checks the shape only,
// in constant time: the qualifier's length, prefix and encoding (XOR,
// histogram or float histogram), the offsets' order and range, and the
// value's header. The chunk's bits are checked when they are decoded
// (AppendChunkSamples).
func decodeChunk(hourMillis int64, qualifier, value []byte) (Chunk, error) {
	q := qualifier
	if len(q) != ChunkQualifierLen || q[0] != chunkQualifierPrefix {
		return Chunk{}, fmt.Errorf("%w: chunk qualifier %x", ErrMalformedCell, q)
	}
	enc := chunkenc.Encoding(q[1])
	if enc != chunkenc.EncXOR && enc != chunkenc.EncHistogram && enc != chunkenc.EncFloatHistogram {
		return Chunk{}, fmt.Errorf("%w: chunk encoding %s not supported", ErrMalformedCell, enc)
	}
	lo, hi := binary.BigEndian.Uint32(q[2:6]), binary.BigEndian.Uint32(q[6:10])
	if lo > hi || hi >= HourMillis {
		return Chunk{}, fmt.Errorf("%w: chunk qualifier %x: offsets out of order or beyond the hour", ErrMalformedCell, q)
	}
	var hints []byte
	if enc != chunkenc.EncXOR {
		var err error
		if value, hints, err = splitHistogramChunkValue(value); err != nil {
			return Chunk{}, err
		}
		if len(value) < histChunkHeaderLen || len(hints) == 0 {
			return Chunk{}, fmt.Errorf("%w: histogram chunk of %d bytes has no header or no hints", ErrMalformedCell, len(value))
		}
	}
	if len(value) < chunkHeaderLen {
		return Chunk{}, fmt.Errorf("%w: chunk of %d bytes has no header", ErrMalformedCell, len(value))
	}
	return Chunk{Encoding: enc, MinT: hourMillis + int64(lo), MaxT: hourMillis + int64(hi), Data: value, Hints: hints}, nil
}

// AppendChunkValue appends an XOR chunk of samples, which must be sorted by T
// without duplicates, at most MaxChunkSamples of them. The bytes are what
// chunkenc.XORChunk.Bytes returns (AppendXORChunk writes them), so a remote
// read can pass them on as they are.
func AppendChunkValue(dst []byte, samples []Sample) ([]byte, error) {
	if len(samples) > MaxChunkSamples {
		return dst, fmt.Errorf("chunk of %d samples, at most %d fit", len(samples), MaxChunkSamples)
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].T <= samples[i-1].T {
			return dst, fmt.Errorf("chunk samples not strictly ascending in time at %d: %d after %d", i, samples[i].T, samples[i-1].T)
		}
	}
	return AppendXORChunk(dst, samples), nil
}

// AppendChunkSamples appends the samples of c, an XOR chunk or a dense cell
// (IsFloat), with mint <= T <= maxt. It
// checks that the samples are strictly ascending and inside [c.MinT,
// c.MaxT]: a chunk that breaks either is malformed, and passing it on would
// send Prometheus a broken series. It allocates nothing but dst's growth.
//
// An XOR chunk has no checksum. AppendXORSamples fails on a chunk cut
// before its last sample (chunkenc's iterator would read zeros there), but a
// chunk whose bits were changed may still decode as wrong samples: the
// backend's own checksums (HBase's HFile, Pebble's blocks) guard the bytes.
func AppendChunkSamples(dst []Sample, c Chunk, mint, maxt int64) ([]Sample, error) {
	if c.Encoding == EncDenseFloat {
		return appendDenseSamples(dst, c.MinT, c.MaxT, c.Data, mint, maxt)
	}
	if c.Encoding != chunkenc.EncXOR {
		return dst, fmt.Errorf("%w: chunk encoding %s not supported", ErrMalformedCell, c.Encoding)
	}
	// Every sample is decoded, so that the bounds are checked on the first
	// and the last whatever the range; those outside it are dropped after.
	start := len(dst)
	dst, err := AppendXORSamples(dst, c.Data, math.MinInt64, math.MaxInt64)
	if err != nil {
		return dst, fmt.Errorf("chunk [%d, %d]: %w", c.MinT, c.MaxT, err)
	}
	got := dst[start:]
	if len(got) > 0 && (got[0].T < c.MinT || got[len(got)-1].T > c.MaxT) {
		return dst[:start], fmt.Errorf("%w: chunk [%d, %d] holds samples in [%d, %d]", ErrMalformedCell, c.MinT, c.MaxT, got[0].T, got[len(got)-1].T)
	}
	return dst[:start+keepInRange(got, mint, maxt)], nil
}

// keepInRange moves the samples of s (strictly ascending in T) with mint <=
// T <= maxt to the front of s and returns how many there are: the range
// filter of the decoders that decode a whole cell or chunk first.
func keepInRange(s []Sample, mint, maxt int64) int {
	if len(s) == 0 || (s[0].T >= mint && s[len(s)-1].T <= maxt) {
		return len(s)
	}
	lo, hi := searchT(s, mint), len(s)
	if maxt < math.MaxInt64 {
		hi = searchT(s, maxt+1)
	}
	if lo >= hi {
		return 0
	}
	return copy(s, s[lo:hi])
}

// searchT is the index of the first of samples (ascending in T) at or after
// t.
func searchT(samples []Sample, t int64) int {
	lo, hi := 0, len(samples)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if samples[mid].T < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
