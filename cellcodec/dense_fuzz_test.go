package cellcodec

import (
	"errors"
	"math"
	"testing"
)

// denseFuzzSamples turns fuzz bytes into the samples of an hour: each
// record is an op byte, then the bytes its op takes. The ops give the
// shapes a dense cell codes apart: decimals of an exponent, repeats, small
// steps, raw float64 bits, stale markers, and times evenly spaced,
// jittered, or of a new step.
func denseFuzzSamples(hour int64, start uint32, data []byte) []Sample {
	take := func(n int) uint64 {
		var u uint64
		for ; n > 0 && len(data) > 0; n-- {
			u, data = u<<8|uint64(data[0]), data[1:]
		}
		return u
	}
	var samples []Sample
	t, step, e, v := int64(start%HourMillis), int64(15000), 0, 0.0
	for len(data) > 0 && len(samples) < MaxChunkSamples {
		op := data[0]
		data = data[1:]
		arg := int(op >> 3)
		switch op & 7 {
		case 0: // any float64
			v = math.Float64frombits(take(8))
		case 1: // a decimal of arg's exponent, its mantissa of up to 7 bytes
			e = arg % (denseMaxExp + 1)
			m := int64(take(1 + arg%7))
			if arg&16 != 0 {
				m = -m
			}
			v = denseDecimal(m, e)
		case 2: // the value before
		case 3: // a small step at the last exponent
			v += denseDecimal(int64(int8(take(1))), e)
		case 4: // an odd value
			v = denseOddValues[arg%len(denseOddValues)]
		case 5: // a new time step
			step = 1 + int64(take(1+arg%3))
			continue
		case 6: // jitter
			t += int64(int8(take(1)))
		case 7: // a stale marker
			v = math.Float64frombits(staleNaN)
		}
		if len(samples) > 0 {
			t = max(t, samples[len(samples)-1].T-hour+1)
		}
		if t < 0 || t >= HourMillis {
			break
		}
		samples = append(samples, Sample{T: hour + t, V: v})
		t += step
	}
	return samples
}

// FuzzDenseRoundTrip: samples made of fuzz bytes come back bit for bit,
// and filtered by time as a plain filter does.
func FuzzDenseRoundTrip(f *testing.F) {
	f.Add(uint32(0), []byte{0x09, 0x01, 0x13, 0x05, 0x2b, 0x80, 0x12, 0x07, 0x1b, 0x03, 0x0a})
	f.Add(uint32(HourMillis-1), []byte{0x07})
	f.Add(uint32(1234), []byte{0x00, 0x7f, 0xf0, 0, 0, 0, 0, 0, 2, 0x05, 0x00, 0x06, 0xfb, 0x04, 0x0c, 0x14, 0x02})
	f.Fuzz(func(t *testing.T, start uint32, data []byte) {
		h := testHour
		samples := denseFuzzSamples(h, start, data)
		if len(samples) == 0 {
			return
		}
		q, v := denseRoundTrip(t, h, samples)
		// A window from the fuzz bytes' first sample times.
		mint, maxt := samples[len(samples)/3].T, samples[len(samples)*2/3].T+int64(start%3)-1
		got, err := AppendDenseSamples(nil, h, q, v, mint, maxt)
		if err != nil {
			t.Fatal(err)
		}
		var want []Sample
		for _, s := range samples {
			if s.T >= mint && s.T <= maxt {
				want = append(want, s)
			}
		}
		if !sameSamples(got, want) {
			t.Fatalf("[%d, %d]: %d samples, want %d", mint, maxt, len(got), len(want))
		}
	})
}

// FuzzDenseDecode feeds arbitrary bytes to the decoder: it must never
// panic, it refuses with ErrMalformedCell and dst as given, and what it
// accepts keeps the qualifier's promise and encodes and decodes again to
// the same samples.
func FuzzDenseDecode(f *testing.F) {
	h := testHour
	for _, samples := range [][]Sample{
		{{h, 1}, {h + 1000, 2}, {h + 2000, 3}},
		{{h + 5, math.Float64frombits(staleNaN)}},
		{{h + 1, 0.25}, {h + 15001, math.Inf(-1)}, {h + 30003, 0.5}, {h + 44999, -0.75}, {h + 60000, 1e-22}},
		{{h, 4096 * 1e6}, {h + 15000, 4096*1e6 + 8192}, {h + 30000, 4096 * 1e6}, {h + HourMillis - 1, 0}},
		{{h, -4503599627370495}, {h + 1, 4503599627370495}, {h + 2, 17}},
	} {
		q, v := denseOf(f, h, samples)
		f.Add(q, v)
	}
	f.Fuzz(func(t *testing.T, q, v []byte) {
		dst := []Sample{{T: 1, V: 2}}
		got, err := AppendDenseSamples(dst, h, q, v, math.MinInt64, math.MaxInt64)
		if err != nil {
			if !errors.Is(err, ErrMalformedCell) || len(got) != 1 || got[0] != dst[0] {
				t.Fatalf("error %v, %d samples: want ErrMalformedCell and dst as given", err, len(got))
			}
			return
		}
		got = got[1:]
		lo, hi := h+int64(binaryBE(q[2:6])), h+int64(binaryBE(q[6:10]))
		if len(got) == 0 || got[0].T != lo || got[len(got)-1].T != hi {
			t.Fatalf("%d samples, not from %d to %d", len(got), lo, hi)
		}
		for i := 1; i < len(got); i++ {
			if got[i].T <= got[i-1].T {
				t.Fatalf("sample %d at %d after %d", i, got[i].T, got[i-1].T)
			}
		}
		again, err := AppendDenseValue(nil, h, got)
		if err != nil {
			t.Fatalf("accepted samples do not encode: %v", err)
		}
		back, err := AppendDenseSamples(nil, h, q, again, math.MinInt64, math.MaxInt64)
		if err != nil || !sameSamples(back, got) {
			t.Fatalf("re-encoded as %d bytes, read back as %d samples, %v; want the %d decoded", len(again), len(back), err, len(got))
		}
	})
}
