package cellcodec

import (
	"fmt"
	"math"
	"sync"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// chunkQualifierPrefix starts every chunk qualifier; raw qualifiers start
// with 0x00, so a row's chunk cells sort after its raw cells.
const chunkQualifierPrefix = 0x01

// chunkEncoding is the encoding of the chunks written now; the qualifier
// carries it so that another encoding (XOR2, histograms) can come later
// without a layout change.
const chunkEncoding = chunkenc.EncXOR

// MaxChunkSamples is the most samples one chunk cell holds: XOR chunks count
// their samples in 16 bits. An hour with more (a sample every 55 ms or less)
// stays raw.
const MaxChunkSamples = math.MaxUint16

// Sample is one float sample; T is in milliseconds since the epoch.
type Sample struct {
	T int64
	V float64
}

// IsChunkQualifier reports whether q is the qualifier of a chunk cell, of any
// encoding.
func IsChunkQualifier(q []byte) bool {
	return len(q) == 2 && q[0] == chunkQualifierPrefix
}

// AppendChunkQualifier appends the qualifier of the chunk cells written now.
func AppendChunkQualifier(dst []byte) []byte {
	return append(dst, chunkQualifierPrefix, byte(chunkEncoding))
}

// AppendChunkValue appends an XOR chunk of samples, which must be sorted by T
// without duplicates, at most MaxChunkSamples of them. The bytes are what
// chunkenc.XORChunk.Bytes returns, so a remote read can pass them on as they
// are.
func AppendChunkValue(dst []byte, samples []Sample) ([]byte, error) {
	if len(samples) > MaxChunkSamples {
		return dst, fmt.Errorf("chunk of %d samples, at most %d fit", len(samples), MaxChunkSamples)
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].T <= samples[i-1].T {
			return dst, fmt.Errorf("chunk samples not strictly ascending in time at %d: %d after %d", i, samples[i].T, samples[i-1].T)
		}
	}
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		return dst, fmt.Errorf("chunk appender: %w", err)
	}
	for _, s := range samples {
		app.Append(0, s.T, s.V)
	}
	return append(dst, c.Bytes()...), nil
}

// iterPool recycles XOR iterators, so that decoding a chunk cell allocates
// nothing once warm. It starts empty: chunkenc makes an iterator only from a
// chunk.
var iterPool sync.Pool

// chunkHeaderLen is the XOR chunk's sample count header.
const chunkHeaderLen = 2

// appendChunkSamples appends the samples of a chunk cell in [mint, maxt]. An
// XOR chunk has no checksum, and chunkenc reads missing trailing bits as
// zeros: a truncated chunk may decode as wrong samples rather than fail. The
// backend's own checksums (HBase's HFile, Pebble's blocks) guard the bytes.
func appendChunkSamples(dst []Sample, qualifier, value []byte, mint, maxt int64) ([]Sample, error) {
	if len(qualifier) != 2 || chunkenc.Encoding(qualifier[1]) != chunkEncoding {
		return dst, fmt.Errorf("%w: unsupported chunk qualifier %x", ErrMalformedCell, qualifier)
	}
	if len(value) < chunkHeaderLen {
		return dst, fmt.Errorf("%w: chunk of %d bytes has no header", ErrMalformedCell, len(value))
	}
	var c chunkenc.XORChunk
	c.Reset(value)
	reuse, _ := iterPool.Get().(chunkenc.Iterator)
	it := c.Iterator(reuse)
	defer iterPool.Put(it)
	prev := int64(math.MinInt64)
	n := 0
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if n > 0 && t <= prev {
			return dst, fmt.Errorf("%w: chunk samples not ascending in time at %d", ErrMalformedCell, n)
		}
		prev = t
		n++
		if t >= mint && t <= maxt {
			dst = append(dst, Sample{T: t, V: v})
		}
	}
	if err := it.Err(); err != nil {
		return dst, fmt.Errorf("%w: decode chunk: %w", ErrMalformedCell, err)
	}
	return dst, nil
}
