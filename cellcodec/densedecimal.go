package cellcodec

import "math"

// Most values a scrape brings are decimals: integers, or numbers printed
// with a few digits after the point (CPU seconds, load averages, ratios).
// A dense cell (dense.go) codes them as integer mantissas at one decimal
// exponent per cell, as float64(m) / 10^e: an IEEE-754 division of two
// exact operands is correctly rounded, so the decoder gets every bit back.
// The encoder never trusts that: it keeps a value as a mantissa only once
// the decoder's expression has given back its bits.

// denseMaxExp is the largest exponent: 10^22 is the largest power of ten a
// float64 holds exactly.
const denseMaxExp = 22

// denseMaxMantissa bounds |m|: every integer up to 2^53 is a float64.
const denseMaxMantissa = 1<<53 - 1

// densePow10[e] is 10^e, exact.
var densePow10 = [denseMaxExp + 1]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// denseDecimal is the value of mantissa m at exponent e, as the decoder
// computes it.
func denseDecimal(m int64, e int) float64 { return float64(m) / densePow10[e] }

// denseMinExp returns the least exponent e and its mantissa m with v ==
// denseDecimal(m, e) bit for bit, or ok false if v is no such decimal (NaN,
// an infinity, -0, too many digits).
func denseMinExp(v float64) (m int64, e int, ok bool) {
	for e := range densePow10 {
		x := v * densePow10[e]
		if !(math.Abs(x) <= denseMaxMantissa) {
			return 0, 0, false // NaN, or beyond the mantissas, as every greater e is
		}
		m := int64(math.Round(x))
		if math.Float64bits(denseDecimal(m, e)) == math.Float64bits(v) {
			return m, e, true
		}
	}
	return 0, 0, false
}

// denseScale returns m * 10^k and whether it is within the mantissas' bound.
func denseScale(m int64, k int) (int64, bool) {
	for ; k > 0; k-- {
		if m > denseMaxMantissa/10 || m < -denseMaxMantissa/10 {
			return 0, false
		}
		m *= 10
	}
	return m, true
}

// denseExponent picks the cell's exponent: the one at which the most values
// are mantissas, the least of them on a tie (smaller mantissas). A value of
// least exponent e with mantissa m is one at every exponent from e on while
// m scaled stays within the bound. exps[i] is value i's least exponent, -1
// for none; mants[i] its mantissa.
func denseExponent(exps []int8, mants []int64) int {
	top := -1
	for _, e := range exps {
		top = max(top, int(e))
	}
	if top < 0 {
		return 0
	}
	// fits[e] counts the values that are mantissas at e, for e <= top.
	var fits [denseMaxExp + 1]int
	for i, e := range exps {
		if e < 0 {
			continue
		}
		m := mants[i]
		for k := int(e); k <= top; k++ {
			fits[k]++
			if k < top {
				var ok bool
				if m, ok = denseScale(m, 1); !ok {
					break
				}
			}
		}
	}
	best := 0
	for e := 1; e <= top; e++ {
		if fits[e] > fits[best] {
			best = e
		}
	}
	return best
}
