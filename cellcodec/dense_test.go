package cellcodec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// denseOf encodes samples of the hour starting at hour as a dense cell.
func denseOf(tb testing.TB, hour int64, samples []Sample) (q, v []byte) {
	tb.Helper()
	v, err := AppendDenseValue(nil, hour, samples)
	if err != nil {
		tb.Fatal(err)
	}
	return AppendChunkQualifier(nil, EncDenseFloat, uint32(samples[0].T-hour), uint32(samples[len(samples)-1].T-hour)), v
}

// denseRoundTrip encodes and decodes samples, failing unless every bit
// comes back.
func denseRoundTrip(tb testing.TB, hour int64, samples []Sample) (q, v []byte) {
	tb.Helper()
	q, v = denseOf(tb, hour, samples)
	got, err := AppendDenseSamples(nil, hour, q, v, math.MinInt64, math.MaxInt64)
	if err != nil {
		tb.Fatalf("%d samples, %d bytes: %v", len(samples), len(v), err)
	}
	if !sameSamples(got, samples) {
		for i := range min(len(got), len(samples)) {
			if got[i].T != samples[i].T || math.Float64bits(got[i].V) != math.Float64bits(samples[i].V) {
				tb.Fatalf("%d samples: sample %d is %d %#x, want %d %#x", len(samples), i,
					got[i].T, math.Float64bits(got[i].V), samples[i].T, math.Float64bits(samples[i].V))
			}
		}
		tb.Fatalf("%d samples came back as %d", len(samples), len(got))
	}
	return q, v
}

// denseTimes are n strictly ascending times of the hour starting at hour,
// in one of the shapes scrapes give: evenly spaced, jittered by a few
// milliseconds, irregular; sometimes at the hour's first and last
// milliseconds.
func denseTimes(rng *rand.Rand, hour int64, n int) []int64 {
	ts := make([]int64, n)
	step := max(1, (HourMillis-1)/int64(n))
	switch rng.IntN(4) {
	case 0: // even, from a random start
		start := rng.Int64N(HourMillis - step*int64(n-1))
		for i := range ts {
			ts[i] = start + step*int64(i)
		}
	case 1: // jittered by up to +-5 ms around an even grid
		for i := range ts {
			jitter := int64(0)
			if step > 11 {
				jitter = rng.Int64N(11) - 5
			}
			ts[i] = max(0, min(HourMillis-1, step*int64(i)+step/2+jitter))
		}
	case 2: // irregular: random distinct offsets
		seen := map[int64]bool{}
		for len(seen) < n {
			seen[rng.Int64N(HourMillis)] = true
		}
		i := 0
		for t := range seen {
			ts[i] = t
			i++
		}
		slices.Sort(ts)
	default: // even, from the hour's first to as near its last as fits
		for i := range ts {
			ts[i] = step * int64(i)
		}
		if n > 1 && rng.IntN(2) == 0 {
			ts[n-1] = HourMillis - 1
		}
	}
	for i := 1; i < n; i++ {
		ts[i] = max(ts[i], ts[i-1]+1) // jitter may collide
	}
	for i := range ts {
		ts[i] += hour
	}
	return ts
}

// denseOddValues are values no mantissa holds, and their neighbours.
var denseOddValues = []float64{
	math.Float64frombits(staleNaN), math.NaN(), math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xfff0000000000001),
	math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	0x1p-1022, math.MaxFloat64, -math.MaxFloat64, 1 << 53, 1<<53 + 2, -(1 << 53), 1<<53 - 1, 1e22, 1e-22, 1e23, 0.1 + 0.2, 1.0 / 3,
	math.Pi, 123456789.123456789, 9007199254740.993,
}

