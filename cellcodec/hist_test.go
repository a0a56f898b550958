package cellcodec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec/histgen"
)

// drawHistograms draws n samples of one generated series, 15 s apart.
func drawHistograms(rng *rand.Rand, g *histgen.Gen, n int, start int64) []HistogramSample {
	out := make([]HistogramSample, n)
	for i := range out {
		s := g.Next(start + int64(i)*15000)
		out[i] = HistogramSample{T: s.T, H: s.H, FH: s.FH}
	}
	return out
}

func encodeRaw(s HistogramSample) []byte {
	if s.H != nil {
		return AppendHistogramValue(nil, s.H)
	}
	return AppendFloatHistogramValue(nil, s.FH)
}

func TestHistogramValueRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 14))
	n := 0
	for range 50 {
		for _, s := range drawHistograms(rng, histgen.New(rng, true), 40, testHour) {
			v := encodeRaw(s)
			if len(v) == RawValueLen || !IsHistogramValue(v) {
				t.Fatalf("value of %d bytes not told apart from a float", len(v))
			}
			h, fh, err := DecodeHistogramValue(v)
			if err != nil {
				t.Fatalf("%v: %v", s, err)
			}
			if got := (HistogramSample{T: s.T, H: h, FH: fh}); !SameHistogramSample(got, s) {
				t.Fatalf("decoded %v, wrote %v", got, s)
			}
			n++
		}
	}
	// A stale marker with a NaN payload elsewhere, -0 and the custom schema.
	odd := &histogram.FloatHistogram{
		Schema: histogram.CustomBucketsSchema, Sum: math.Float64frombits(histgen.StaleNaN), Count: math.Copysign(0, -1),
		CustomValues: []float64{math.Inf(-1), 0.5}, PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}},
		PositiveBuckets: []float64{math.Float64frombits(0x7ff8000000000001)}, CounterResetHint: histogram.GaugeType,
	}
	_, fh, err := DecodeHistogramValue(AppendFloatHistogramValue(nil, odd))
	if err != nil || !SameFloatHistogram(fh, odd) {
		t.Fatalf("odd float histogram: %v, %v", fh, err)
	}
	t.Logf("%d histograms round-tripped", n)
}

func TestDecodeHistogramValueErrors(t *testing.T) {
	good := AppendHistogramValue(nil, &histogram.Histogram{Schema: 1, Count: 3, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}})
	mut := func(f func(h *histogram.Histogram)) []byte {
		h := &histogram.Histogram{Schema: 1, Count: 3, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}}
		f(h)
		return AppendHistogramValue(nil, h)
	}
	for name, v := range map[string][]byte{
		"float value":                  AppendRawValue(nil, 1),
		"truncated":                    good[:len(good)-1],
		"trailing":                     append(bytes.Clone(good), 0),
		"unknown kind":                 append([]byte{1}, good[1:]...),
		"unknown hint":                 append([]byte{good[0], 9}, good[2:]...),
		"schema 9":                     mut(func(h *histogram.Histogram) { h.Schema = 9 }),
		"schema -5":                    mut(func(h *histogram.Histogram) { h.Schema = -5 }),
		"spans vs buckets":             mut(func(h *histogram.Histogram) { h.PositiveBuckets = h.PositiveBuckets[:1] }),
		"custom values on exponential": mut(func(h *histogram.Histogram) { h.CustomValues = []float64{1} }),
		"negative custom buckets": mut(func(h *histogram.Histogram) {
			h.Schema = histogram.CustomBucketsSchema
			h.NegativeSpans, h.NegativeBuckets = []histogram.Span{{Length: 1}}, []int64{1}
		}),
		"huge count": append(bytes.Clone(good[:len(good)-1]), 0xff, 0xff, 0xff, 0xff, 0x0f),
	} {
		if _, _, err := DecodeHistogramValue(v); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%s: error %v, want ErrMalformedCell", name, err)
		}
	}
}

