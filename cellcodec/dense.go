package cellcodec

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// A dense cell holds the float samples of one run of a series-hour, as a
// packed cell does, in a code of its own. Prometheus's XOR spends 3.7-6.4
// bytes a sample on values with two decimals (CPU seconds, load averages):
// their float64 bits share little from one sample to the next. As integer
// mantissas at one decimal exponent, their deltas over their GCD bit-packed
// in widths fitted to each cell, the benchmark set takes 0.76 bytes a sample
// rather than 3.03 (intCounter 0.53, floatCounter 1.44, intGauge 0.52,
// floatGauge 0.55; TestDenseKindSizes). A dense cell is no chunk
// Prometheus could take as it is: the compactor keeps whichever of the two
// cells is smaller.
//
// Its qualifier is AppendChunkQualifier(nil, EncDenseFloat, lo, hi), lo and
// hi the offsets within the hour of its first and last samples; the first
// time T[0] is thus the hour + lo, the last the hour + hi. Its value:
//
//	uvarint n-1          the sample count n: 1 <= n <= MaxChunkSamples, n <= hi-lo+1
//	uvarint d1           if n >= 3: T[1]-T[0] in ms, 1 <= d1 <= hi-lo (n = 2: hi-lo)
//	uvarint x            the exceptions, x <= n: samples whose value is no mantissa
//	x times, by position:
//	  uvarint gap        the position minus the one before it minus 1 (the first: the position); < n
//	  8 bytes            the value's IEEE-754 bits, big-endian
//	if k = n-x >= 1, the mantissas M[0..k-1] of the other samples, in order:
//	  1 byte             bits 0-4: the exponent e <= 22; bit 7: the deltas are coded from their
//	                     least (FOR), not zigzag, only if k >= 2; bits 5-6: 0
//	  uvarint zz(M[0])   zz(x) = x<<1 ^ x>>63, the zigzag code
//	  if k >= 2:
//	    uvarint g        1 <= g < 2^54: the deltas M[j]-M[j-1] are multiples of it (their GCD)
//	    uvarint zz(min)  if FOR: the least delta over g
//	the bit stream, each byte's most significant bit first:
//	  if n >= 3: the time code, 2 + 6 or 2 + 18 bits (below), widths <= 23
//	  if k >= 2: the value code, widths <= 55
//	  if n >= 3: n-2 time items, i = 2..n-1: zz(T[i] - 2 T[i-1] + T[i-2])
//	  if k >= 2: k-1 value items, j = 1..k-1: zz((M[j]-M[j-1])/g), or in FOR (M[j]-M[j-1])/g - min
//	  zero bits to the end of the last byte; nothing after it
//
// The value of a sample that is no exception is float64(M[j]) / 10^e, an
// IEEE-754 division, j its rank among those samples (densedecimal.go). The
// times strictly ascend and the last is the hour + hi.
//
// A code (densecode.go) is 2 bits of shape, then 6-bit widths; each item is
// a prefix, then that many bits of the item, most significant first:
//
//	shape 0, w:         no prefix, w bits (w = 0: every item is 0 and costs nothing)
//	shape 1, w1 w2 w3:  0: the item 0; 10: w1 bits; 110: w2 bits; 111: w3 bits (1 <= w1 <= w2 <= w3)
//	shape 2, w1 w2 w3:  0: w1 bits; 10: w2 bits; 11: w3 bits (w1 <= w2 <= w3)
//
// shape 3 is no code.

// EncDenseFloat is the encoding byte of a dense cell's chunk qualifier.
const EncDenseFloat = chunkenc.Encoding(0x84)

const (
	// denseTimeWidth bounds the time items: deltas lie in [1, HourMillis),
	// so deltas of deltas within +-2^22, zigzag coded below 2^23.
	denseTimeWidth = 23
	// denseValueWidth bounds the value items: mantissas lie within +-2^53,
	// so deltas within +-2^54, zigzag coded (or less their least) below 2^55.
	denseValueWidth = 55
	// denseExceptionMinLen is the least an exception entry takes.
	denseExceptionMinLen = 1 + 8
	denseForFlag         = 0x80
	denseExpMask         = 0x1f
)

// denseZigzag maps small magnitudes of either sign to small codes: 0, -1,
// 1, -2 to 0, 1, 2, 3.
func denseZigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

func denseUnzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// AppendDenseValue appends the value of a dense cell holding samples of the
// hour row starting at hourMillis: 1..MaxChunkSamples samples, T strictly
// ascending, all in [hourMillis, hourMillis+HourMillis). The cell's
// qualifier is AppendChunkQualifier(nil, EncDenseFloat, first offset, last
// offset): the value does not repeat them.
func AppendDenseValue(dst []byte, hourMillis int64, samples []Sample) ([]byte, error) {
	n := len(samples)
	if n == 0 || n > MaxChunkSamples {
		return dst, fmt.Errorf("dense cell of %d samples, want 1 to %d", n, MaxChunkSamples)
	}
	if samples[0].T < hourMillis || samples[n-1].T >= hourMillis+HourMillis {
		return dst, fmt.Errorf("dense cell samples [%d, %d] leave the hour at %d", samples[0].T, samples[n-1].T, hourMillis)
	}
	for i := 1; i < n; i++ {
		if samples[i].T <= samples[i-1].T {
			return dst, fmt.Errorf("dense cell samples not strictly ascending in time at %d: %d after %d", i, samples[i].T, samples[i-1].T)
		}
	}
	exps, mants, k, e := denseMantissas(samples)

	dst = binary.AppendUvarint(dst, uint64(n-1))
	if n >= 3 {
		dst = binary.AppendUvarint(dst, uint64(samples[1].T-samples[0].T))
	}
	dst = binary.AppendUvarint(dst, uint64(n-k))
	next := 0 // least position of the next exception
	for i, x := range exps {
		if x < 0 {
			dst = binary.AppendUvarint(dst, uint64(i-next))
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(samples[i].V))
			next = i + 1
		}
	}

	var (
		vcode  denseCode
		vfor   bool
		g, low int64
	)
	if k >= 1 {
		vcode, vfor, g, low = chooseDenseDeltas(mants[:k])
		mode := byte(e)
		if vfor {
			mode |= denseForFlag
		}
		dst = append(dst, mode)
		dst = binary.AppendUvarint(dst, denseZigzag(mants[0]))
		if k >= 2 {
			dst = binary.AppendUvarint(dst, uint64(g))
			if vfor {
				dst = binary.AppendUvarint(dst, denseZigzag(low))
			}
		}
	}

	w := denseBitWriter{dst: dst}
	var tcode denseCode
	if n >= 3 {
		var h denseHist
		for i := 2; i < n; i++ {
			h.add(denseZigzag(samples[i].T - 2*samples[i-1].T + samples[i-2].T))
		}
		tcode, _ = chooseDenseCode(&h)
		tcode.appendHeader(&w)
	}
	if k >= 2 {
		vcode.appendHeader(&w)
	}
	for i := 2; i < n; i++ {
		tcode.appendItem(&w, denseZigzag(samples[i].T-2*samples[i-1].T+samples[i-2].T))
	}
	for _, d := range mants[min(1, k):k] {
		if vfor {
			vcode.appendItem(&w, uint64(d/g-low))
		} else {
			vcode.appendItem(&w, denseZigzag(d/g))
		}
	}
	return w.flush(), nil
}

// denseMantissas returns the mantissas of the values of samples at the
// cell's exponent e, the k of them in mants[:k], and marks the exceptions
// with exps[i] < 0.
func denseMantissas(samples []Sample) (exps []int8, mants []int64, k, e int) {
	exps, mants = make([]int8, len(samples)), make([]int64, len(samples))
	for i, s := range samples {
		m, e, ok := denseMinExp(s.V)
		exps[i], mants[i] = int8(e), m
		if !ok {
			exps[i] = -1
		}
	}
	e = denseExponent(exps, mants)
	for i, s := range samples {
		if x := int(exps[i]); x >= 0 && x <= e {
			// Checked again at e, as the decoder computes it.
			if m, ok := denseScale(mants[i], e-x); ok && math.Float64bits(denseDecimal(m, e)) == math.Float64bits(s.V) {
				mants[k] = m
				k++
				continue
			}
		}
		exps[i] = -1
	}
	return exps, mants, k, e
}

