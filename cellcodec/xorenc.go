package cellcodec

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// This file writes Prometheus's XOR chunk format (tsdb/chunkenc's xor.go)
// without chunkenc's appender, which allocates the chunk and the appender,
// grows the chunk as it goes, and writes its bit stream a byte or a bit at a
// time: a streamed read re-encodes stored samples into XOR chunks, so the
// encoder is on its hot path. The output must stay byte for byte what
// chunkenc writes (xorenc_test.go compares the two), because Prometheus
// reads it with chunkenc and a chunk cell's bytes are sent on as they are.
//
// The format, after the 2-byte big-endian sample count:
//   - first sample: varint t, then the 64 bits of v;
//   - second sample: uvarint of t's delta, then v as below;
//   - every later sample: t's delta-of-delta in one of five buckets ('0' for
//     0; '10', '110', '1110' then 14, 17 or 20 bits of two's complement for
//     -(2^(n-1)-1) .. 2^(n-1); '1111' then 64 bits), then v as below;
//   - v XORed with the previous value: '0' when equal; '10' then the bits of
//     the previous window when the XOR's leading and trailing zeros both
//     cover it; else '11', the leading zeros capped at 31 in 5 bits, the
//     significant bits in 6 (64 written as 0), and those bits, which becomes
//     the window.
//
// The stream's last byte is padded with zero bits.

// noWindow is the leading-zero count before any window is set: it exceeds
// every capped count (<= 31), so the reuse test fails without a branch of its
// own, as chunkenc's 0xff does.
const noWindow = 0xff

// maxLeading caps the leading zeros of a window: they are written in 5 bits.
const maxLeading = 31

// AppendXORChunk appends the XOR chunk of samples (T strictly ascending, at
// most MaxChunkSamples of them; the caller checks), byte for byte what
// chunkenc.XORChunk.Bytes() returns after appending the same samples in
// order to a new chunk's appender.
func AppendXORChunk(dst []byte, samples []Sample) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(samples)))
	if len(samples) == 0 {
		return dst
	}
	// The first sample and the second one's delta are whole bytes: they need
	// no bit writer.
	t, v := samples[0].T, math.Float64bits(samples[0].V)
	dst = binary.AppendVarint(dst, t)
	dst = binary.BigEndian.AppendUint64(dst, v)
	if len(samples) == 1 {
		return dst
	}
	// Deltas are unsigned and wrap, as chunkenc's do: timestamps far apart
	// overflow an int64 difference.
	delta := uint64(samples[1].T - t)
	dst = binary.AppendUvarint(dst, delta)
	t = samples[1].T

	// The bit writer's state is three locals, not a struct, so that the
	// compiler keeps it in registers (a struct holding the slice is too big
	// for that).
	var acc uint64
	var n uint
	leading, trailing := uint(noWindow), uint(0)
	for i, s := range samples[1:] {
		// The delta-of-delta's bucket prefix and bits go in one write with
		// the value's control bits below; the second sample has its delta
		// written already, and no delta-of-delta.
		var code uint64
		var codeLen uint
		if i > 0 {
			d := uint64(s.T - t)
			dod := int64(d - delta)
			t, delta = s.T, d
			switch {
			case dod == 0:
				code, codeLen = 0, 1
			// Bucket n holds -(2^(n-1)-1) .. 2^(n-1): one unsigned compare
			// once the range is moved to start at 0.
			case uint64(dod+(1<<13-1)) < 1<<14:
				code, codeLen = 0b10<<14|uint64(dod)&(1<<14-1), 16
			case uint64(dod+(1<<16-1)) < 1<<17:
				code, codeLen = 0b110<<17|uint64(dod)&(1<<17-1), 20
			case uint64(dod+(1<<19-1)) < 1<<20:
				code, codeLen = 0b1110<<20|uint64(dod)&(1<<20-1), 24
			default:
				dst, acc, n = putBits(dst, acc, n, 0b1111, 4)
				dst, acc, n = putBits(dst, acc, n, uint64(dod), 64)
			}
		}
		cur := math.Float64bits(s.V)
		x := v ^ cur
		v = cur
		var sig uint64
		var sigLen uint
		switch lead, trail := min(uint(bits.LeadingZeros64(x)), maxLeading), uint(bits.TrailingZeros64(x)); {
		case x == 0:
			code, codeLen = code<<1, codeLen+1
		case lead >= leading && trail >= trailing:
			code, codeLen = code<<2|0b10, codeLen+2
			sig, sigLen = x>>trailing, 64-leading-trailing
		default:
			leading, trailing = lead, trail
			sig, sigLen = x>>trail, 64-lead-trail
			// sigLen is 1..64 and goes in 6 bits: 64 wraps to 0, as in
			// chunkenc.
			code, codeLen = code<<13|0b11<<11|uint64(lead)<<6|uint64(sigLen)&63, codeLen+13
		}
		dst, acc, n = putBits(dst, acc, n, code, codeLen)
		dst, acc, n = putBits(dst, acc, n, sig, sigLen)
	}
	// The last bits, padded with zeros to a whole byte.
	for left := acc << (64 - n); n > 0; n -= min(n, 8) {
		dst = append(dst, byte(left>>56))
		left <<= 8
	}
	return dst
}

// putBits appends to the bit stream buf, acc, n the nbits (<= 64) low bits
// of v, whose bits above them must be 0. The stream's bits are buf's, most
// significant first, then the n (< 64) low bits of acc; acc's bits above
// them are stale, and every use of acc shifts them out.
func putBits(buf []byte, acc uint64, n uint, v uint64, nbits uint) ([]byte, uint64, uint) {
	if n+nbits < 64 {
		return buf, acc<<(nbits&63) | v, n + nbits
	}
	rest := n + nbits - 64
	// A shift by 64 (n == 0) gives 0 in Go, which is what is wanted.
	return binary.BigEndian.AppendUint64(buf, acc<<(64-n)|v>>rest), v, rest
}
