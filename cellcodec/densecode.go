package cellcodec

import (
	"fmt"
	"math/bits"
)

// A dense cell's streams of unsigned items (time deltas of deltas, value
// deltas; dense.go) are each written in a code fitted to the stream: one
// shape of three and its widths, chosen from the histogram of the items' bit
// lengths as the cheapest, header included. Each item is a prefix naming its
// width, then its bits. A stream that is mostly zeros wants a 1-bit code for
// zero (denseZeroCode); one that is not wants its commonest width at 1 bit of
// prefix (denseSplitCode); one of a single width, or of zeros only, wants no
// prefix at all (denseFixedCode, width 0: the stream costs nothing).
const (
	denseFixedCode = 0 // w[0] bits, no prefix
	denseZeroCode  = 1 // 0: the item 0; 10: w[0] bits; 110: w[1] bits; 111: w[2] bits
	denseSplitCode = 2 // 0: w[0] bits; 10: w[1] bits; 11: w[2] bits
)

const (
	denseShapeBits = 2
	denseWidthBits = 6
)

// denseCode is the code of one stream.
type denseCode struct {
	shape uint8
	w     [3]uint8 // w[0] only for denseFixedCode; ascending
}

// denseHist counts the items of a stream by bit length.
type denseHist [65]int

func (h *denseHist) add(u uint64) { h[bits.Len64(u)]++ }

// headerBits is the size of the code's header in the stream.
func (c denseCode) headerBits() int {
	if c.shape == denseFixedCode {
		return denseShapeBits + denseWidthBits
	}
	return denseShapeBits + 3*denseWidthBits
}

// chooseDenseCode returns the cheapest code for the items counted by h and
// the bits it takes, header included. Every shape puts the widest items at
// the greatest width; the search tries every pair of narrower widths.
func chooseDenseCode(h *denseHist) (denseCode, int) {
	maxw, total := 0, 0
	for w, c := range h {
		if c > 0 {
			maxw = w
		}
		total += c
	}
	// upTo[w] counts the items of at most w bits.
	var upTo [65]int
	for w, sum := 0, 0; w <= maxw; w++ {
		sum += h[w]
		upTo[w] = sum
	}
	best := denseCode{shape: denseFixedCode, w: [3]uint8{uint8(maxw)}}
	bestBits := best.headerBits() + total*maxw
	header := denseCode{shape: denseZeroCode}.headerBits()
	for w1 := 0; w1 <= maxw; w1++ {
		for w2 := w1; w2 <= maxw; w2++ {
			rest := total - upTo[w2]
			split := header + upTo[w1]*(1+w1) + (upTo[w2]-upTo[w1])*(2+w2) + rest*(2+maxw)
			if split < bestBits {
				best, bestBits = denseCode{shape: denseSplitCode, w: [3]uint8{uint8(w1), uint8(w2), uint8(maxw)}}, split
			}
			if w1 == 0 {
				continue // the zero code's 10 would code nothing but zeros too
			}
			zero := header + h[0] + (upTo[w1]-h[0])*(2+w1) + (upTo[w2]-upTo[w1])*(3+w2) + rest*(3+maxw)
			if zero < bestBits {
				best, bestBits = denseCode{shape: denseZeroCode, w: [3]uint8{uint8(w1), uint8(w2), uint8(maxw)}}, zero
			}
		}
	}
	return best, bestBits
}

// appendHeader writes the code's header: its shape, then its widths.
func (c denseCode) appendHeader(w *denseBitWriter) {
	w.write(uint64(c.shape), denseShapeBits)
	n := 3
	if c.shape == denseFixedCode {
		n = 1
	}
	for _, width := range c.w[:n] {
		w.write(uint64(width), denseWidthBits)
	}
}

// readDenseCode reads a code's header and checks it: a known shape, widths
// ascending and at most maxWidth, the zero code's first width not 0.
func readDenseCode(r *denseBitReader, maxWidth int) (denseCode, error) {
	c := denseCode{shape: uint8(r.take(denseShapeBits))}
	switch c.shape {
	case denseFixedCode:
		c.w[0] = uint8(r.take(denseWidthBits))
	case denseZeroCode, denseSplitCode:
		for i := range c.w {
			c.w[i] = uint8(r.take(denseWidthBits))
		}
	default:
		return c, fmt.Errorf("code shape %d unknown", c.shape)
	}
	ascending := c.shape == denseFixedCode || c.w[0] <= c.w[1] && c.w[1] <= c.w[2]
	if !ascending || int(max(c.w[0], c.w[2])) > maxWidth || c.shape == denseZeroCode && c.w[0] == 0 {
		return c, fmt.Errorf("code shape %d: widths %v not ascending, beyond %d bits, or a zero code's first 0", c.shape, c.w, maxWidth)
	}
	return c, nil
}

