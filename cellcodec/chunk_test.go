package cellcodec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

func randomSamples(rng *rand.Rand, n int, start int64) []Sample {
	s := make([]Sample, n)
	t := start
	for i := range s {
		t += 1 + rng.Int64N(30000)
		v := rng.NormFloat64() * 1000
		switch rng.IntN(10) {
		case 0:
			v = math.Float64frombits(staleNaN)
		case 1:
			v = math.Float64frombits(rng.Uint64())
		case 2:
			v = float64(i)
		case 3:
			v = math.Copysign(0, -1)
		}
		s[i] = Sample{T: t, V: v}
	}
	return s
}

// hourSamples are n random samples inside the hour starting at hour.
func hourSamples(rng *rand.Rand, n int, hour int64) []Sample {
	s := randomSamples(rng, n, hour)
	step := HourMillis / int64(n+1)
	for i := range s {
		s[i].T = hour + int64(i)*step + rng.Int64N(step)
	}
	return s
}

func sameSamples(a, b []Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].T != b[i].T || math.Float64bits(a[i].V) != math.Float64bits(b[i].V) {
			return false
		}
	}
	return true
}

// chunkOf encodes samples of the hour starting at hour as a chunk cell.
func chunkOf(tb testing.TB, hour int64, samples []Sample) (q, v []byte) {
	tb.Helper()
	v, err := AppendChunkValue(nil, samples)
	if err != nil {
		tb.Fatal(err)
	}
	lo, hi := uint32(0), uint32(0)
	if len(samples) > 0 {
		lo, hi = uint32(samples[0].T-hour), uint32(samples[len(samples)-1].T-hour)
	}
	return AppendChunkQualifier(nil, chunkenc.EncXOR, lo, hi), v
}

func TestChunkQualifierGolden(t *testing.T) {
	q := AppendChunkQualifier([]byte{0xaa}, chunkenc.EncXOR, 15000, 3599_999)
	want := []byte{0xaa, 0x01, 0x01, 0x00, 0x00, 0x3a, 0x98, 0x00, 0x36, 0xee, 0x7f}
	if !bytes.Equal(q, want) {
		t.Fatalf("qualifier %x, want %x", q, want)
	}
	if len(q)-1 != ChunkQualifierLen || !IsChunkQualifier(q[1:]) || IsRawQualifier(q[1:]) {
		t.Fatalf("qualifier %x misclassified", q[1:])
	}
	// The encoding byte is chunkenc's: histogram chunks get their own.
	if q := AppendChunkQualifier(nil, chunkenc.EncHistogram, 0, 0); q[1] != 2 {
		t.Fatalf("histogram encoding byte %d", q[1])
	}
}

func TestChunkRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 120, 1000, MaxChunkSamples} {
		samples := randomSamples(rng, n, 1_700_000_000_000)
		val, err := AppendChunkValue([]byte("x"), samples)
		if err != nil {
			t.Fatalf("%d samples: %v", n, err)
		}
		val = val[1:]
		// Prometheus reads it as its own XOR chunk.
		c, err := chunkenc.FromData(chunkenc.EncXOR, val)
		if err != nil || c.NumSamples() != n {
			t.Fatalf("%d samples: chunkenc reads %v samples, %v", n, c.NumSamples(), err)
		}
		ch := Chunk{Encoding: chunkenc.EncXOR, MinT: samples[0].T, MaxT: samples[n-1].T, Data: val}
		if ch.NumSamples() != n {
			t.Fatalf("header says %d samples, want %d", ch.NumSamples(), n)
		}
		var got []Sample
		got, err = AppendChunkSamples(nil, ch, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatalf("%d samples: decode: %v", n, err)
		}
		if !sameSamples(got, samples) {
			t.Fatalf("%d samples: decoded samples differ", n)
		}
		// Trimmed to a part of the range.
		mid := samples[n/2].T
		got, err = AppendChunkSamples(got[:0], ch, mid, mid)
		if err != nil || len(got) != 1 || got[0].T != mid {
			t.Fatalf("%d samples: trimmed to %d: %v, %v", n, mid, got, err)
		}
		// Trimmed to random ranges, some reaching past either end, after
		// samples already in dst.
		for range 20 {
			lo := samples[0].T - 5 + rng.Int64N(samples[n-1].T-samples[0].T+10)
			hi := lo + rng.Int64N(samples[n-1].T-samples[0].T+10)
			var want []Sample
			for _, s := range samples {
				if s.T >= lo && s.T <= hi {
					want = append(want, s)
				}
			}
			got, err = AppendChunkSamples(append(got[:0], Sample{T: -1}), ch, lo, hi)
			if err != nil || !sameSamples(got[1:], want) || got[0].T != -1 {
				t.Fatalf("%d samples in [%d, %d]: %d samples, want %d; %v", n, lo, hi, len(got)-1, len(want), err)
			}
		}
	}
}

