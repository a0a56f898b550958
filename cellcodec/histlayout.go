package cellcodec

import (
	"encoding/binary"
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
)

// chunkenc's histogram iterator sizes its bucket slices from the span
// lengths in a chunk's layout before it reads a bucket: a corrupt length
// makes it allocate gigabytes. checkHistLayout reads the layout first (the
// format of chunkenc's histogram_meta.go: zero threshold, schema, positive
// and negative spans, custom bounds for schema -53, varbit-coded) and refuses
// a chunk whose buckets could not all be in it: every bucket of the first
// sample takes at least one bit, so a layout may not promise more buckets
// than the chunk has bits left.

// bitReader reads a chunk's bits, most significant first.
type bitReader struct {
	b   []byte
	pos int // in bits
}

func (r *bitReader) left() int { return len(r.b)*8 - r.pos }

func (r *bitReader) bits(n int) (uint64, error) {
	if n > r.left() {
		return 0, fmt.Errorf("%w: histogram chunk layout ends after %d bits", ErrMalformedCell, r.pos)
	}
	var v uint64
	for range n {
		v = v<<1 | uint64(r.b[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return v, nil
}

// varbitSizes are the payload widths of chunkenc's varbit prefixes 10,
// 110, ..., 11111110; 11111111 is followed by 64 bits.
var varbitSizes = [...]int{3, 6, 9, 12, 18, 25, 56, 64}

// varbit reads a varbit-coded integer's payload (zero for prefix 0), the
// sign left to the caller.
func (r *bitReader) varbit() (v uint64, size int, err error) {
	ones := 0
	for ones < 8 {
		b, err := r.bits(1)
		if err != nil {
			return 0, 0, err
		}
		if b == 0 {
			break
		}
		ones++
	}
	if ones == 0 {
		return 0, 0, nil
	}
	size = varbitSizes[ones-1]
	v, err = r.bits(size)
	return v, size, err
}

func (r *bitReader) varbitInt() (int64, error) {
	v, size, err := r.varbit()
	if err != nil || size == 0 || size == 64 {
		return int64(v), err
	}
	if v > 1<<(size-1) {
		v -= 1 << size
	}
	return int64(v), nil
}

// checkHistLayout checks the layout of a histogram or float histogram
// chunk (data includes the 3-byte header).
func checkHistLayout(data []byte) error {
	if len(data) < histChunkHeaderLen {
		return fmt.Errorf("%w: histogram chunk of %d bytes has no header", ErrMalformedCell, len(data))
	}
	if binary.BigEndian.Uint16(data) == 0 {
		return nil // no sample: the layout is never read
	}
	r := &bitReader{b: data[histChunkHeaderLen:]}
	zt, err := r.bits(8)
	if err == nil && zt == 255 {
		_, err = r.bits(64)
	}
	if err != nil {
		return err
	}
	schema, err := r.varbitInt()
	if err != nil {
		return err
	}
	var buckets uint64
	for range 2 { // positive, then negative spans
		n, err := r.count()
		if err != nil {
			return err
		}
		for range n {
			length, _, err := r.varbit()
			if err != nil {
				return err
			}
			if _, err := r.varbitInt(); err != nil { // offset
				return err
			}
			buckets += length
			if buckets > uint64(r.left()) {
				return fmt.Errorf("%w: histogram chunk layout has more buckets than the chunk has bits", ErrMalformedCell)
			}
		}
	}
	if histogram.IsCustomBucketsSchema(int32(schema)) {
		n, err := r.count()
		if err != nil {
			return err
		}
		for range n {
			b, _, err := r.varbit()
			if err == nil && b == 0 {
				_, err = r.bits(64)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// count reads a varbit count and checks it against the bits left: each
// item it counts takes at least one.
func (r *bitReader) count() (uint64, error) {
	n, _, err := r.varbit()
	if err != nil {
		return 0, err
	}
	if n > uint64(r.left()) {
		return 0, fmt.Errorf("%w: histogram chunk layout counts %d items in %d bits", ErrMalformedCell, n, r.left())
	}
	return n, nil
}
