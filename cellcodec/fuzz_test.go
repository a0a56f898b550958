package cellcodec

import (
	"math"
	"runtime"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
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

// FuzzDecodeChunk feeds arbitrary bytes to the chunk cell reader (plain,
// packed or dense cells): it must never panic, and what it accepts must
// hold to the qualifier's promise.
func FuzzDecodeChunk(f *testing.F) {
	h := testHour
	q, v := chunkOf(f, h, []Sample{{h + 1000, 1}, {h + 2000, 2}, {h + 2500, math.Float64frombits(staleNaN)}})
	f.Add(q, v)
	f.Add(AppendChunkQualifier(nil, chunkenc.EncXOR, 0, HourMillis-1), []byte{0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Add(AppendChunkQualifier(nil, chunkenc.EncXOR, 7, 7), []byte{0, 0})
	pq, pv := packedOf(f, h, [][]Sample{{{h + 1000, 1}, {h + 2000, 2}}, {{h + 2500, math.Float64frombits(staleNaN)}}})
	f.Add(pq, pv)
	dq, dv := denseOf(f, h, []Sample{{h + 1000, 1.25}, {h + 2000, 2.5}, {h + 2500, math.Float64frombits(staleNaN)}, {h + 4000, -0.75}})
	f.Add(dq, dv)
	hs := []HistogramSample{
		{T: h + 1, H: &histogram.Histogram{Schema: 0, Count: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}}},
		{T: h + 2, H: &histogram.Histogram{Schema: 0, Count: 2, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{2}}},
	}
	if _, data, hints, n := NextHistogramChunk(hs); n == 2 {
		f.Add(AppendChunkQualifier(nil, chunkenc.EncHistogram, 1, 2), AppendHistogramChunkValue(nil, data, hints))
	} else {
		f.Fatalf("seed chunk holds %d samples", n)
	}
	f.Add(AppendFenceQualifier(nil), []byte{7})
	f.Add(AppendFenceQualifier(nil), []byte{0x81, 0x01})
	f.Add(AppendFenceQualifier(nil), []byte{0x80})
	f.Fuzz(func(t *testing.T, q, v []byte) {
		var r CellChunks
		prev := int64(math.MinInt64)
		for r.Reset(h, q, v); r.Next(); {
			c := r.At()
			if c.MinT <= prev {
				t.Fatalf("chunk [%d, %d] not after the one before it", c.MinT, c.MaxT)
			}
			prev = c.MaxT
			checkFuzzedChunk(t, h, q, v, c)
		}
	})
}

// checkFuzzedChunk checks an accepted chunk c of cell (q, v) of hour h.
func checkFuzzedChunk(t *testing.T, h int64, q, v []byte, c Chunk) {
	t.Helper()
	if c.MinT > c.MaxT || c.MinT < h || c.MaxT >= h+HourMillis {
		t.Fatalf("accepted %+v from qualifier %x", c, q)
	}
	if !c.IsFloat() {
		if c.Encoding != chunkenc.EncHistogram && c.Encoding != chunkenc.EncFloatHistogram {
			t.Fatalf("accepted encoding %s", c.Encoding)
		}
		if len(c.Hints) == 0 || len(c.Data) < histChunkHeaderLen {
			t.Fatalf("accepted a histogram chunk without header or hints: %+v", c)
		}
		// chunkenc sizes its bucket slices from the chunk's layout:
		// checkHistLayout must keep what a corrupt chunk makes it
		// allocate in proportion to the chunk
		// (testdata/fuzz/FuzzDecodeChunk/histogram-chunk-huge-spans).
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		hs, err := AppendChunkHistograms(nil, c, math.MinInt64, math.MaxInt64)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(1<<20+20_000*len(v)) {
			t.Fatalf("decoding a %d-byte histogram chunk allocated %d bytes", len(v), grew)
		}
		if err != nil {
			return
		}
		for i, s := range hs {
			if s.T < c.MinT || s.T > c.MaxT || (i > 0 && s.T <= hs[i-1].T) {
				t.Fatalf("histogram %d at %d: outside [%d, %d] or not ascending", i, s.T, c.MinT, c.MaxT)
			}
		}
		return
	}
	got, err := AppendChunkSamples(nil, c, math.MinInt64, math.MaxInt64)
	if err != nil {
		return
	}
	for i, s := range got {
		if s.T < c.MinT || s.T > c.MaxT || (i > 0 && s.T <= got[i-1].T) {
			t.Fatalf("sample %d at %d: outside [%d, %d] or not ascending", i, s.T, c.MinT, c.MaxT)
		}
	}
}

// FuzzDecodeRow feeds arbitrary qualifier and value bytes to the row
// decoder: it must never panic, and what it accepts must be consistent.
func FuzzDecodeRow(f *testing.F) {
	h := testHour
	q, v := chunkOf(f, h, []Sample{{h + 1000, 1}, {h + 2000, 2}, {h + 2500, math.Float64frombits(staleNaN)}})
	f.Add([]byte{0, 0, 1, 0}, []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2})
	f.Add(q, v)
	dq, dv := denseOf(f, h, []Sample{{h + 1000, 1.25}, {h + 2000, 2.5}, {h + 2500, math.Float64frombits(staleNaN)}})
	f.Add(dq, dv)
	f.Add([]byte{1, 1}, []byte{0, 5, 0xff, 0xff, 0xff})
	f.Add([]byte{}, []byte{})
	f.Add(AppendFenceQualifier(nil), []byte{7})
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
		if len(samples) == 0 {
			return
		}
		for _, separate := range []bool{false, true} {
			cells := testCells(cutCells(t, h, samples, separate))
			got, err := AppendRowSamples(nil, h, cells, math.MinInt64, math.MaxInt64)
			if err != nil || !sameSamples(got, samples) {
				t.Fatalf("separate %v: got %v, %v; want %v", separate, got, err, samples)
			}
		}
	})
}

