package cellcodec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// packedOf encodes parts (each sorted, the parts in time order) of the hour
// starting at hour as a packed cell.
func packedOf(tb testing.TB, hour int64, parts [][]Sample) (q, v []byte) {
	tb.Helper()
	var chunks []Chunk
	for _, p := range parts {
		data, err := AppendChunkValue(nil, p)
		if err != nil {
			tb.Fatal(err)
		}
		chunks = append(chunks, Chunk{Encoding: chunkenc.EncXOR, MinT: p[0].T, MaxT: p[len(p)-1].T, Data: data})
	}
	v, err := AppendPackedValue(nil, hour, chunks)
	if err != nil {
		tb.Fatal(err)
	}
	lo, hi := uint32(chunks[0].MinT-hour), uint32(chunks[len(chunks)-1].MaxT-hour)
	return AppendChunkQualifier(nil, EncPackedXOR, lo, hi), v
}

// cutCells are the cells of samples (sorted) as the compactor writes an
// hour's float run: one plain chunk cell, or a packed cell of ChunkCount
// chunks; separate puts them in a plain cell each instead, as builds before
// packed cells did.
func cutCells(tb testing.TB, hour int64, samples []Sample, separate bool) []cell {
	n := ChunkCount(len(samples))
	var parts [][]Sample
	for k := range n {
		parts = append(parts, samples[len(samples)*k/n:len(samples)*(k+1)/n])
	}
	if n == 1 || separate {
		var out []cell
		for _, p := range parts {
			out = append(out, chunkCell(tb, hour, p))
		}
		return out
	}
	q, v := packedOf(tb, hour, parts)
	return []cell{{q, v}}
}

func TestPackedRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		samples := randomHourSamples(rng, 1+rng.IntN(700))
		n := 1 + rng.IntN(min(len(samples), 8))
		var parts [][]Sample
		for k := range n {
			parts = append(parts, samples[len(samples)*k/n:len(samples)*(k+1)/n])
		}
		q, v := packedOf(t, testHour, parts)
		if !IsChunkQualifier(q) || IsRawQualifier(q) {
			t.Fatalf("case %d: qualifier %x not a chunk qualifier", i, q)
		}
		chunks, err := AppendCellChunks(nil, testHour, q, v)
		if err != nil || len(chunks) != n {
			t.Fatalf("case %d: %d chunks, %v; want %d", i, len(chunks), err, n)
		}
		var got []Sample
		for k, c := range chunks {
			if c.Encoding != chunkenc.EncXOR || c.MinT != parts[k][0].T || c.MaxT != parts[k][len(parts[k])-1].T || c.NumSamples() != len(parts[k]) {
				t.Fatalf("case %d chunk %d: %s [%d, %d] of %d samples, want [%d, %d] of %d", i, k, c.Encoding, c.MinT, c.MaxT, c.NumSamples(),
					parts[k][0].T, parts[k][len(parts[k])-1].T, len(parts[k]))
			}
			if got, err = AppendChunkSamples(got, c, math.MinInt64, math.MaxInt64); err != nil {
				t.Fatalf("case %d chunk %d: %v", i, k, err)
			}
		}
		if !sameSamples(got, samples) {
			t.Fatalf("case %d: samples differ", i)
		}
	}
}

// TestPackedGolden pins the layout: a change to it must be a new encoding.
func TestPackedGolden(t *testing.T) {
	h := testHour
	q, v := packedOf(t, h, [][]Sample{{{h + 1000, 1}}, {{h + 2000, 2}, {h + 300_000, 3}}})
	wantQ := []byte{0x01, 0x81, 0, 0, 0x03, 0xe8, 0, 0x04, 0x93, 0xe0}
	if !bytes.Equal(q, wantQ) {
		t.Fatalf("qualifier %x, want %x", q, wantQ)
	}
	c1, _ := AppendChunkValue(nil, []Sample{{h + 1000, 1}})
	c2, _ := AppendChunkValue(nil, []Sample{{h + 2000, 2}, {h + 300_000, 3}})
	// gap 0, span 0, length; gap 999 (2000 - 1001), span 298000, length.
	want := append([]byte{0, 0, byte(len(c1))}, c1...)
	want = append(append(want, 0xe7, 0x07, 0x90, 0x98, 0x12, byte(len(c2))), c2...)
	if !bytes.Equal(v, want) {
		t.Fatalf("value %x, want %x", v, want)
	}
}

