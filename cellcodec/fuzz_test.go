package cellcodec

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Seed inputs live in f.Add calls and in testdata/fuzz/<FuzzName>/, the
// corpus `go test` always runs (and where `go test -fuzz` saves failures).

// FuzzRawRoundTrip: every bit pattern and offset comes back exactly.
func FuzzRawRoundTrip(f *testing.F) {
	f.Add(uint64(staleNaN), uint32(0))
	f.Add(uint64(0x7ff8000000000001), uint32(HourMillis-1))
	f.Add(uint64(0x8000000000000000), uint32(12345))
	f.Fuzz(func(t *testing.T, bits uint64, off uint32) {
		off %= HourMillis
		gotOff, v, err := DecodeRaw(AppendRawQualifier(nil, off), AppendRawValue(nil, math.Float64frombits(bits)))
		if err != nil || gotOff != off || math.Float64bits(v) != bits {
			t.Fatalf("%#x at %d: decoded %#x at %d, %v", bits, off, math.Float64bits(v), gotOff, err)
		}
	})
}

// FuzzDecodeChunk feeds arbitrary bytes to the chunk cell decoder: it must
// never panic, and what it accepts must hold to the qualifier's promise.
func FuzzDecodeChunk(f *testing.F) {
	h := testHour
	q, v := chunkOf(f, h, []Sample{{h + 1000, 1}, {h + 2000, 2}, {h + 2500, math.Float64frombits(staleNaN)}})
	f.Add(q, v)
	f.Add(AppendChunkQualifier(nil, chunkenc.EncXOR, 0, HourMillis-1), []byte{0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Add(AppendChunkQualifier(nil, chunkenc.EncXOR, 7, 7), []byte{0, 0})
	f.Fuzz(func(t *testing.T, q, v []byte) {
		c, err := DecodeChunk(h, q, v)
		if err != nil {
			return
		}
		if c.MinT > c.MaxT || c.MinT < h || c.MaxT >= h+HourMillis || c.Encoding != chunkenc.EncXOR {
			t.Fatalf("accepted %+v from qualifier %x", c, q)
		}
		got, _, err := AppendChunkSamples(nil, c, nil, math.MinInt64, math.MaxInt64)
		if err != nil {
			return
		}
		for i, s := range got {
			if s.T < c.MinT || s.T > c.MaxT || (i > 0 && s.T <= got[i-1].T) {
				t.Fatalf("sample %d at %d: outside [%d, %d] or not ascending", i, s.T, c.MinT, c.MaxT)
			}
		}
	})
}

// FuzzDecodeRow feeds arbitrary qualifier and value bytes to the row
// decoder: it must never panic, and what it accepts must be consistent.
func FuzzDecodeRow(f *testing.F) {
	h := testHour
	q, v := chunkOf(f, h, []Sample{{h + 1000, 1}, {h + 2000, 2}, {h + 2500, math.Float64frombits(staleNaN)}})
	f.Add([]byte{0, 0, 1, 0}, []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2})
	f.Add(q, v)
	f.Add([]byte{1, 1}, []byte{0, 5, 0xff, 0xff, 0xff})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, q, v []byte) {
		if off, _, err := DecodeRaw(q, v); err == nil && off >= HourMillis {
			t.Fatalf("accepted offset %d", off)
		}
		cells := testCells{{q, v}, {q, v}, rawCell(h, Sample{h + 2000, 5})}
		got, err := AppendRowSamples(nil, h, cells, math.MinInt64, math.MaxInt64)
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
// come back exactly from chunk cells.
func FuzzChunkRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2, 0xff, 0xff})
	f.Add([]byte{0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := testHour
		var samples []Sample
		tm := h
		for len(data) >= 10 {
			tm += int64(data[0])<<8 | int64(data[1])
			if tm >= h+HourMillis {
				break
			}
			var bits uint64
			for _, c := range data[2:10] {
				bits = bits<<8 | uint64(c)
			}
			samples = append(samples, Sample{tm, math.Float64frombits(bits)})
			tm++
			data = data[10:]
		}
		var cells testCells
		for k, n := 0, ChunkCount(len(samples)); k < n; k++ {
			cells = append(cells, chunkCell(t, h, samples[len(samples)*k/n:len(samples)*(k+1)/n]))
		}
		got, err := AppendRowSamples(nil, h, cells, math.MinInt64, math.MaxInt64)
		if err != nil || !sameSamples(got, samples) {
			t.Fatalf("got %v, %v; want %v", got, err, samples)
		}
	})
}
