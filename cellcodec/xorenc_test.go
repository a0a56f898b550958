package cellcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// checkXORIdentical fails unless AppendXORChunk writes samples as chunkenc
// does, after dst's own bytes, and chunkenc's iterator gives them back bit
// for bit.
func checkXORIdentical(t *testing.T, name string, samples []Sample) {
	t.Helper()
	want := chunkencAppend(t, nil, samples)
	prefix := []byte("prefix")
	got := AppendXORChunk(append([]byte(nil), prefix...), samples)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%s: dst's bytes overwritten: %x", name, got)
	}
	if got = got[len(prefix):]; !bytes.Equal(got, want) {
		at := 0
		for at < min(len(got), len(want)) && got[at] == want[at] {
			at++
		}
		t.Fatalf("%s: %d samples: %d bytes differ from chunkenc's %d from byte %d:\ngot  %x\nwant %x",
			name, len(samples), len(got), len(want), at, got[at:min(len(got), at+32)], want[at:min(len(want), at+32)])
	}
	checkXORSpareUntouched(t, name, samples, want)
	var c chunkenc.XORChunk
	c.Reset(got)
	it := c.Iterator(nil)
	i := 0
	for ; it.Next() == chunkenc.ValFloat; i++ {
		ts, v := it.At()
		if i >= len(samples) || ts != samples[i].T || math.Float64bits(v) != math.Float64bits(samples[i].V) {
			t.Fatalf("%s: sample %d decoded as (%d, %#x)", name, i, ts, math.Float64bits(v))
		}
	}
	if it.Err() != nil || i != len(samples) {
		t.Fatalf("%s: %d of %d samples decoded: %v", name, i, len(samples), it.Err())
	}
}

// checkXORSpareUntouched fails unless AppendXORChunk, given room enough
// past dst's bytes, writes want there and not one byte past it: the encoder
// reserves room for the worst case and must not write beyond the chunk.
func checkXORSpareUntouched(t *testing.T, name string, samples []Sample, want []byte) {
	t.Helper()
	const head, sentinel = 3, 0xa5
	room := make([]byte, head+32*len(samples)+64)
	for i := range room {
		room[i] = sentinel
	}
	got := AppendXORChunk(room[:head], samples)
	if &got[0] != &room[0] {
		t.Fatalf("%s: %d samples: %d bytes of room were not enough", name, len(samples), len(room))
	}
	if !bytes.Equal(got[head:], want) {
		t.Fatalf("%s: %d samples: written into spare room, %x differs from chunkenc's %x", name, len(samples), got[head:], want)
	}
	for i := len(got); i < len(room); i++ {
		if room[i] != sentinel {
			t.Fatalf("%s: %d samples: byte %d past the %d-byte chunk written", name, len(samples), i-len(got), len(got)-head)
		}
	}
}

// dodEdges are delta-of-deltas at and beside the edges of chunkenc's buckets,
// which hold -(2^(n-1)-1) .. 2^(n-1) for n = 14, 17, 20.
var dodEdges = []int64{
	0, 1, -1,
	-8191, 8192, -8192, 8193,
	-65535, 65536, -65536, 65537,
	-524287, 524288, -524288, 524289,
	1 << 40, -(1 << 40), math.MaxInt32, math.MinInt32,
}

// specialValues are the bit patterns an encoder is likeliest to get wrong.
var specialValues = []uint64{
	staleNaN, 0x7ff8000000000001, 0xfff8000000000000, 0x7fffffffffffffff, 0xffffffffffffffff,
	math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1)),
	0, 1 << 63, // +0, -0
	1, 0x000fffffffffffff, 0x8000000000000001, // subnormals
	math.Float64bits(math.MaxFloat64), math.Float64bits(1), math.Float64bits(-1),
}