func TestPackedMalformed(t *testing.T) {
	h := testHour
	q, v := packedOf(t, h, [][]Sample{{{h + 1000, 1}, {h + 1500, 1}}, {{h + 2000, 2}}})
	qual := func(lo, hi uint32) []byte { return AppendChunkQualifier(nil, EncPackedXOR, lo, hi) }
	for _, tc := range []struct {
		name string
		q, v []byte
	}{
		{"empty value", q, nil},
		{"truncated chunk", q, v[:len(v)-1]},
		{"trailing byte", q, append(bytes.Clone(v), 0)},
		{"first not at the qualifier's start", qual(999, 2000), v},
		{"last not at the qualifier's end", qual(1000, 2001), v},
		{"beyond the qualifier's end", qual(1000, 1999), v},
		{"qualifier offsets reversed", qual(2000, 1000), v},
		{"qualifier beyond the hour", qual(1000, HourMillis), v},
		{"bad varint", q, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"huge gap", q, append([]byte{0, 0, 2, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 2}, 0, 0)},
		{"chunk without header", qual(1000, 1000), []byte{0, 0, 1, 0}},
		// The packed and dense encodings with another prefix are no chunk
		// cells (a raw qualifier is 4 bytes; a reader that took the
		// encoding byte alone would read these).
		{"packed encoding, prefix 0", append([]byte{0}, q[1:]...), v},
		{"dense encoding, prefix 2", append([]byte{2, byte(EncDenseFloat)}, q[2:]...), v},
		{"packed encoding, short qualifier", q[:9], v},
	} {
		if _, err := AppendCellChunks(nil, h, tc.q, tc.v); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%s: error %v, want ErrMalformedCell", tc.name, err)
		}
	}
	if _, err := AppendPackedValue(nil, h, []Chunk{{Encoding: chunkenc.EncHistogram, MinT: h, MaxT: h, Data: []byte{0, 1}}}); err == nil {
		t.Error("packed a histogram chunk")
	}
	if _, err := AppendPackedValue(nil, h, []Chunk{{Encoding: chunkenc.EncXOR, MinT: h + 5, MaxT: h + 9, Data: []byte{0, 1}}, {Encoding: chunkenc.EncXOR, MinT: h + 9, MaxT: h + 9, Data: []byte{0, 1}}}); err == nil {
		t.Error("packed overlapping chunks")
	}
}

// FuzzPackedCell: what CellChunks accepts of a packed cell keeps to its
// promise (chunks in time order, inside the qualifier's bounds, the first
// and last at them), and the accepted chunks encode and read back the same.
func FuzzPackedCell(f *testing.F) {
	h := testHour
	q, v := packedOf(f, h, [][]Sample{{{h + 1000, 1}, {h + 1500, 1}}, {{h + 2000, 2}}})
	f.Add(q[2:6], q[6:10], v)
	f.Add([]byte{0, 0, 0, 0}, []byte{0, 0, 0, 0}, []byte{0, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, lo, hi, v []byte) {
		if len(lo) != 4 || len(hi) != 4 {
			return
		}
		q := append(append([]byte{0x01, byte(EncPackedXOR)}, lo...), hi...)
		chunks, err := AppendCellChunks(nil, h, q, v)
		if err != nil {
			return
		}
		minT, maxT := h+int64(binaryBE(lo)), h+int64(binaryBE(hi))
		if len(chunks) == 0 || chunks[0].MinT != minT || chunks[len(chunks)-1].MaxT != maxT {
			t.Fatalf("accepted %d chunks not spanning [%d, %d]", len(chunks), minT, maxT)
		}
		for i, c := range chunks {
			if c.MinT > c.MaxT || c.MaxT >= h+HourMillis || (i > 0 && c.MinT <= chunks[i-1].MaxT) {
				t.Fatalf("chunk %d [%d, %d] out of order or beyond the hour", i, c.MinT, c.MaxT)
			}
			if samples, err := AppendChunkSamples(nil, c, math.MinInt64, math.MaxInt64); err == nil {
				for _, s := range samples {
					if s.T < c.MinT || s.T > c.MaxT {
						t.Fatalf("chunk %d sample at %d outside [%d, %d]", i, s.T, c.MinT, c.MaxT)
					}
				}
			}
		}
		// Overlong varints decode too, so the bytes may differ; the chunks
		// may not.
		again, err := AppendPackedValue(nil, h, chunks)
		if err != nil {
			t.Fatalf("accepted chunks do not encode: %v", err)
		}
		back, err := AppendCellChunks(nil, h, q, again)
		if err != nil || len(back) != len(chunks) {
			t.Fatalf("re-encoded value reads back as %d chunks, %v", len(back), err)
		}
		for i := range back {
			if back[i].MinT != chunks[i].MinT || back[i].MaxT != chunks[i].MaxT || !bytes.Equal(back[i].Data, chunks[i].Data) {
				t.Fatalf("chunk %d differs after a round trip", i)
			}
		}
	})
}

func binaryBE(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// BenchmarkCellChunks: walking a packed cell's two chunks (an hour at 15 s)
// against two plain cells.
func BenchmarkCellChunks(b *testing.B) {
	h := testHour
	samples := hourSamples(rand.New(rand.NewPCG(7, 8)), 2*SamplesPerChunk, h)
	b.Run("packed", func(b *testing.B) {
		c := cutCells(b, h, samples, false)
		b.ReportAllocs()
		var r CellChunks
		for b.Loop() {
			for r.Reset(h, c[0].q, c[0].v); r.Next(); {
			}
			if r.Err() != nil {
				b.Fatal(r.Err())
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		c := cutCells(b, h, samples, true)
		b.ReportAllocs()
		var r CellChunks
		for b.Loop() {
			for _, c := range c {
				for r.Reset(h, c.q, c.v); r.Next(); {
				}
				if r.Err() != nil {
					b.Fatal(r.Err())
				}
			}
		}
	})
}