// chooseDenseDeltas turns the mantissas ms (k >= 1) into their deltas, in
// place from ms[1] on, and picks how they are coded: over their GCD g,
// zigzag or less their least (low, vfor), whichever costs fewer bits.
func chooseDenseDeltas(ms []int64) (code denseCode, vfor bool, g, low int64) {
	var ug uint64
	for j := len(ms) - 1; j >= 1; j-- {
		ms[j] -= ms[j-1]
		ug = denseGCD(ug, uint64(max(ms[j], -ms[j])))
	}
	if ug == 0 {
		ug = 1 // no delta, or all 0
	}
	g = int64(ug)
	low = math.MaxInt64
	for _, d := range ms[1:] {
		low = min(low, d/g)
	}
	var hz, hf denseHist
	for _, d := range ms[1:] {
		hz.add(denseZigzag(d / g))
		hf.add(uint64(d/g - low))
	}
	zcode, zbits := chooseDenseCode(&hz)
	fcode, fbits := chooseDenseCode(&hf)
	fbits += 8 * len(binary.AppendUvarint(nil, denseZigzag(low)))
	if len(ms) < 2 || zbits <= fbits {
		return zcode, false, g, 0
	}
	return fcode, true, g, low
}

func denseGCD(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// AppendDenseSamples appends the samples of a dense cell (qualifier q, value
// v) of the row starting at hourMillis with mint <= T <= maxt. It checks the
// qualifier (length, prefix, EncDenseFloat, lo <= hi < HourMillis), that the
// decoded first and last times equal the qualifier's, that times strictly
// ascend, that the value is consumed exactly (no trailing bytes beyond the
// last bit's byte, whose unused bits are zero), and every count/width field;
// any violation is an error wrapping ErrMalformedCell and dst comes back as
// given.
//
// It allocates nothing when dst has room for all the cell's samples: it
// decodes them all, so as to check them, before it keeps those in range.
// It grows dst by at most n samples, and only once the items of n samples
// are known to fit the bits left; but samples evenly spaced of one value
// cost no bit, so a value of a few bytes may hold MaxChunkSamples of them.
func AppendDenseSamples(dst []Sample, hourMillis int64, q, v []byte, mint, maxt int64) ([]Sample, error) {
	if len(q) != ChunkQualifierLen || q[0] != chunkQualifierPrefix || chunkenc.Encoding(q[1]) != EncDenseFloat {
		return dst, fmt.Errorf("%w: %x is not a dense cell qualifier", ErrMalformedCell, q)
	}
	lo, hi := binary.BigEndian.Uint32(q[2:6]), binary.BigEndian.Uint32(q[6:10])
	if lo > hi || hi >= HourMillis {
		return dst, fmt.Errorf("%w: dense cell qualifier %x: offsets out of order or beyond the hour", ErrMalformedCell, q)
	}
	return appendDenseSamples(dst, hourMillis+int64(lo), hourMillis+int64(hi), v, mint, maxt)
}

// appendDenseSamples is AppendDenseSamples of a cell whose qualifier is
// checked already: its first and last samples at t0 and tn (t0 <= tn, both
// in one hour), its value v.
func appendDenseSamples(dst []Sample, t0, tn int64, v []byte, mint, maxt int64) ([]Sample, error) {
	var c denseCell
	if err := c.parse(t0, tn, v); err != nil {
		return dst, fmt.Errorf("%w: dense cell [%d, %d]: %w", ErrMalformedCell, t0, tn, err)
	}
	start := len(dst)
	grown := slices.Grow(dst, c.n)
	out := grown[start : start+c.n]
	if err := c.times(out); err != nil {
		return dst, fmt.Errorf("%w: dense cell [%d, %d] of %d samples: %w", ErrMalformedCell, t0, tn, c.n, err)
	}
	c.values(out)
	if err := c.end(); err != nil {
		return dst, fmt.Errorf("%w: dense cell [%d, %d] of %d samples: %w", ErrMalformedCell, t0, tn, c.n, err)
	}
	return grown[:start+keepInRange(out, mint, maxt)], nil
}

// denseCell is a dense cell's value as far as its bytes go, checked, and
// the reader at its bit stream's items.
type denseCell struct {
	t0, tn       int64 // the first and last times
	n            int
	d1           int64
	exc          []byte // the exception entries
	k            int    // mantissas
	exp          int
	m0, g, low   int64
	zigzag       bool // value items are zigzag coded, not FOR
	tcode, vcode denseCode
	r            denseBitReader
}

// parse reads and checks the value's bytes and the codes' headers of a cell
// whose first and last samples are at t0 and tn, and aims c.r at the first
// item.
func (c *denseCell) parse(t0, tn int64, v []byte) error {
	c.t0, c.tn = t0, tn
	span := uint64(tn - t0)
	u, v, err := denseUvarint(v, "sample count")
	if err != nil {
		return err
	}
	if u >= MaxChunkSamples || u > span {
		return fmt.Errorf("%d samples: more than %d, or than its span of %d ms has milliseconds", u+1, MaxChunkSamples, span+1)
	}
	c.n = int(u) + 1
	c.d1 = int64(span)
	if c.n >= 3 {
		if u, v, err = denseUvarint(v, "second time"); err != nil {
			return err
		}
		if u == 0 || u > span {
			return fmt.Errorf("second time %d ms after the first, not within (0, %d]", u, span)
		}
		c.d1 = int64(u)
	}
	if v, err = c.parseExceptions(v); err != nil {
		return err
	}
	if v, err = c.parseMantissas(v); err != nil {
		return err
	}
	c.r = denseBitReader{buf: v}
	if c.n >= 3 {
		if c.tcode, err = readDenseCode(&c.r, denseTimeWidth); err != nil {
			return fmt.Errorf("time %w", err)
		}
	}
	if c.k >= 2 {
		if c.vcode, err = readDenseCode(&c.r, denseValueWidth); err != nil {
			return fmt.Errorf("value %w", err)
		}
	}
	// Items of zero bits aside, the count must fit the bits left before a
	// loop or an allocation trusts it.
	need := max(c.n-2, 0)*c.tcode.minItemBits() + max(c.k-1, 0)*c.vcode.minItemBits()
	if left := len(v)*8 - c.r.consumed(); need > left {
		return fmt.Errorf("%d samples need at least %d bits, %d left", c.n, need, left)
	}
	return nil
}

// parseExceptions checks the exception entries at the start of v, keeps
// them for values, and returns the bytes after them.
func (c *denseCell) parseExceptions(v []byte) ([]byte, error) {
	x, v, err := denseUvarint(v, "exception count")
	if err != nil {
		return nil, err
	}
	if x > uint64(c.n) || x > uint64(len(v)/denseExceptionMinLen) {
		return nil, fmt.Errorf("%d exceptions: more than %d samples, or than %d bytes hold", x, c.n, len(v))
	}
	c.k = c.n - int(x)
	all := v
	next := uint64(0) // least position of the next exception
	for range x {
		gap, rest, err := denseUvarint(v, "exception position")
		if err != nil {
			return nil, err
		}
		if gap >= uint64(c.n)-next {
			return nil, fmt.Errorf("exception at %d+%d beyond %d samples", next, gap, c.n)
		}
		if len(rest) < 8 {
			return nil, fmt.Errorf("exception value cut short")
		}
		next += gap + 1
		v = rest[8:]
	}
	c.exc = all[:len(all)-len(v)]
	return v, nil
}

// parseMantissas reads the mantissas' fields at the start of v and returns
// the bytes after them.
func (c *denseCell) parseMantissas(v []byte) ([]byte, error) {
	c.zigzag = true
	if c.k == 0 {
		return v, nil
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("no mantissa mode byte")
	}
	mode := v[0]
	v = v[1:]
	c.exp = int(mode & denseExpMask)
	if mode&^(denseForFlag|denseExpMask) != 0 || c.exp > denseMaxExp || c.k == 1 && mode&denseForFlag != 0 {
		return nil, fmt.Errorf("mantissa mode %#x unknown", mode)
	}
	u, v, err := denseUvarint(v, "first mantissa")
	if err != nil {
		return nil, err
	}
	c.m0 = denseUnzigzag(u)
	if c.k == 1 {
		return v, nil
	}
	if u, v, err = denseUvarint(v, "mantissa delta divisor"); err != nil {
		return nil, err
	}
	if u == 0 || u >= 1<<54 {
		return nil, fmt.Errorf("mantissa delta divisor %d not in [1, 2^54)", u)
	}
	c.g = int64(u)
	if mode&denseForFlag != 0 {
		if u, v, err = denseUvarint(v, "least mantissa delta"); err != nil {
			return nil, err
		}
		c.low, c.zigzag = denseUnzigzag(u), false
	}
	return v, nil
}

// denseUvarint reads a uvarint field.
func denseUvarint(v []byte, field string) (uint64, []byte, error) {
	u, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%s: bad uvarint", field)
	}
	return u, v[n:], nil
}

