package cellcodec

import (
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
		}
		s[i] = Sample{T: t, V: v}
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

func TestChunkRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 3, 120, 1000, MaxChunkSamples} {
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
		got, err := appendChunkSamples(nil, AppendChunkQualifier(nil), val, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatalf("%d samples: decode: %v", n, err)
		}
		if !sameSamples(got, samples) {
			t.Fatalf("%d samples: decoded samples differ", n)
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

func TestChunkDecodeErrors(t *testing.T) {
	val, err := AppendChunkValue(nil, randomSamples(rand.New(rand.NewPCG(5, 6)), 50, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		q, val []byte
	}{
		{"unknown encoding", []byte{1, byte(chunkenc.EncHistogram)}, val},
		{"no header", AppendChunkQualifier(nil), val[:1]},
		// XOR chunks carry no checksum and tolerate some truncation (missing
		// bits read as zeros); a chunk cut inside its first sample fails.
		{"truncated", AppendChunkQualifier(nil), val[:5]},
	} {
		if _, err := appendChunkSamples(nil, tc.q, tc.val, math.MinInt64, math.MaxInt64); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%s: error %v, want ErrMalformedCell", tc.name, err)
		}
	}
}

func BenchmarkAppendChunkValue(b *testing.B) {
	samples := randomSamples(rand.New(rand.NewPCG(7, 8)), 240, 0)
	var dst []byte
	for b.Loop() {
		var err error
		if dst, err = AppendChunkValue(dst[:0], samples); err != nil {
			b.Fatal(err)
		}
	}
}
