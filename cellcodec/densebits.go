package cellcodec

import "encoding/binary"

// The bit stream of a dense cell (dense.go) is written and read most
// significant bit first through a 64-bit accumulator: a field costs a shift
// and an or, and memory is touched a word at a time rather than a byte.

// denseBitWriter appends bits to dst.
type denseBitWriter struct {
	dst []byte
	acc uint64 // pending bits, the first at bit 63, zeros below them
	n   uint   // pending bits in acc, < 64
}

// write appends the low nb bits of u; nb <= 64 and u < 1<<nb.
func (w *denseBitWriter) write(u uint64, nb uint) {
	free := 64 - w.n
	if nb < free {
		w.acc |= u << (free - nb)
		w.n += nb
		return
	}
	rest := nb - free // bits of u that do not fit the word
	w.acc |= u >> rest
	w.dst = binary.BigEndian.AppendUint64(w.dst, w.acc)
	w.acc, w.n = u<<(64-rest), rest // a shift by 64 gives 0
}

// flush appends the pending bits, the last byte padded with zeros, and
// returns dst.
func (w *denseBitWriter) flush() []byte {
	for ; w.n > 0; w.n -= min(w.n, 8) {
		w.dst = append(w.dst, byte(w.acc>>56))
		w.acc <<= 8
	}
	return w.dst
}

// denseBitReader reads the bits of buf. Past its end it reads zeros, so a
// loop of bounded count needs no check a bit; consumed then tells whether
// it read there.
type denseBitReader struct {
	buf []byte
	pos int    // next byte of buf to load; may pass len(buf)
	acc uint64 // the next bits, the first at bit 63; below the nb valid ones, either zeros or the bits that follow
	nb  uint   // valid bits in acc
}

// denseRefillBits is the fewest valid bits a refill leaves.
const denseRefillBits = 56

// refill loads whole bytes into acc until it holds at least 56 valid bits.
func (r *denseBitReader) refill() {
	r.pos, r.acc, r.nb = denseRefill(r.buf, r.pos, r.acc, r.nb)
}

// denseRefill is refill on a reader's fields held apart, so that a hot loop
// keeps them in registers. It loads a word unconditionally: the bytes of it
// that do not fit are the ones that follow, so or-ing them in again on the
// next refill changes nothing, and a branch on the bit count would be hard
// to predict.
func denseRefill(buf []byte, pos int, acc uint64, nb uint) (int, uint64, uint) {
	if pos+8 <= len(buf) {
		acc |= binary.BigEndian.Uint64(buf[pos:]) >> (nb & 63)
	} else {
		acc |= denseTailWord(buf, pos) >> (nb & 63)
	}
	k := (63 - nb) >> 3 // whole bytes that fit
	return pos + int(k), acc, nb + k<<3
}

// denseTailWord is the word at pos of buf when fewer than 8 bytes are
// left: the missing ones read as zeros.
func denseTailWord(buf []byte, pos int) uint64 {
	var word uint64
	for i := range 8 {
		word <<= 8
		if p := pos + i; p < len(buf) {
			word |= uint64(buf[p])
		}
	}
	return word
}

// take consumes nb <= 56 bits and returns them.
func (r *denseBitReader) take(nb uint) uint64 {
	r.refill()
	u := r.acc >> 1 >> ((63 - nb) & 63)
	r.acc <<= nb & 63
	r.nb -= nb
	return u
}

// consumed is the number of bits read so far.
func (r *denseBitReader) consumed() int { return r.pos*8 - int(r.nb) }