// denseBatch is how many items the decoder reads at a time, into an array
// on its stack: reading the bits of a stream apart from the loop that sums
// them keeps each loop's variables in registers.
const denseBatch = 128

// times decodes the times into out (len n).
func (c *denseCell) times(out []Sample) error {
	t, d := c.t0, c.d1
	out[0].T = t
	minD := int64(1) // the least delta
	if len(out) >= 2 {
		minD = d
		t += d
		out[1].T = t
	}
	if c.tcode == (denseCode{}) {
		// Evenly spaced (or n <= 2): every delta of deltas is 0 and
		// costs nothing.
		for i := 2; i < len(out); i++ {
			t += d
			out[i].T = t
		}
	} else {
		tab := c.tcode.table()
		var batch [denseBatch]uint64
		for i := 2; i < len(out); {
			items := batch[:min(len(batch), len(out)-i)]
			c.r.items(items, &tab)
			for _, u := range items {
				d += denseUnzigzag(u)
				minD = min(minD, d)
				t += d
				out[i].T = t
				i++
			}
		}
	}
	if minD < 1 {
		return fmt.Errorf("times not strictly ascending: a delta of %d ms", minD)
	}
	if t != c.tn {
		return fmt.Errorf("last time %d, the qualifier's %d", t, c.tn)
	}
	return nil
}

