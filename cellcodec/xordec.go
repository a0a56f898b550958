package cellcodec

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// This file reads Prometheus's XOR chunk format (xorenc.go describes it)
// without chunkenc's iterator, which is called through an interface once per
// sample, refills and checks its bit buffer at every field, and stores its
// state in memory. Here the stream is read by peeking 64 bits at a bit
// position, the position is checked against the stream's end once per
// sample, and a run of samples with the same delta and value ('00' each, as
// constant series and regular scrapes write) is read from one peek.
//
// It reads every chunk the way chunkenc's iterator does (xordec_test.go
// compares the two on arbitrary bytes), corrupt ones included, where the
// iterator's uint8 window arithmetic shows: a window's trailing zeros are
// 64 - leading zeros - significant bits, wrapping when negative, and a
// shift by 64 or more XORs in nothing. One difference: a chunk whose
// samples need bits past its end fails here, while the iterator often reads
// zeros or stale bits there and fails on nothing (its readBits's count
// underflows).

// AppendXORSamples appends the samples with mint <= T <= maxt of data, an
// XOR chunk as chunkenc writes it, header included. It fails, appending
// nothing, on a chunk cut before the last sample its header counts and on
// samples not strictly ascending in time, as AppendChunkSamples does; that
// they lie inside the chunk's bounds is the caller's to check.
func AppendXORSamples(dst []Sample, data []byte, mint, maxt int64) ([]Sample, error) {
	if len(data) < chunkHeaderLen {
		return dst, fmt.Errorf("%w: chunk of %d bytes has no header", ErrMalformedCell, len(data))
	}
	total := int(binary.BigEndian.Uint16(data))
	if total == 0 {
		return dst, nil
	}
	start := len(dst)
	// The first sample and the second one's delta are whole bytes.
	t, n := binary.Varint(data[chunkHeaderLen:])
	if n <= 0 || len(data) < chunkHeaderLen+n+8 {
		return dst, fmt.Errorf("%w: XOR chunk of %d bytes: first sample cut or overlong", ErrMalformedCell, len(data))
	}
	pos := chunkHeaderLen + n
	v := binary.BigEndian.Uint64(data[pos:])
	pos += 8
	if t >= mint && t <= maxt {
		dst = append(dst, Sample{T: t, V: math.Float64frombits(v)})
	}
	if total == 1 {
		return dst, nil
	}
	delta, n := binary.Uvarint(data[pos:])
	if n <= 0 {
		return dst[:start], fmt.Errorf("%w: XOR chunk of %d bytes: second delta cut or overlong", ErrMalformedCell, len(data))
	}
	bit, end := uint(pos+n)*8, uint(len(data))*8

	// Room for every sample up front, so that the loop holds no call to grow
	// dst: the spills around one cost more than the decoding. The first two
	// samples take 97 bits at least and every later one 2, so a corrupt
	// count cannot make this reserve more than 4 samples a byte, nor the
	// loop (which reads 32 samples past the end at most) write beyond it.
	dst = slices.Grow(dst, min(total-1, 4*len(data)))
	out, kept := dst[len(dst):cap(dst)], 0
	// Up to fence, a sample and the 9 bytes of its last peek lie inside
	// data; from there on the chunk is read from a zero-padded copy, where
	// they lie inside the copy as long as the sample starts before the end.
	var tail [tailLen + (maxSampleBits+7)/8 + 9]byte
	fence := uint(0)
	if len(data) > tailLen {
		fence = uint(len(data)-tailLen) * 8
	}
	// chunkenc's iterator starts with a window of 64 bits.
	sig, shift := uint(64), uint(0)
	i := 1 // samples read
	for {
		for ; i < total && bit < fence; i++ {
			prev := t
			// One peek holds the delta-of-delta (unless it takes 64 bits)
			// and the value's control bits; the significant bits get their
			// own.
			w, k := peek(data, bit), uint(0)
			if i > 1 {
				var dod int64
				switch {
				case w>>62 == 0:
					// A run of '00' samples, as many as w holds and the
					// chunk counts. Those past the end (zeros of the copy)
					// fail at the end test.
					run := min(uint(bits.LeadingZeros64(w))/2, uint(total-i))
					bit += 2 * run
					for ; ; i++ {
						if t += int64(delta); t <= prev {
							return dst[:start], fmt.Errorf("%w: XOR chunk: sample %d at %d not after %d", ErrMalformedCell, i+1, t, prev)
						}
						if t >= mint && t <= maxt {
							out[kept] = Sample{T: t, V: math.Float64frombits(v)}
							kept++
						}
						if run--; run == 0 {
							break
						}
						prev = t
					}
					continue
				case w>>63 == 0:
					k = 1
				case w>>62 == 0b10:
					dod, k = dodBits(w>>48, 14), 16
				case w>>61 == 0b110:
					dod, k = dodBits(w>>44, 17), 20
				case w>>60 == 0b1110:
					dod, k = dodBits(w>>40, 20), 24
				default:
					dod = int64(peek(data, bit+4))
					bit += 68
					w = peek(data, bit)
				}
				delta = uint64(int64(delta) + dod)
			}
			t += int64(delta)

			switch c := w << k; {
			case c>>63 == 0:
				bit += k + 1
			case c>>62 == 0b10:
				v ^= peek(data, bit+k+2) >> (64 - sig) << shift
				bit += k + 2 + sig
			default:
				lead := uint(c>>57) & 31
				if sig = uint(c>>51) & 63; sig == 0 {
					sig = 64 // 64 significant bits are written as 0.
				}
				// Negative in chunkenc's uint8, huge here: either way
				// a shift that XORs in nothing.
				shift = 64 - lead - sig
				v ^= peek(data, bit+k+13) >> (64 - sig) << shift
				bit += k + 13 + sig
			}
			if t <= prev {
				return dst[:start], fmt.Errorf("%w: XOR chunk: sample %d at %d not after %d", ErrMalformedCell, i+1, t, prev)
			}
			if t >= mint && t <= maxt {
				out[kept] = Sample{T: t, V: math.Float64frombits(v)}
				kept++
			}
		}
		if bit > end {
			return dst[:start], fmt.Errorf("%w: XOR chunk of %d samples ends inside sample %d", ErrMalformedCell, total, i)
		}
		if i == total {
			return dst[:len(dst)+kept], nil
		}
		// At fence: on with the copy, where the loop stops at the end.
		from := bit >> 3
		copy(tail[:], data[from:])
		data, bit, end = tail[:], bit-from*8, end-from*8
		fence = end + 1
	}
}

// tailLen is how close to its end a chunk is read from a zero-padded copy.
const tailLen = 32

// maxSampleBits is the longest sample: a 64-bit delta-of-delta and a new
// window of 64 significant bits.
const maxSampleBits = 4 + 64 + 2 + 11 + 64

// dodBits is the delta-of-delta in the n low bits of w: chunkenc reads
// 2^(n-1) as positive and every larger pattern as negative.
func dodBits(w uint64, n uint) int64 {
	w &= 1<<n - 1
	if w > 1<<(n-1) {
		w -= 1 << n
	}
	return int64(w)
}

// peek returns the 64 bits of data from bit on; data must hold 9 bytes from
// bit>>3 on.
func peek(data []byte, bit uint) uint64 {
	b := data[bit>>3:][:9]
	s := bit & 7
	return binary.BigEndian.Uint64(b)<<s | uint64(b[8])>>(8-s)
}