// timeShapes make n strictly ascending timestamps each.
var timeShapes = map[string]func(rng *rand.Rand, n int) []int64{
	"regular": func(rng *rand.Rand, n int) []int64 {
		return beat(1_700_000_000_000, 15000, n, func() int64 { return 0 })
	},
	"jitter": func(rng *rand.Rand, n int) []int64 {
		return beat(1_700_000_000_000, 15000, n, func() int64 { return rng.Int64N(41) - 20 })
	},
	"negative": func(rng *rand.Rand, n int) []int64 {
		step := 2 + rng.Int64N(60000)
		return beat(-1_700_000_000_000-rng.Int64N(1<<40), step, n, func() int64 { return rng.Int64N(step / 2) })
	},
	"random": func(rng *rand.Rand, n int) []int64 {
		return beat(rng.Int64N(1<<42), 30000, n, func() int64 { return rng.Int64N(30000) })
	},
	// Every dod at a bucket's edge or beside it, huge ones followed by
	// their opposite so that deltas stay positive.
	"edges": func(rng *rand.Rand, n int) []int64 {
		ts := make([]int64, n)
		t, delta, pending := int64(-1<<45), int64(1<<41), int64(0)
		for i := range ts {
			ts[i] = t
			dod := dodEdges[rng.IntN(len(dodEdges))]
			if pending != 0 {
				dod, pending = pending, 0
			} else if dod > 1<<20 || dod < -(1<<20) {
				pending = -dod
			}
			delta += dod
			t += delta
		}
		return ts
	},
	// Anywhere in int64: deltas beyond MaxInt64 wrap in chunkenc's uint64.
	"anywhere": func(rng *rand.Rand, n int) []int64 {
		ts := make([]int64, n)
		step := math.MaxUint64 / uint64(n)
		for i := range ts {
			ts[i] = math.MinInt64 + int64(uint64(i)*step+rng.Uint64N(step))
		}
		return ts
	},
	"extremes": func(rng *rand.Rand, n int) []int64 {
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = math.MinInt64 + int64(i)
			if i >= n/2 {
				ts[i] = math.MaxInt64 - int64(n-1-i)
			}
		}
		return ts
	},
}

// beat returns n timestamps step apart from start, each moved by jitter()
// (0 <= |jitter()| < step/2).
func beat(start, step int64, n int, jitter func() int64) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = start + int64(i)*step + jitter()
	}
	return ts
}

// valueShapes make n values each, as bits.
var valueShapes = map[string]func(rng *rand.Rand, n int) []uint64{
	"counter2dec": func(rng *rand.Rand, n int) []uint64 {
		return shapeOf(realisticSamples(rng, "counter2dec", n, 0))
	},
	"intgauge": func(rng *rand.Rand, n int) []uint64 {
		return shapeOf(realisticSamples(rng, "intgauge", n, 0))
	},
	"constant": func(rng *rand.Rand, n int) []uint64 {
		return xorWalk(rng, n, func(uint64) uint64 { return 0 })
	},
	"special": func(rng *rand.Rand, n int) []uint64 {
		vs := make([]uint64, n)
		for i := range vs {
			vs[i] = specialValues[rng.IntN(len(specialValues))]
		}
		return vs
	},
	"randombits": func(rng *rand.Rand, n int) []uint64 {
		return xorWalk(rng, n, func(uint64) uint64 { return rng.Uint64() })
	},
	// XORs with >= 32 leading zeros: the 5-bit cap at 31.
	"lowbits": func(rng *rand.Rand, n int) []uint64 {
		return xorWalk(rng, n, func(uint64) uint64 { return rng.Uint64N(1 << (1 + rng.IntN(32))) })
	},
	// XORs of all 64 bits: sigbits written as 0.
	"full": func(rng *rand.Rand, n int) []uint64 {
		return xorWalk(rng, n, func(uint64) uint64 { return 1<<63 | 1 | rng.Uint64() })
	},
	// Windows that shrink and grow, and repeats between them.
	"windows": func(rng *rand.Rand, n int) []uint64 {
		return xorWalk(rng, n, func(uint64) uint64 {
			if rng.IntN(4) == 0 {
				return 0
			}
			lead, trail := rng.IntN(64), rng.IntN(64)
			if lead+trail > 63 {
				lead, trail = 63-trail, 63-lead
			}
			sig := 64 - lead - trail
			return (1<<(sig-1) | rng.Uint64N(1<<(sig-1)) | 1) << trail
		})
	},
	"mixed": func(rng *rand.Rand, n int) []uint64 {
		return xorWalk(rng, n, func(prev uint64) uint64 {
			switch rng.IntN(5) {
			case 0:
				return prev ^ specialValues[rng.IntN(len(specialValues))]
			case 1:
				return prev ^ math.Float64bits(float64(rng.IntN(1000)))
			case 2:
				return 0
			default:
				return rng.Uint64() >> rng.IntN(64) << rng.IntN(64)
			}
		})
	},
}

func shapeOf(samples []Sample) []uint64 {
	vs := make([]uint64, len(samples))
	for i, s := range samples {
		vs[i] = math.Float64bits(s.V)
	}
	return vs
}

// xorWalk returns n values from a random one, each the one before it XORed
// with next(it).
func xorWalk(rng *rand.Rand, n int, next func(prev uint64) uint64) []uint64 {
	vs := make([]uint64, n)
	v := rng.Uint64()
	for i := range vs {
		vs[i] = v
		v ^= next(v)
	}
	return vs
}

func TestAppendXORChunkIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	checkXORIdentical(t, "empty", nil)
	for tname, ts := range timeShapes {
		for vname, vs := range valueShapes {
			for _, n := range []int{1, 2, 3, 4, 5, 17, SamplesPerChunk, 121, 1 + rng.IntN(1000)} {
				for range 20 {
					tv, vv := ts(rng, n), vs(rng, n)
					samples := make([]Sample, n)
					for i := range samples {
						samples[i] = Sample{T: tv[i], V: math.Float64frombits(vv[i])}
					}
					checkXORIdentical(t, fmt.Sprintf("%s times, %s values", tname, vname), samples)
				}
			}
		}
	}
}

// TestAppendXORChunkFull fills chunks to MaxChunkSamples, the most a
// chunk's 16-bit count holds.
func TestAppendXORChunkFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, shape := range [][2]string{{"edges", "windows"}, {"jitter", "counter2dec"}, {"anywhere", "mixed"}} {
		tv, vv := timeShapes[shape[0]](rng, MaxChunkSamples), valueShapes[shape[1]](rng, MaxChunkSamples)
		samples := make([]Sample, MaxChunkSamples)
		for i := range samples {
			samples[i] = Sample{T: tv[i], V: math.Float64frombits(vv[i])}
		}
		checkXORIdentical(t, shape[0]+" times, "+shape[1]+" values", samples)
	}
}

func TestAppendXORChunkAllocs(t *testing.T) {
	samples := realisticSamples(rand.New(rand.NewPCG(15, 16)), "counter2dec", SamplesPerChunk, 1_700_000_000_000)
	dst := AppendXORChunk(nil, samples)
	if allocs := testing.AllocsPerRun(100, func() { dst = AppendXORChunk(dst[:0], samples) }); allocs != 0 {
		t.Errorf("%v allocations per chunk into a large enough dst", allocs)
	}
}

// fuzzSamples turns arbitrary bytes into strictly ascending samples (at most
// MaxChunkSamples): 8 bytes of first timestamp, then per sample a control
// byte whose low 3 bits choose how the timestamp moves and the next 3 how the
// value does, each reading its operands from the bytes that follow.
func fuzzSamples(data []byte) []Sample {
	next := func(n int) uint64 {
		var u uint64
		for range n {
			u <<= 8
			if len(data) > 0 {
				u |= uint64(data[0])
				data = data[1:]
			}
		}
		return u
	}
	t := int64(next(8))
	var delta int64
	var v uint64
	var samples []Sample
	for len(data) > 0 && len(samples) < MaxChunkSamples {
		c := next(1)
		var dod int64
		switch c & 7 {
		case 1:
			dod = int64(int8(next(1)))
		case 2:
			dod = dodEdges[next(1)%uint64(len(dodEdges))]
		case 3:
			dod = int64(int16(next(2))) << (next(1) % 8)
		case 4:
			dod = int64(int32(next(4)))
		case 5: // a delta of any size, the wrapping kind among them.
			dod = int64(next(8)) - delta
		}
		if len(samples) > 0 {
			// Wrapping sums: a delta beyond MaxInt64 is fine as long
			// as the new time is after t.
			delta += dod
			nt := t + delta
			if nt <= t {
				if t == math.MaxInt64 {
					break
				}
				nt = t + 1
			}
			delta, t = nt-t, nt
		}
		switch c >> 3 & 7 {
		case 1:
			v = specialValues[next(1)%uint64(len(specialValues))]
		case 2:
			v = next(8)
		case 3:
			v ^= next(1) << (next(1) % 64)
		case 4:
			v ^= next(8)
		case 5:
			v = math.Float64bits(math.Float64frombits(v) + float64(int8(next(1))))
		case 6:
			v = math.Float64bits(math.Round((math.Float64frombits(v)+float64(next(2))/100)*100) / 100)
		}
		samples = append(samples, Sample{T: t, V: math.Float64frombits(v)})
	}
	return samples
}

// FuzzXORChunkIdentical: AppendXORChunk writes what chunkenc writes, and
// chunkenc reads it back, for any sequence fuzzSamples makes.
func FuzzXORChunkIdentical(f *testing.F) {
	f.Add(binary.BigEndian.AppendUint64(nil, 1_700_000_000_000))
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0, 0x0a, 1, 0x0a, 2, 0x0a, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkXORIdentical(t, "fuzzed", fuzzSamples(data))
	})
}