// cutAll cuts samples into chunk cells as the compactor does and checks
// that each chunk, its hints applied, gives its samples back exactly; it
// returns the chunk count and the samples left raw.
func cutAll(t testing.TB, samples []HistogramSample) (chunks int, raw []HistogramSample, bytesOut int) {
	t.Helper()
	for s := samples; len(s) > 0; {
		enc, data, hints, n := NextHistogramChunk(s)
		if n == 0 {
			raw = append(raw, s[0])
			s = s[1:]
			continue
		}
		v := AppendHistogramChunkValue(nil, data, hints)
		q := AppendChunkQualifier(nil, enc, uint32(s[0].T-testHour), uint32(s[n-1].T-testHour))
		c, err := decodeChunk(testHour, q, v)
		if err != nil {
			t.Fatal(err)
		}
		// Prometheus reads the chunk bytes as its own.
		if x, err := chunkenc.FromData(enc, c.Data); err != nil || x.NumSamples() != n {
			t.Fatalf("chunkenc reads %v", err)
		}
		got, err := AppendChunkHistograms(nil, c, math.MinInt64, math.MaxInt64)
		if err != nil || len(got) != n {
			t.Fatalf("decoded %d of %d: %v", len(got), n, err)
		}
		for i := range got {
			if !SameHistogramSample(got[i], s[i]) {
				t.Fatalf("chunk sample %d: got %v, wrote %v", i, got[i], s[i])
			}
		}
		chunks++
		bytesOut += len(q) + len(v)
		s = s[n:]
	}
	return chunks, raw, bytesOut
}

// TestHistogramChunksExact: random edge-case series cut into chunks come
// back exactly; only stale markers carrying more than their Sum stay raw.
func TestHistogramChunksExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 14))
	var chunks, total int
	for range 100 {
		samples := drawHistograms(rng, histgen.New(rng, true), 1+rng.IntN(240), testHour)
		c, raw, _ := cutAll(t, samples)
		chunks += c
		total += len(samples)
		for _, r := range raw {
			if !r.IsStaleMarker() {
				t.Fatalf("sample left raw though not a stale marker: %v", r)
			}
		}
	}
	t.Logf("%d samples in %d chunks", total, chunks)
}

// TestHistogramChunksRealistic: an exporter's histogram, hints as remote
// write sends them (all unknown), fills chunks as Prometheus's head would.
func TestHistogramChunksRealistic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	samples := drawHistograms(rng, histgen.Realistic(rng, 20), 240, testHour)
	for _, s := range samples {
		s.H.CounterResetHint = histogram.UnknownCounterReset
	}
	chunks, raw, _ := cutAll(t, samples)
	if len(raw) != 0 || chunks > 12 {
		t.Fatalf("240 samples: %d chunks, %d left raw", chunks, len(raw))
	}
}

func TestHistogramChunkCutsOnLayoutChange(t *testing.T) {
	a := &histogram.Histogram{Schema: 0, Count: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}
	b := &histogram.Histogram{Schema: 0, Count: 2, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 0}}
	c := &histogram.Histogram{Schema: 0, Count: 2, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{2}}
	// b adds a bucket: chunkenc would recode a to b's layout. c lacks b's
	// second bucket: chunkenc would insert an empty bucket into c. Both
	// change what reads back, so each starts a chunk.
	s := []HistogramSample{{T: testHour, H: a}, {T: testHour + 1, H: b}, {T: testHour + 2, H: c}}
	if chunks, raw, _ := cutAll(t, s); chunks != 3 || len(raw) != 0 {
		t.Fatalf("%d chunks, %d raw, want 3 chunks", chunks, len(raw))
	}
}