// denseValues are n values: decimal mantissas at a random exponent,
// walking as counters (with resets) or gauges do, or constant, with
// exceptions at random positions.
func denseValues(rng *rand.Rand, n int) []float64 {
	vs := make([]float64, n)
	e := rng.IntN(denseMaxExp + 1)
	scale := rng.Int64N(1 << uint(rng.IntN(40)+1))
	m := rng.Int64N(1<<uint(rng.IntN(53)+1)) - 1<<uint(rng.IntN(20))
	exceptions := []float64{0, 0.01, 0.3, 1}[rng.IntN(4)]
	for i := range vs {
		switch rng.IntN(8) {
		case 0: // unchanged
		case 1: // counter reset
			m = rng.Int64N(1000)
		default:
			m += scale * (rng.Int64N(41) - 10)
		}
		m = max(-denseMaxMantissa, min(denseMaxMantissa, m))
		vs[i] = float64(m) / densePow10[e]
		if rng.Float64() < exceptions {
			switch rng.IntN(3) {
			case 0:
				vs[i] = denseOddValues[rng.IntN(len(denseOddValues))]
			case 1:
				vs[i] = math.Float64frombits(rng.Uint64())
			default:
				// A decimal at another exponent.
				vs[i] = float64(rng.Int64N(1<<20)) / densePow10[rng.IntN(denseMaxExp+1)]
			}
		}
	}
	for _, i := range []int{0, n - 1} {
		if rng.IntN(4) == 0 {
			vs[i] = denseOddValues[rng.IntN(len(denseOddValues))]
		}
	}
	return vs
}

func denseSamples(rng *rand.Rand, hour int64, n int) []Sample {
	ts, vs := denseTimes(rng, hour, n), denseValues(rng, n)
	s := make([]Sample, n)
	for i := range s {
		s[i] = Sample{T: ts[i], V: vs[i]}
	}
	return s
}

func TestDenseRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sizes := []int{1, 2, 3, 4, 120, 240}
	for i := range 3000 {
		n := sizes[i%len(sizes)]
		if i%3 == 0 {
			n = 1 + rng.IntN(1000)
		}
		denseRoundTrip(t, testHour, denseSamples(rng, testHour, n))
	}
	for range 3 {
		denseRoundTrip(t, testHour, denseSamples(rng, testHour, MaxChunkSamples))
	}
}

func TestDenseRoundTripEdges(t *testing.T) {
	h := testHour
	stale := math.Float64frombits(staleNaN)
	var all []Sample
	for i, v := range denseOddValues {
		all = append(all, Sample{h + int64(i)*1000, v})
	}
	var full []Sample
	for i := range MaxChunkSamples {
		full = append(full, Sample{h + HourMillis - MaxChunkSamples + int64(i), float64(i%7) / 4})
	}
	for name, samples := range map[string][]Sample{
		"one at the hour's start":   {{h, 1}},
		"one at the hour's end":     {{h + HourMillis - 1, stale}},
		"two spanning the hour":     {{h, 0.5}, {h + HourMillis - 1, -0.25}},
		"three, exceptions only":    {{h + 1, stale}, {h + 2, math.Inf(1)}, {h + 3, stale}},
		"odd values":                all,
		"max samples, 1 ms apart":   full,
		"first and last exceptions": {{h + 10, stale}, {h + 20, 1.5}, {h + 30, 2.5}, {h + 40, 3.5}, {h + 50, math.NaN()}},
		"the largest mantissas":     {{h, denseMaxMantissa}, {h + 1, -denseMaxMantissa}, {h + 2, denseMaxMantissa}},
		"mantissas at exponent 22":  {{h, 1e-22}, {h + 1, 3e-22}, {h + 2, 1234567e-22}},
		"wide value deltas":         {{h, -4503599627370495}, {h + 1, 4503599627370495}, {h + 2, -4503599627370495}, {h + 3, 1}},
		// Small deltas and the widest: a prefix code of 55-bit items,
		// longer than a refill.
		"items beyond a refill":       {{h, 1}, {h + 1, 2}, {h + 2, 3}, {h + 3, 4}, {h + 4, 5}, {h + 5, denseMaxMantissa}, {h + 6, -denseMaxMantissa}, {h + 7, -denseMaxMantissa + 1}, {h + 8, -denseMaxMantissa + 2}},
		"negative zero among zeros":   {{h, 0}, {h + 1, math.Copysign(0, -1)}, {h + 2, 0}},
		"subnormals":                  {{h, 5e-324}, {h + 1, 1e-320}, {h + 2, 2.5e-310}},
		"decimals of many exponents":  {{h, 1}, {h + 1, 0.5}, {h + 2, 0.25}, {h + 3, 0.125}, {h + 4, 1e-9}},
		"a jump of a whole hour":      {{h, 1}, {h + 1, 2}, {h + HourMillis - 1, 3}},
		"deltas of deltas at extreme": {{h, 1}, {h + HourMillis - 2, 2}, {h + HourMillis - 1, 3}},
	} {
		t.Run(name, func(t *testing.T) { denseRoundTrip(t, h, samples) })
	}
}