// FuzzDecodeHistogramValue feeds arbitrary bytes to the raw histogram
// decoder: it must never panic, and what it accepts must encode back to the
// same bytes and go through the chunk cutter without a panic.
func FuzzDecodeHistogramValue(f *testing.F) {
	f.Add(AppendHistogramValue(nil, &histogram.Histogram{Schema: 3, Count: 2, ZeroCount: 1, PositiveSpans: []histogram.Span{{Offset: -1, Length: 1}}, PositiveBuckets: []int64{1}}))
	f.Add(AppendFloatHistogramValue(nil, &histogram.FloatHistogram{Schema: -53, Count: 1, CustomValues: []float64{1, 2}, PositiveSpans: []histogram.Span{{Offset: 2, Length: 1}}, PositiveBuckets: []float64{1}}))
	f.Add(AppendHistogramValue(nil, &histogram.Histogram{Sum: math.Float64frombits(staleNaN)}))
	f.Fuzz(func(t *testing.T, v []byte) {
		h, fh, err := DecodeHistogramValue(v)
		if err != nil {
			return
		}
		s := HistogramSample{T: testHour, H: h, FH: fh}
		var again []byte
		if h != nil {
			again = AppendHistogramValue(nil, h)
		} else {
			again = AppendFloatHistogramValue(nil, fh)
		}
		h2, fh2, err := DecodeHistogramValue(again)
		if err != nil || !SameHistogramSample(HistogramSample{T: testHour, H: h2, FH: fh2}, s) {
			t.Fatalf("re-encoded value decodes differently: %v", err)
		}
		if _, data, hints, n := NextHistogramChunk([]HistogramSample{s, {T: testHour + 1, H: h, FH: fh}}); n > 0 {
			c := Chunk{Encoding: chunkenc.EncHistogram, MinT: testHour, MaxT: testHour + int64(n) - 1, Data: data, Hints: hints}
			if fh != nil {
				c.Encoding = chunkenc.EncFloatHistogram
			}
			if _, err := AppendChunkHistograms(nil, c, math.MinInt64, math.MaxInt64); err != nil {
				t.Fatalf("chunk of accepted samples does not decode: %v", err)
			}
		}
	})
}