// A chunk cut anywhere before its end fails rather than decode as other
// samples (chunkenc's iterator reads zeros past the end of a cut chunk).
func TestChunkSamplesCutFails(t *testing.T) {
	samples := randomSamples(rand.New(rand.NewPCG(5, 6)), 50, 1_700_000_000_000)
	v, err := AppendChunkValue(nil, samples)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(v); n++ {
		c := Chunk{Encoding: chunkenc.EncXOR, MinT: samples[0].T, MaxT: samples[len(samples)-1].T, Data: v[:n]}
		if got, err := AppendChunkSamples(nil, c, math.MinInt64, math.MaxInt64); !errors.Is(err, ErrMalformedCell) {
			t.Fatalf("chunk of %d bytes cut to %d: %d samples, error %v; want ErrMalformedCell", len(v), n, len(got), err)
		}
	}
}

func TestDecodeChunk(t *testing.T) {
	h := testHour
	samples := []Sample{{h + 1000, 1}, {h + 2000, math.Float64frombits(staleNaN)}, {h + HourMillis - 1, -1}}
	q, v := chunkOf(t, h, samples)
	c, err := decodeChunk(h, q, v)
	if err != nil {
		t.Fatal(err)
	}
	if c.Encoding != chunkenc.EncXOR || c.MinT != h+1000 || c.MaxT != h+HourMillis-1 || &c.Data[0] != &v[0] || c.NumSamples() != 3 {
		t.Fatalf("decoded %+v", c)
	}
	for _, tc := range []struct {
		name   string
		q, val []byte
	}{
		{"short qualifier", q[:9], v},
		{"long qualifier", append(q[:10:10], 0), v},
		{"raw qualifier", AppendRawQualifier(nil, 5), v},
		{"XOR2 encoding", AppendChunkQualifier(nil, 4, 0, 1), v},
		{"histogram without its header", AppendChunkQualifier(nil, chunkenc.EncHistogram, 0, 1), v[:2]},
		{"unknown encoding", AppendChunkQualifier(nil, 99, 0, 1), v},
		{"min after max", AppendChunkQualifier(nil, chunkenc.EncXOR, 2, 1), v},
		{"max beyond the hour", AppendChunkQualifier(nil, chunkenc.EncXOR, 0, HourMillis), v},
		{"no header", q, v[:1]},
	} {
		if _, err := decodeChunk(h, tc.q, tc.val); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%s: error %v, want ErrMalformedCell", tc.name, err)
		}
	}
}

func TestAppendChunkValueErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
	}{
		{"duplicate time", []Sample{{1, 1}, {1, 2}}},
		{"unsorted", []Sample{{2, 1}, {1, 2}}},
		{"too many", make([]Sample, MaxChunkSamples+1)},
	} {
		dst := []byte{9}
		got, err := AppendChunkValue(dst, tc.samples)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		if len(got) != 1 {
			t.Errorf("%s: dst changed on error", tc.name)
		}
	}
}

func TestChunkSamplesErrors(t *testing.T) {
	h := testHour
	samples := hourSamples(rand.New(rand.NewPCG(5, 6)), 50, h)
	q, v := chunkOf(t, h, samples)
	good, err := decodeChunk(h, q, v)
	if err != nil {
		t.Fatal(err)
	}
	narrow := good
	narrow.MaxT-- // the qualifier claims less than the chunk holds
	late := good
	late.MinT++
	for _, tc := range []struct {
		name string
		c    Chunk
	}{
		{"unknown encoding", Chunk{Encoding: chunkenc.EncHistogram, Data: v}},
		{"no header", Chunk{Encoding: chunkenc.EncXOR, Data: v[:1]}},
		{"truncated", Chunk{Encoding: chunkenc.EncXOR, MinT: good.MinT, MaxT: good.MaxT, Data: v[:5]}},
		{"sample after MaxT", narrow},
		{"sample before MinT", late},
	} {
		dst := []Sample{{1, 1}}
		got, err := AppendChunkSamples(dst, tc.c, math.MinInt64, math.MaxInt64)
		if !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%s: error %v, want ErrMalformedCell", tc.name, err)
		}
		if len(got) != 1 {
			t.Errorf("%s: dst has %d samples after an error", tc.name, len(got))
		}
	}
}

func TestChunkCount(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{0, 0}, {1, 1}, {120, 1}, {121, 2}, {240, 2}, {360, 3}, {3600, 30}} {
		if got := ChunkCount(tc.n); got != tc.want {
			t.Errorf("ChunkCount(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestChunkSamplesAllocs(t *testing.T) {
	h := testHour
	q, v := chunkOf(t, h, hourSamples(rand.New(rand.NewPCG(9, 9)), 120, h))
	c, err := decodeChunk(h, q, v)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]Sample, 0, 128)
	if allocs := testing.AllocsPerRun(100, func() {
		dst, err = AppendChunkSamples(dst[:0], c, math.MinInt64, math.MaxInt64)
		if err != nil || len(dst) != 120 {
			t.Fatal(len(dst), err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per chunk decoded", allocs)
	}
}

func BenchmarkAppendChunkValue(b *testing.B) {
	samples := randomSamples(rand.New(rand.NewPCG(7, 8)), SamplesPerChunk, 0)
	var dst []byte
	for b.Loop() {
		var err error
		if dst, err = AppendChunkValue(dst[:0], samples); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeChunk(b *testing.B) {
	h := testHour
	q, v := chunkOf(b, h, hourSamples(rand.New(rand.NewPCG(7, 8)), SamplesPerChunk, h))
	for b.Loop() {
		if _, err := decodeChunk(h, q, v); err != nil {
			b.Fatal(err)
		}
	}
}