// TestDenseExceptionsKeepDeltas: an exception costs its entry and leaves
// the deltas of the mantissas around it as they were, so a constant series
// with stale markers in it codes its values in no bit at all.
func TestDenseExceptionsKeepDeltas(t *testing.T) {
	h := testHour
	var samples []Sample
	x := 0
	for i := range 240 {
		v := 12.75
		if i%17 == 3 || i == 0 || i == 239 {
			v = math.Float64frombits(staleNaN)
			x++
		}
		samples = append(samples, Sample{h + int64(i)*15000, v})
	}
	_, v := denseRoundTrip(t, h, samples)
	// n-1, d1, x, x entries of 9 bytes, mode, zz(1275), g, 2 code headers.
	if want := 2 + 2 + 1 + 9*x + 1 + 2 + 1 + 2; len(v) != want {
		t.Fatalf("%d bytes, want %d", len(v), want)
	}
}

// TestDenseGolden pins the layout: three samples at 0, 1000 and 2000 ms of
// values 1, 2, 3 (dense.go's format comment, by hand).
func TestDenseGolden(t *testing.T) {
	h := testHour
	q, v := denseRoundTrip(t, h, []Sample{{h, 1}, {h + 1000, 2}, {h + 2000, 3}})
	if want := []byte{0x01, 0x84, 0, 0, 0, 0, 0, 0, 0x07, 0xd0}; !bytes.Equal(q, want) {
		t.Fatalf("qualifier %x, want %x", q, want)
	}
	if want := denseGoldenValue(); !bytes.Equal(v, want) {
		t.Fatalf("value %x, want %x", v, want)
	}
}

// denseGoldenValue is TestDenseGolden's value, field by field.
func denseGoldenValue() []byte {
	return slices.Concat(
		[]byte{2},          // n-1
		[]byte{0xe8, 0x07}, // d1 = 1000
		[]byte{0},          // no exception
		[]byte{0},          // e = 0, zigzag
		[]byte{2},          // zz(M[0] = 1)
		[]byte{1},          // g = 1
		// Time code: shape 0, width 0 (00 000000); value code: shape 0,
		// width 2 (00 000010); no time item of 0 bits; value items zz(1)
		// = 10, 10; four zero bits of padding.
		[]byte{0b00000000, 0b00000010, 0b10100000},
	)
}

func TestDenseFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	h := testHour
	for i := range 1000 {
		samples := denseSamples(rng, h, 1+rng.IntN(300))
		q, v := denseOf(t, h, samples)
		pick := func() int64 {
			switch rng.IntN(5) {
			case 0:
				return samples[rng.IntN(len(samples))].T // a sample's time
			case 1:
				return samples[rng.IntN(len(samples))].T + rng.Int64N(3) - 1
			case 2:
				return []int64{math.MinInt64, math.MaxInt64, h - 1, h + HourMillis}[rng.IntN(4)]
			}
			return h + rng.Int64N(HourMillis)
		}
		mint, maxt := pick(), pick()
		var want []Sample
		for _, s := range samples {
			if s.T >= mint && s.T <= maxt {
				want = append(want, s)
			}
		}
		prefix := []Sample{{1, 2}}
		got, err := AppendDenseSamples(slices.Clone(prefix), h, q, v, mint, maxt)
		if err != nil || !sameSamples(got[:1], prefix) || !sameSamples(got[1:], want) {
			t.Fatalf("case %d [%d, %d]: %d samples, %v; want %d after the prefix", i, mint, maxt, len(got), err, len(want))
		}
	}
}

func TestDenseSamplesAllocs(t *testing.T) {
	h := testHour
	samples := denseSamples(rand.New(rand.NewPCG(9, 10)), h, 240)
	q, v := denseOf(t, h, samples)
	dst := make([]Sample, 0, len(samples))
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = AppendDenseSamples(dst[:0], h, q, v, h, h+HourMillis/2); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a decode", allocs)
	}
}