// minItemBits is the fewest bits an item may take, which bounds how many
// items the bits left can hold.
func (c denseCode) minItemBits() int {
	switch c.shape {
	case denseZeroCode:
		return 1
	case denseSplitCode:
		return 1 + int(c.w[0])
	}
	return int(c.w[0])
}

// appendItem writes u, which fits the code's widest width.
func (c denseCode) appendItem(w *denseBitWriter, u uint64) {
	n := uint(bits.Len64(u))
	w0, w1, w2 := uint(c.w[0]), uint(c.w[1]), uint(c.w[2])
	switch {
	case c.shape == denseFixedCode:
		w.write(u, w0)
	case c.shape == denseZeroCode && u == 0:
		w.write(0, 1)
	case c.shape == denseZeroCode && n <= w0:
		w.write(0b10<<w0|u, 2+w0)
	case c.shape == denseZeroCode && n <= w1:
		w.write(0b110<<w1|u, 3+w1)
	case c.shape == denseZeroCode:
		w.write(0b111<<w2|u, 3+w2)
	case n <= w0:
		w.write(u, 1+w0)
	case n <= w1:
		w.write(0b10<<w1|u, 2+w1)
	default:
		w.write(0b11<<w2|u, 2+w2)
	}
}

// denseTable is a code as a decoder looks it up, by the first three bits
// p of an item: byte p of lens is the length of the items starting with p,
// prefix included, mask[p] the mask of their width. The lengths are in a
// register, as each item's length waits on the one before it; the masks
// are not, as nothing waits on them.
type denseTable struct {
	lens uint64
	mask [8]uint64
	// per is how many items a refill of the reader (56 bits at least)
	// holds for sure; 0 if one may not fit.
	per int
}

func (c denseCode) table() denseTable {
	var t denseTable
	longest := 0
	for p := range t.mask {
		var prefix, width int
		switch {
		case c.shape == denseFixedCode:
			width = int(c.w[0])
		case c.shape == denseZeroCode && p < 0b100:
			prefix = 1
		case c.shape == denseZeroCode && p < 0b110:
			prefix, width = 2, int(c.w[0])
		case c.shape == denseZeroCode:
			prefix, width = 3, int(c.w[p-0b110+1])
		case p < 0b100:
			prefix, width = 1, int(c.w[0])
		case p < 0b110:
			prefix, width = 2, int(c.w[1])
		default:
			prefix, width = 2, int(c.w[2])
		}
		t.lens |= uint64(prefix+width) << (8 * p)
		t.mask[p] = 1<<width - 1
		longest = max(longest, prefix+width)
	}
	t.per = denseRefillBits / max(longest, 1)
	return t
}

// items reads len(dst) items of the code whose table is t into dst.
func (r *denseBitReader) items(dst []uint64, t *denseTable) {
	if t.per == 0 {
		for i := range dst {
			dst[i] = r.item(t)
		}
		return
	}
	// The reader's state in locals: the loop is the decoder's hot spot,
	// and fields in memory would double its time.
	buf, pos, acc, nb, lens, mask := r.buf, r.pos, r.acc, r.nb, t.lens, &t.mask
	for len(dst) > 0 {
		pos, acc, nb = denseRefill(buf, pos, acc, nb)
		run := dst[:min(t.per, len(dst))]
		dst = dst[len(run):]
		for i := range run {
			// The item's n bits, its prefix masked off (n = 0: acc & 0).
			a := acc
			n := uint(lens>>(a>>58&56)) & 0xff
			acc = a << (n & 63)
			nb -= n
			run[i] = a >> (-n & 63) & mask[a>>61]
		}
	}
	r.pos, r.acc, r.nb = pos, acc, nb
}

// item reads one item of any length: a second refill reads those longer
// than the first gave.
func (r *denseBitReader) item(t *denseTable) uint64 {
	r.refill()
	p := r.acc >> 61
	n, w := uint(t.lens>>(8*p))&0xff, uint(bits.Len64(t.mask[p]))
	r.take(n - w)
	return r.take(w)
}
