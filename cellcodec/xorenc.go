package cellcodec

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
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
	dst = binary.AppendVarint(dst, samples[0].T)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(samples[0].V))
	if len(samples) == 1 {
		return dst
	}
	// Deltas are unsigned and wrap, as chunkenc's do: timestamps far apart
	// overflow an int64 difference.
	dst = binary.AppendUvarint(dst, uint64(samples[1].T-samples[0].T))

	// Room for the longest stream these samples can make (maxSampleBits
	// each, xordec.go) is reserved once, so that the loop neither checks
	// capacity nor calls anything: a call in it (append's growslice) made
	// the compiler keep the loop's state on the stack. Whole words are
	// stored only once all their bits are known, so nothing past the
	// returned length is written.
	pos := len(dst)
	out := slices.Grow(dst, (len(samples)*maxSampleBits+7)/8)
	out = out[:cap(out)]
	// The bit stream is out[:pos], then the n (< 64) low bits of acc.
	var acc uint64
	var n uint
	// The window is kept as the bits outside it (all of them before the
	// first one is set), so that the reuse test is one AND: an XOR has no
	// bits outside the window exactly when its leading and trailing zeros
	// cover the window's (the window's leading count is at most 31, so
	// comparing it with the XOR's capped count, as chunkenc does, is the
	// same). trailing and sigLen are what the reuse writes.
	notWindow := ^uint64(0)
	var trailing, sigLen uint
	if x := math.Float64bits(samples[1].V) ^ math.Float64bits(samples[0].V); x == 0 {
		n = 1
	} else {
		acc, trailing, sigLen, notWindow = newWindow(x)
		n = 13
		pos, acc, n = putBits(out, pos, acc, n, x>>trailing, sigLen)
	}
	// s[2] is the sample to write: the delta-of-delta is read from the
	// samples rather than carried in variables, which leaves the compiler
	// more registers for the writer's state.
	for s := samples; len(s) >= 3; s = s[1:] {
		x := math.Float64bits(s[2].V) ^ math.Float64bits(s[1].V)
		dod := uint64(s[2].T) - 2*uint64(s[1].T) + uint64(s[0].T)
		if dod|x == 0 {
			// Repeats ('00' each) come in runs, all of a constant series'
			// samples and most of a gauge's: a run is written at once.
			run := uint(1)
			for len(s) >= 4 && s[3].T-s[2].T == s[2].T-s[1].T && math.Float64bits(s[3].V) == math.Float64bits(s[2].V) {
				s = s[1:]
				run++
			}
			pos, acc, n = putZeros(out, pos, acc, n, 2*run)
			continue
		}
		// code collects the delta-of-delta's bits and the value's control
		// bits, then takes the significant bits too when they fit, so that
		// a sample is most often a single write.
		var code uint64
		var codeLen uint
		switch {
		case dod == 0:
			code, codeLen = 0, 1
		// Bucket n holds -(2^(n-1)-1) .. 2^(n-1): one unsigned compare
		// once the range is moved to start at 0.
		case dod+(1<<13-1) < 1<<14:
			code, codeLen = 0b10<<14|dod&(1<<14-1), 16
		case dod+(1<<16-1) < 1<<17:
			code, codeLen = 0b110<<17|dod&(1<<17-1), 20
		case dod+(1<<19-1) < 1<<20:
			code, codeLen = 0b1110<<20|dod&(1<<20-1), 24
		default:
			pos, acc, n = putBits(out, pos, acc, n, 0b1111, 4)
			pos, acc, n = putBits(out, pos, acc, n, dod, 64)
		}
		// Branches, not conditional moves, though which case comes next
		// follows no pattern: computing both and selecting chains every
		// sample to the window before it, which measured slower.
		var sig uint64
		var sigBits uint
		switch {
		case x == 0:
			code, codeLen = code<<1, codeLen+1
		case x&notWindow == 0:
			code, codeLen = code<<2|0b10, codeLen+2
			sig, sigBits = x>>(trailing&63), sigLen
		default:
			var ctrl uint64
			ctrl, trailing, sigLen, notWindow = newWindow(x)
			code, codeLen = code<<13|ctrl, codeLen+13
			sig, sigBits = x>>(trailing&63), sigLen
		}
		// codeLen >= 1, so sigBits < 64 when both fit.
		if codeLen+sigBits <= 64 {
			pos, acc, n = putBits(out, pos, acc, n, code<<(sigBits&63)|sig, codeLen+sigBits)
		} else {
			pos, acc, n = putBits(out, pos, acc, n, code, codeLen)
			pos, acc, n = putBits(out, pos, acc, n, sig, sigBits)
		}
	}
	// The last bits, padded with zeros to a whole byte.
	for left := acc << (64 - n); n > 0; n -= min(n, 8) {
		out[pos] = byte(left >> 56)
		pos++
		left <<= 8
	}
	return out[:pos]
}

// newWindow returns the window of x (non-zero), an XOR of two values that
// the previous window does not cover: the 13 control bits that announce it
// ('11', the leading zeros capped at maxLeading in 5 bits, the significant
// bits in 6), its trailing zeros and significant bits, and the bits outside
// it. It is small enough to be inlined into the encoder's loop.
func newWindow(x uint64) (ctrl uint64, trailing, sigLen uint, notWindow uint64) {
	lead := min(uint(bits.LeadingZeros64(x)), maxLeading)
	trailing = uint(bits.TrailingZeros64(x))
	sigLen = 64 - lead - trailing
	// sigLen is 1..64 and goes in 6 bits: 64 wraps to 0, as in chunkenc.
	ctrl = 0b11<<11 | uint64(lead)<<6 | uint64(sigLen)&63
	return ctrl, trailing, sigLen, ^(^uint64(0) >> lead & -(x & -x))
}

// putBits appends to the bit stream out[:pos], acc, n the nbits (1..64) low
// bits of v, whose bits above them must be 0. The stream's bits are out's,
// most significant first, then the n (< 64) low bits of acc; acc's bits
// above them are stale, and every use of acc shifts them out. out must have
// room for the word that fills up.
func putBits(out []byte, pos int, acc uint64, n uint, v uint64, nbits uint) (int, uint64, uint) {
	if n+nbits < 64 {
		return pos, acc<<(nbits&63) | v, n + nbits
	}
	rest := n + nbits - 64
	// The shifts are masked so that the compiler does not guard them for
	// counts of 64 and more; acc's n bits are moved up in two steps, because
	// n == 0 must shift them (stale) all out.
	binary.BigEndian.PutUint64(out[pos:pos+8], acc<<1<<((63-n)&63)|v>>(rest&63))
	return pos + 8, v, rest
}

// putZeros appends nbits zero bits to the bit stream out[:pos], acc, n, as
// putBits does.
func putZeros(out []byte, pos int, acc uint64, n uint, nbits uint) (int, uint64, uint) {
	if n+nbits < 64 {
		return pos, acc << (nbits & 63), n + nbits
	}
	binary.BigEndian.PutUint64(out[pos:pos+8], acc<<1<<((63-n)&63))
	pos += 8
	for nbits -= 64 - n; nbits >= 64; nbits -= 64 {
		binary.BigEndian.PutUint64(out[pos:pos+8], 0)
		pos += 8
	}
	return pos, 0, nbits
}