// TestDenseCountBeforeAllocation: a count the bits left cannot hold is
// refused before dst grows by it.
func TestDenseCountBeforeAllocation(t *testing.T) {
	q := AppendChunkQualifier(nil, EncDenseFloat, 0, HourMillis-1)
	// 65535 samples, zigzag value items of 2 bits and more: 16 KiB of
	// bits promised in a few bytes.
	v := denseCraft([]byte{0xfe, 0xff, 0x03, 1, 0, 0, 2, 1}, [2]uint64{denseFixedCode, 2}, [2]uint64{0, 6},
		[2]uint64{denseFixedCode, 2}, [2]uint64{2, 6}, [2]uint64{2, 2})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := AppendDenseSamples(nil, testHour, q, v, math.MinInt64, math.MaxInt64)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrMalformedCell) || !strings.Contains(err.Error(), "65535 samples need") {
		t.Fatalf("error %v, want the count refused", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4096 {
		t.Fatalf("refusing the count allocated %d bytes", grew)
	}
}

func TestAppendDenseValueErrors(t *testing.T) {
	h := testHour
	many := make([]Sample, MaxChunkSamples+1)
	for i := range many {
		many[i].T = h + int64(i)
	}
	for name, samples := range map[string][]Sample{
		"no sample":          nil,
		"too many":           many,
		"before the hour":    {{h - 1, 1}, {h, 1}},
		"after the hour":     {{h, 1}, {h + HourMillis, 1}},
		"not ascending":      {{h + 2, 1}, {h + 1, 1}},
		"the same time once": {{h + 1, 1}, {h + 1, 1}},
	} {
		if v, err := AppendDenseValue([]byte{9}, h, samples); err == nil || !bytes.Equal(v, []byte{9}) {
			t.Errorf("%s: %x, %v; want an error and dst as given", name, v, err)
		}
	}
}

// denseCraft builds a value: bytes, then bit fields (value, width) padded
// to a byte.
func denseCraft(head []byte, fields ...[2]uint64) []byte {
	w := denseBitWriter{dst: slices.Clone(head)}
	for _, f := range fields {
		w.write(f[0], uint(f[1]))
	}
	return w.flush()
}

// TestDenseMalformed triggers each check of the decoder with a value made
// for it, from the golden cell (1, 2, 3 at 0, 1000, 2000 ms).
func TestDenseMalformed(t *testing.T) {
	h := testHour
	qual := func(lo, hi uint32) []byte { return AppendChunkQualifier(nil, EncDenseFloat, lo, hi) }
	q := qual(0, 2000)
	// head is the golden value's bytes before its bit stream: n-1, d1, x,
	// mode, zz(M[0]), g.
	head := []byte{2, 0xe8, 0x07, 0, 0, 2, 1}
	fixed := func(w uint64) [][2]uint64 { return [][2]uint64{{denseFixedCode, 2}, {w, 6}} }
	good := slices.Concat(fixed(0), fixed(2), [][2]uint64{{2, 2}, {2, 2}})
	golden := denseCraft(head, good...)
	if !bytes.Equal(golden, denseGoldenValue()) {
		t.Fatalf("crafted %x, golden %x", golden, denseGoldenValue())
	}
	stale := binaryBE64(staleNaN)
	for _, tc := range []struct {
		name, want string // want: in the error
		q, v       []byte
	}{
		{"qualifier too short", "not a dense cell qualifier", q[:9], golden},
		{"qualifier of a raw cell", "not a dense cell qualifier", append([]byte{0}, q[1:]...), golden},
		{"qualifier of an XOR chunk", "not a dense cell qualifier", AppendChunkQualifier(nil, 1, 0, 2000), golden},
		{"qualifier offsets reversed", "offsets out of order", qual(2000, 0), golden},
		{"qualifier beyond the hour", "offsets out of order", qual(0, HourMillis), golden},
		{"empty value", "sample count: bad uvarint", q, nil},
		{"count cut short", "sample count: bad uvarint", q, []byte{0x80}},
		{"more samples than MaxChunkSamples", "65536 samples", qual(0, HourMillis-1), denseCraft([]byte{0xff, 0xff, 0x03, 1, 0, 0, 0, 1}, fixed(0)...)},
		{"more samples than milliseconds", "3 samples: more than", qual(0, 1), golden},
		{"one sample, two offsets", "last time", qual(0, 5), []byte{0, 0, 0, 2}},
		{"second time 0", "second time 0 ms", q, denseCraft([]byte{2, 0, 0, 0, 2, 1}, good...)},
		{"second time beyond the last", "second time 2001 ms", q, denseCraft([]byte{2, 0xd1, 0x0f, 0, 0, 2, 1}, good...)},
		{"second time cut short", "second time: bad uvarint", q, []byte{2, 0xe8}},
		{"exception count cut short", "exception count: bad uvarint", q, []byte{2, 0xe8, 0x07}},
		{"more exceptions than samples", "4 exceptions", q, slices.Concat([]byte{2, 0xe8, 0x07, 4}, make([]byte, 40))},
		{"exceptions beyond the bytes", "2 exceptions", q, slices.Concat([]byte{2, 0xe8, 0x07, 2, 0}, stale)},
		{"exception beyond the samples", "exception at 0+3", q, slices.Concat([]byte{2, 0xe8, 0x07, 1, 3}, stale)},
		{"second exception beyond the samples", "exception at 2+1", q, slices.Concat([]byte{2, 0xe8, 0x07, 2, 1}, stale, []byte{1}, stale)},
		{"exception cut short", "exception value cut short", q, slices.Concat([]byte{2, 0xe8, 0x07, 1, 0x80, 0x80, 0x00}, stale[:6])},
		{"exception position cut short", "exception position: bad uvarint", q, slices.Concat([]byte{2, 0xe8, 0x07, 1}, bytes.Repeat([]byte{0x80}, 9))},
		{"no mode byte", "no mantissa mode byte", q, []byte{2, 0xe8, 0x07, 0}},
		{"mode with reserved bits", "mode 0x20", q, denseCraft([]byte{2, 0xe8, 0x07, 0, 0x20, 2, 1}, good...)},
		{"exponent beyond 22", "mode 0x17", q, denseCraft([]byte{2, 0xe8, 0x07, 0, 23, 2, 1}, good...)},
		{"FOR of one mantissa", "mode 0x80", qual(0, 0), []byte{0, 0, 0x80, 2}},
		{"first mantissa cut short", "first mantissa: bad uvarint", q, []byte{2, 0xe8, 0x07, 0, 0, 0x80}},
		{"divisor 0", "divisor 0 not", q, denseCraft([]byte{2, 0xe8, 0x07, 0, 0, 2, 0}, good...)},
		{"divisor 2^54", "divisor 18014398509481984 not", q, denseCraft([]byte{2, 0xe8, 0x07, 0, 0, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20}, good...)},
		{"divisor cut short", "divisor: bad uvarint", q, []byte{2, 0xe8, 0x07, 0, 0, 2}},
		{"FOR least cut short", "least mantissa delta: bad uvarint", q, []byte{2, 0xe8, 0x07, 0, 0x80, 2, 1}},
		{"time code shape 3", "time code shape 3", q, denseCraft(head, [][2]uint64{{3, 2}, {0, 6}}...)},
		{"time width beyond 23", "widths [24 0 0]", q, denseCraft(head, slices.Concat(fixed(24), fixed(2), [][2]uint64{{0, 24}, {2, 2}, {2, 2}})...)},
		{"time widths not ascending", "widths [3 2 4]", q, denseCraft(head, slices.Concat([][2]uint64{{denseSplitCode, 2}, {3, 6}, {2, 6}, {4, 6}}, fixed(2), [][2]uint64{{0, 4}, {2, 2}, {2, 2}})...)},
		{"zero code of first width 0", "widths [0 2 4]", q, denseCraft(head, slices.Concat([][2]uint64{{denseZeroCode, 2}, {0, 6}, {2, 6}, {4, 6}}, fixed(2), [][2]uint64{{0, 1}, {2, 2}, {2, 2}})...)},
		{"value width beyond 55", "widths [56 0 0]", q, denseCraft(head, slices.Concat(fixed(0), fixed(56), [][2]uint64{{2, 56}, {2, 56}})...)},
		{"value code shape 3", "value code shape 3", q, denseCraft(head, slices.Concat(fixed(0), [][2]uint64{{3, 2}, {2, 6}}, [][2]uint64{{2, 2}, {2, 2}})...)},
		{"more items than bits", "need at least 118 bits", qual(0, 60000), denseCraft([]byte{59, 0xe8, 0x07, 0, 0, 2, 1}, slices.Concat(fixed(0), fixed(2), [][2]uint64{{2, 2}, {2, 2}})...)},
		{"times not ascending", "a delta of 0 ms", q, denseCraft(head, slices.Concat(fixed(21), fixed(2), [][2]uint64{{denseZigzag(-1000), 21}, {2, 2}, {2, 2}})...)},
		{"last time not the qualifier's", "last time", qual(0, 2001), golden},
		{"last time not the qualifier's, items", "last time 1699999201999", qual(0, 2001), denseCraft(head, slices.Concat(fixed(2), fixed(2), [][2]uint64{{1, 2}, {2, 2}, {2, 2}})...)},
		{"bit stream cut short", "need at least 4 bits", q, golden[:len(golden)-1]},
		{"trailing byte", "1 bytes after", q, append(slices.Clone(golden), 0)},
		{"bit stream overrun", "overruns", q, denseCraft(head, slices.Concat(fixed(0), [][2]uint64{{denseZeroCode, 2}, {2, 6}, {2, 6}, {8, 6}, {0b111, 3}, {200, 8}, {1, 1}})...)},
		{"padding of ones", "padded with ones", q, denseCraft(head, slices.Concat(good, [][2]uint64{{1, 1}})...)},
	} {
		dst := []Sample{{7, 8}}
		got, err := AppendDenseSamples(dst, h, tc.q, tc.v, math.MinInt64, math.MaxInt64)
		if !errors.Is(err, ErrMalformedCell) || !strings.Contains(err.Error(), tc.want) || len(got) != 1 || got[0] != dst[0] {
			t.Errorf("%s: %d samples, error %v; want ErrMalformedCell for %q and dst as given", tc.name, len(got), err, tc.want)
		}
	}
}

func binaryBE64(u uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(u >> (56 - 8*i))
	}
	return b
}

