package cellcodec

import (
	"math"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// FuzzRawRoundTrip: every bit pattern and offset comes back exactly.
func FuzzRawRoundTrip(f *testing.F) {
	f.Add(uint64(staleNaN), uint32(0))
	f.Add(uint64(0x7ff8000000000001), uint32(HourMillis-1))
	f.Add(uint64(0), uint32(12345))
	f.Fuzz(func(t *testing.T, bits uint64, off uint32) {
		off %= HourMillis
		gotOff, v, err := DecodeRaw(AppendRawQualifier(nil, off), AppendRawValue(nil, math.Float64frombits(bits)))
		if err != nil || gotOff != off || math.Float64bits(v) != bits {
			t.Fatalf("%#x at %d: decoded %#x at %d, %v", bits, off, math.Float64bits(v), gotOff, err)
		}
	})
}

// FuzzDecode feeds arbitrary qualifier and value bytes to the decoders: they
// must never panic, and what they accept must be consistent.
func FuzzDecode(f *testing.F) {
	chunk, err := AppendChunkValue(nil, []Sample{{1000, 1}, {2000, 2}, {2500, math.Float64frombits(staleNaN)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0, 0, 1, 0}, []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2})
	f.Add(AppendChunkQualifier(nil), chunk)
	f.Add([]byte{1, 1}, []byte{0, 5, 0xff, 0xff, 0xff})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, q, v []byte) {
		if off, _, err := DecodeRaw(q, v); err == nil && off >= HourMillis {
			t.Fatalf("accepted offset %d", off)
		}
		cells := []table.Cell{{Qualifier: q, Value: v}, {Qualifier: q, Value: v}}
		got, err := AppendRowSamples(nil, 0, cells, math.MinInt64, math.MaxInt64)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v with %d samples", err, len(got))
			}
			return
		}
		for i := 1; i < len(got); i++ {
			if got[i].T <= got[i-1].T {
				t.Fatalf("samples not strictly ascending: %v", got)
			}
		}
	})
}

// FuzzChunkRoundTrip: sorted samples from arbitrary deltas and bit patterns
// come back exactly from a chunk cell.
func FuzzChunkRoundTrip(f *testing.F) {
	f.Add(int64(1_700_000_000_000), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add(int64(0), []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, start int64, data []byte) {
		var samples []Sample
		tm := start
		for len(data) >= 10 {
			d := int64(data[0])<<8 | int64(data[1]) + 1
			if tm > math.MaxInt64-d {
				break
			}
			tm += d
			var bits uint64
			for _, c := range data[2:10] {
				bits = bits<<8 | uint64(c)
			}
			samples = append(samples, Sample{tm, math.Float64frombits(bits)})
			data = data[10:]
		}
		v, err := AppendChunkValue(nil, samples)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendRowSamples(nil, 0, []table.Cell{{Qualifier: AppendChunkQualifier(nil), Value: v}}, math.MinInt64, math.MaxInt64)
		if err != nil || !sameSamples(got, samples) {
			t.Fatalf("got %v, %v; want %v", got, err, samples)
		}
	})
}