// TestHistogramChunkByteBound: histograms of tens of thousands of buckets,
// which Prometheus's head would put ten to a chunk of megabytes, are cut
// before a chunk passes MaxHistogramChunkBytes, and still come back exactly.
func TestHistogramChunkByteBound(t *testing.T) {
	const buckets, n = 32_000, 24
	rng := rand.New(rand.NewPCG(5, 14))
	counts := make([]int64, buckets)
	var samples []HistogramSample
	for i := range n {
		h := &histogram.Histogram{Schema: 8, PositiveSpans: []histogram.Span{{Offset: 0, Length: buckets}}, PositiveBuckets: make([]int64, buckets)}
		prev := int64(0)
		for j := range counts {
			counts[j] += int64(rng.IntN(1 << 20)) // a counter: no reset
			h.PositiveBuckets[j] = counts[j] - prev
			prev = counts[j]
			h.Count += uint64(counts[j])
		}
		samples = append(samples, HistogramSample{T: testHour + int64(i)*15000, H: h})
	}
	chunks := 0
	for s := samples; len(s) > 0; {
		_, data, _, k := NextHistogramChunk(s)
		if k == 0 {
			t.Fatalf("sample %d fits in no chunk", n-len(s))
		}
		if k > 1 && len(data) > MaxHistogramChunkBytes {
			t.Fatalf("a chunk of %d samples takes %d bytes, more than %d", k, len(data), MaxHistogramChunkBytes)
		}
		if k >= chunkenc.MinSamplesPerHistogramChunk {
			t.Fatalf("a chunk of %d samples of %d buckets: the bound did not cut it", k, buckets)
		}
		chunks++
		s = s[k:]
	}
	if got, raw, _ := cutAll(t, samples); got != chunks || len(raw) != 0 {
		t.Fatalf("cutAll: %d chunks, %d raw; want %d chunks", got, len(raw), chunks)
	}
	t.Logf("%d samples of %d buckets in %d chunks", n, buckets, chunks)
}

func BenchmarkAppendHistogramValue(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 14))
	s := drawHistograms(rng, histgen.Realistic(rng, 20), 1, testHour)[0]
	var dst []byte
	for b.Loop() {
		dst = AppendHistogramValue(dst[:0], s.H)
	}
	b.ReportMetric(float64(len(dst)), "bytes/value")
}

func BenchmarkDecodeHistogramValue(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 14))
	v := encodeRaw(drawHistograms(rng, histgen.Realistic(rng, 20), 1, testHour)[0])
	for b.Loop() {
		if _, _, err := DecodeHistogramValue(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextHistogramChunk cuts an hour of a realistic histogram (15 s
// scrapes) and reports the chunk cells' bytes per sample against the same
// samples in Prometheus chunks cut by size alone.
func BenchmarkNextHistogramChunk(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 14))
	samples := drawHistograms(rng, histgen.Realistic(rng, 20), 240, testHour)
	for _, s := range samples {
		s.H.CounterResetHint = histogram.UnknownCounterReset
	}
	var out int
	for b.Loop() {
		_, _, out = cutAll(b, samples)
	}
	b.ReportMetric(float64(out)/float64(len(samples)), "cellbytes/sample")
	prom := histgen.PromChunkBytes(len(samples), func(i int) (int64, *histogram.Histogram) { return samples[i].T, samples[i].H })
	b.ReportMetric(float64(prom)/float64(len(samples)), "prombytes/sample")
}

// TestCheckHistLayout: the layout check accepts every chunk the builder
// makes (integer, float, custom bounds, many spans) and refuses a layout
// promising more buckets than the chunk has bits.
func TestCheckHistLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	chunks := 0
	for range 300 {
		g := histgen.New(rng, true)
		var hs []HistogramSample
		for i := range 1 + rng.IntN(60) {
			s := g.Next(testHour + int64(i)*15_000)
			hs = append(hs, HistogramSample{T: s.T, H: s.H, FH: s.FH})
		}
		for len(hs) > 0 {
			_, data, _, n := NextHistogramChunk(hs)
			if n == 0 {
				hs = hs[1:] // kept raw
				continue
			}
			if err := checkHistLayout(data); err != nil {
				t.Fatalf("chunk of %d samples refused: %v", n, err)
			}
			chunks++
			hs = hs[n:]
		}
	}
	if chunks < 300 {
		t.Fatalf("only %d chunks checked", chunks)
	}
	// One positive span of 2^25-1 buckets in a chunk of a few bytes: zero
	// threshold 0, schema 0, one span (varbit 10 001), its length (varbit
	// 1111110 and 25 ones), offset 0, no negative span.
	bits := "00000000" + "0" + "10001" + "1111110" + strings.Repeat("1", 25) + "0" + "0" + strings.Repeat("0", 40)
	bad := []byte{0, 1, 0}
	for i := 0; i+8 <= len(bits); i += 8 {
		b, _ := strconv.ParseUint(bits[i:i+8], 2, 8)
		bad = append(bad, byte(b))
	}
	if err := checkHistLayout(bad); !errors.Is(err, ErrMalformedCell) {
		t.Fatalf("huge span accepted: %v", err)
	}
}