// TestDenseBits: fields of every width come back as written, across word
// boundaries and past the end of the bytes (zeros).
func TestDenseBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 200 {
		type field struct {
			u  uint64
			nb uint
		}
		var fields []field
		w := denseBitWriter{dst: []byte{0xaa}}
		total := 0
		for range rng.IntN(100) {
			nb := uint(rng.IntN(57))
			u := rng.Uint64() & (1<<nb - 1)
			fields = append(fields, field{u, nb})
			w.write(u, nb)
			total += int(nb)
		}
		buf := w.flush()
		if buf[0] != 0xaa || len(buf) != 1+(total+7)/8 {
			t.Fatalf("%d bits in %d bytes after a first", total, len(buf)-1)
		}
		r := denseBitReader{buf: buf[1:]}
		for i, f := range fields {
			if got := r.take(f.nb); got != f.u {
				t.Fatalf("field %d of %d bits: %#x, want %#x", i, f.nb, got, f.u)
			}
		}
		if r.consumed() != total || r.take(56) != 0 {
			t.Fatalf("consumed %d of %d bits, or read ones past them", r.consumed(), total)
		}
	}
}

// TestDenseCodes: the code chosen for a stream costs the bits it says,
// writes them, and reads the items back.
func TestDenseCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for i := range 2000 {
		// Items of up to maxw bits (a value item's most is 55), a share
		// of them zeros.
		items := make([]uint64, rng.IntN(300))
		zeros, maxw := rng.Float64(), rng.IntN(denseValueWidth+1)
		for j := range items {
			if rng.Float64() >= zeros {
				items[j] = rng.Uint64() >> (64 - rng.IntN(maxw+1))
			}
		}
		var h denseHist
		for _, u := range items {
			h.add(u)
		}
		code, cost := chooseDenseCode(&h)
		w := denseBitWriter{}
		code.appendHeader(&w)
		for _, u := range items {
			code.appendItem(&w, u)
		}
		buf := w.flush()
		if len(buf) != (cost+7)/8 {
			t.Fatalf("case %d: code %+v costs %d bits, wrote %d bytes", i, code, cost, len(buf))
		}
		r := denseBitReader{buf: buf}
		back, err := readDenseCode(&r, denseValueWidth)
		if err != nil || back != code {
			t.Fatalf("case %d: code %+v read back as %+v, %v", i, code, back, err)
		}
		tab := code.table()
		got := make([]uint64, len(items))
		r.items(got, &tab)
		if !slices.Equal(got, items) || r.consumed() != cost {
			t.Fatalf("case %d: code %+v: items differ, or %d bits read of %d", i, code, r.consumed(), cost)
		}
	}
}
