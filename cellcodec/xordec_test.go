package cellcodec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// chunkencSamples is the reference reader: chunkenc's iterator, failing on
// samples not strictly ascending as AppendChunkSamples does (which also
// fails on a first sample at math.MinInt64, outside every chunk's bounds).
func chunkencSamples(data []byte, mint, maxt int64) ([]Sample, error) {
	if len(data) < chunkHeaderLen {
		return nil, errors.New("no header")
	}
	var c chunkenc.XORChunk
	c.Reset(data)
	it := c.Iterator(nil)
	var out []Sample
	for n := 0; it.Next() == chunkenc.ValFloat; n++ {
		t, v := it.At()
		if n > 0 && t <= out[len(out)-1].T {
			return nil, fmt.Errorf("sample %d at %d not after %d", n+1, t, out[len(out)-1].T)
		}
		out = append(out, Sample{T: t, V: v})
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(s Sample) bool { return s.T < mint || s.T > maxt }), nil
}

// checkXORSamples fails unless AppendXORSamples reads data as chunkenc's
// iterator does, after dst's own samples: the same samples, or an error
// where the iterator fails. It may also fail where the iterator reads what
// lies past the chunk's end; then the chunk followed by zeros must read as
// the iterator read it, unless the iterator's result depends on what
// follows (then the chunk is cut, and the iterator read garbage).
func checkXORSamples(t *testing.T, data []byte, mint, maxt int64) {
	t.Helper()
	prefix := Sample{T: 42, V: 42}
	got, err := AppendXORSamples([]Sample{prefix}, data, mint, maxt)
	want, wantErr := chunkencSamples(data, mint, maxt)
	if len(got) == 0 || got[0] != prefix {
		t.Fatalf("chunk %x: dst's samples overwritten: %v", data, got)
	}
	if err == nil {
		if wantErr != nil || !sameSamples(got[1:], want) {
			t.Fatalf("chunk %x [%d, %d]: read\n%v\nchunkenc: %v, %v", data, mint, maxt, got[1:], want, wantErr)
		}
		return
	}
	if !errors.Is(err, ErrMalformedCell) || len(got) != 1 {
		t.Fatalf("chunk %x: failed with %d samples appended: %v", data, len(got)-1, err)
	}
	if wantErr != nil || !readsOnlyItsBytes(data, mint, maxt, want) {
		return
	}
	// Only bits that change nothing may be missing: significant bits under
	// a corrupt window, whose shift is 64 or more.
	padded, err := AppendXORSamples(nil, append(slices.Clone(data), make([]byte, 32)...), mint, maxt)
	if err != nil || !sameSamples(padded, want) {
		t.Fatalf("chunk %x [%d, %d]: failed (%v) where chunkenc read only its bytes:\n%v", data, mint, maxt, err, want)
	}
}

// readsOnlyItsBytes reports whether chunkenc's iterator reads data as want
// whatever bytes follow it.
func readsOnlyItsBytes(data []byte, mint, maxt int64, want []Sample) bool {
	for _, pad := range []byte{0, 0xff} {
		got, err := chunkencSamples(append(slices.Clone(data), bytes.Repeat([]byte{pad}, 32)...), mint, maxt)
		if err != nil || !sameSamples(got, want) {
			return false
		}
	}
	return true
}

func TestAppendXORSamplesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for tname, ts := range timeShapes {
		for vname, vs := range valueShapes {
			for _, n := range []int{1, 2, 3, 4, 33, 34, SamplesPerChunk, 1 + rng.IntN(1000)} {
				tv, vv := ts(rng, n), vs(rng, n)
				samples := make([]Sample, n)
				for i := range samples {
					samples[i] = Sample{T: tv[i], V: math.Float64frombits(vv[i])}
				}
				data := AppendXORChunk(nil, samples)
				got, err := AppendXORSamples(nil, data, math.MinInt64, math.MaxInt64)
				if err != nil || !sameSamples(got, samples) {
					t.Fatalf("%s times, %s values, %d samples: %v", tname, vname, n, err)
				}
				lo, hi := tv[rng.IntN(n)], tv[rng.IntN(n)]
				checkXORSamples(t, data, min(lo, hi), max(lo, hi))
				checkXORSamples(t, data, max(lo, hi)+1, min(lo, hi)) // Empty.
			}
		}
	}
}

func TestAppendXORSamplesFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	tv, vv := timeShapes["jitter"](rng, MaxChunkSamples), valueShapes["mixed"](rng, MaxChunkSamples)
	samples := make([]Sample, MaxChunkSamples)
	for i := range samples {
		samples[i] = Sample{T: tv[i], V: math.Float64frombits(vv[i])}
	}
	got, err := AppendXORSamples(nil, AppendXORChunk(nil, samples), math.MinInt64, math.MaxInt64)
	if err != nil || !sameSamples(got, samples) {
		t.Fatal(err)
	}
}

// TestAppendXORSamplesCut reads realistic chunks cut at every length and
// with bits flipped, which chunkenc often reads without an error.
func TestAppendXORSamplesCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, kind := range realisticKinds {
		for _, n := range []int{2, 3, 40, SamplesPerChunk} {
			data := AppendXORChunk(nil, realisticSamples(rng, kind, n, 1_700_000_000_000))
			for l := range len(data) {
				checkXORSamples(t, data[:l], math.MinInt64, math.MaxInt64)
			}
			for range 200 {
				flipped := slices.Clone(data)
				flipped[2+rng.IntN(len(data)-2)] ^= 1 << rng.IntN(8)
				checkXORSamples(t, flipped, math.MinInt64, math.MaxInt64)
			}
		}
	}
}

func TestAppendXORSamplesErrors(t *testing.T) {
	two := AppendXORChunk(nil, []Sample{{T: 1, V: 1}, {T: 2, V: 2}})
	for _, tc := range []struct {
		name string
		data []byte
		// chunkencReads: chunkenc's iterator reads the chunk, from bits
		// past its end.
		chunkencReads bool
	}{
		{name: "no header", data: []byte{0}},
		{name: "no first sample", data: []byte{0, 1}},
		{name: "first value cut", data: []byte{0, 1, 2, 0, 0, 0}, chunkencReads: true},
		{name: "overlong first time", data: append([]byte{0, 1}, bytes.Repeat([]byte{0x80}, 11)...)},
		{name: "no second delta", data: append([]byte{0, 2}, two[2:12]...)},
		{name: "count beyond the samples", data: append([]byte{0, 100}, two[2:]...)},
		{name: "not ascending", data: AppendXORChunk(nil, []Sample{{T: 10, V: 1}, {T: 20, V: 2}, {T: 15, V: 3}})},
		{name: "same time twice", data: AppendXORChunk(nil, []Sample{{T: 10, V: 1}, {T: 10, V: 2}})},
	} {
		got, err := AppendXORSamples([]Sample{{T: 1, V: 1}}, tc.data, math.MinInt64, math.MaxInt64)
		if !errors.Is(err, ErrMalformedCell) || len(got) != 1 {
			t.Errorf("%s: %v, %d samples", tc.name, err, len(got))
		}
		if _, err := chunkencSamples(tc.data, math.MinInt64, math.MaxInt64); (err == nil) != tc.chunkencReads {
			t.Errorf("%s: chunkenc: %v", tc.name, err)
		}
	}
}

func TestAppendXORSamplesAllocs(t *testing.T) {
	for _, kind := range realisticKinds {
		data := AppendXORChunk(nil, realisticSamples(rand.New(rand.NewPCG(27, 28)), kind, SamplesPerChunk, 1_700_000_000_000))
		dst := make([]Sample, 0, SamplesPerChunk)
		if allocs := testing.AllocsPerRun(100, func() {
			var err error
			if dst, err = AppendXORSamples(dst[:0], data, math.MinInt64, math.MaxInt64); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%s: %v allocations per chunk into a large enough dst", kind, allocs)
		}
	}
}

// FuzzXORSamples feeds arbitrary bytes to AppendXORSamples: it must never
// panic, and read them as chunkenc's iterator does (checkXORSamples).
func FuzzXORSamples(f *testing.F) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, kind := range realisticKinds {
		data := AppendXORChunk(nil, realisticSamples(rng, kind, SamplesPerChunk, 1_700_000_000_000))
		f.Add(data, int64(math.MinInt64), int64(math.MaxInt64))
		f.Add(data[:len(data)-1], int64(1_700_000_100_000), int64(1_700_001_000_000))
	}
	f.Fuzz(func(t *testing.T, data []byte, mint, maxt int64) {
		checkXORSamples(t, data, mint, maxt)
	})
}