// values decodes the values into out (len n).
func (c *denseCell) values(out []Sample) {
	// next is the position of the next exception, exc its entry and those
	// after it, checked by parseExceptions.
	exc, next := c.exc, len(out)
	if len(exc) > 0 {
		gap, l := binary.Uvarint(exc)
		exc, next = exc[l:], int(gap)
	}
	i := 0
	for ; i < len(out) && i == next; i++ {
		exc, next = denseException(out, exc, i)
	}
	if i == len(out) {
		return
	}
	m, p := c.m0, densePow10[c.exp]
	out[i].V = denseDecimal(m, c.exp)
	i++
	tab := c.vcode.table()
	var batch [denseBatch]uint64
	var items []uint64
	// The samples after the first mantissa are the x exceptions, less
	// those before it, and the k-1 items (parseExceptions): every pass
	// below takes one or more of them.
	left := c.k - 1 // items not read yet
	for i < len(out) {
		// The mantissas up to the next exception.
		for i < next {
			if len(items) == 0 {
				items = batch[:min(len(batch), left)]
				c.r.items(items, &tab)
				left -= len(items)
			}
			run := items[:min(len(items), next-i)]
			items = items[len(run):]
			m = denseRun(out[i:i+len(run)], run, m, c.g, c.low, c.zigzag, p)
			i += len(run)
		}
		if i < len(out) {
			exc, next = denseException(out, exc, i)
			i++
		}
	}
}

// denseRun sets the values of out from the value items of its samples
// and returns the last mantissa; m is the one before them, p is 10^e. The
// values are denseDecimal's. A function of its own, so that its few
// variables stay in registers (inlined, it shares them with values' and
// spills), and a loop for each coding, integers (p = 1) without the
// division: a branch in the loop instead costs a sixth of its time.
//
//go:noinline
func denseRun(out []Sample, items []uint64, m, g, low int64, zigzag bool, p float64) int64 {
	out = out[:len(items)]
	switch {
	case zigzag && p == 1:
		for i, u := range items {
			m += denseUnzigzag(u) * g
			out[i].V = float64(m)
		}
	case zigzag:
		for i, u := range items {
			m += denseUnzigzag(u) * g
			out[i].V = float64(m) / p
		}
	case p == 1:
		for i, u := range items {
			m += (int64(u) + low) * g
			out[i].V = float64(m)
		}
	default:
		for i, u := range items {
			m += (int64(u) + low) * g
			out[i].V = float64(m) / p
		}
	}
	return m
}

// denseException sets sample i of out to the value of the exception entry
// at the start of exc and returns the entries after it and the position of
// the next (len(out) for none).
func denseException(out []Sample, exc []byte, i int) ([]byte, int) {
	out[i].V = math.Float64frombits(binary.BigEndian.Uint64(exc))
	if exc = exc[8:]; len(exc) == 0 {
		return exc, len(out)
	}
	gap, l := binary.Uvarint(exc)
	return exc[l:], i + 1 + int(gap)
}

// end checks that the bit stream ends in the value's last byte, padded with
// zeros.
func (c *denseCell) end() error {
	used := c.r.consumed()
	switch pad := len(c.r.buf)*8 - used; {
	case pad < 0:
		return fmt.Errorf("bit stream of %d bits overruns its %d bytes", used, len(c.r.buf))
	case pad > 7:
		return fmt.Errorf("%d bytes after the bit stream's last", pad/8)
	case c.r.take(uint(pad)) != 0:
		return fmt.Errorf("bit stream padded with ones")
	}
	return nil
}
