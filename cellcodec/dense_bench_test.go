package cellcodec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// The benchmark data set's four value kinds, as cmd/benchtool/series.go
// generates them (copied: a main package cannot be imported), scraped every
// 15 s on whole seconds.
type denseKind int

const (
	denseIntCounter   denseKind = iota // integer increments, none in half the scrapes
	denseFloatCounter                  // increments with two decimals
	denseIntGauge                      // pages of 4096 bytes, unchanged in 70 % of scrapes
	denseFloatGauge                    // two decimals, a random walk, unchanged in half the scrapes
)

var denseKindNames = [...]string{"intCounter", "floatCounter", "intGauge", "floatGauge"}

// denseKindTarget is the size the prototype cost model
// (/work/dev/densetry) reached per kind, in bytes a sample.
var denseKindTarget = [...]float64{0.721, 1.712, 0.692, 0.739}

type denseValueGen struct {
	kind denseKind
	rng  *rand.Rand
	v    float64
}

func newDenseValueGen(kind denseKind, idx int) *denseValueGen {
	g := &denseValueGen{kind: kind, rng: rand.New(rand.NewPCG(uint64(idx), 42))}
	switch kind {
	case denseIntCounter:
		g.v = float64(g.rng.IntN(1_000_000))
	case denseFloatCounter:
		g.v = float64(g.rng.IntN(10_000_000)) / 100
	case denseIntGauge:
		g.v = float64(4096 * (10_000 + g.rng.IntN(1_000_000)))
	case denseFloatGauge:
		g.v = float64(g.rng.IntN(400)) / 100
	}
	return g
}

func (g *denseValueGen) next() float64 {
	switch g.kind {
	case denseIntCounter:
		if g.rng.IntN(2) == 0 {
			g.v += float64(1 + g.rng.IntN(20))
		}
	case denseFloatCounter:
		g.v = math.Round((g.v+float64(g.rng.IntN(1500))/100)*100) / 100
	case denseIntGauge:
		if g.rng.IntN(10) >= 7 {
			g.v += float64(4096 * (g.rng.IntN(201) - 100))
		}
	case denseFloatGauge:
		if g.rng.IntN(2) == 0 {
			g.v = math.Round(math.Abs(g.v+g.rng.NormFloat64()*0.1)*100) / 100
		}
	}
	return g.v
}

// denseKindCells are the cells of series series of kind over an hour and a
// half of 15 s scrapes from the epoch, cut by hour as the compactor cuts
// them (a cell of 240 samples, one of 120), as the prototype measured.
func denseKindCells(kind denseKind, series int) (hours []int64, cells [][]Sample) {
	const rounds = 360
	for s := range series {
		g := newDenseValueGen(kind, s*4+int(kind))
		var hour []Sample
		for r := range rounds {
			t := int64(r) * 15000
			if len(hour) > 0 && t/HourMillis != hour[0].T/HourMillis {
				hours, cells = append(hours, hour[0].T/HourMillis*HourMillis), append(cells, hour)
				hour = nil
			}
			hour = append(hour, Sample{T: t, V: g.next()})
		}
		hours, cells = append(hours, hour[0].T/HourMillis*HourMillis), append(cells, hour)
	}
	return hours, cells
}

// denseBytesPerSample encodes cells and returns the value bytes a sample.
func denseBytesPerSample(tb testing.TB, hours []int64, cells [][]Sample) float64 {
	tb.Helper()
	size, n := 0, 0
	for i, c := range cells {
		v, err := AppendDenseValue(nil, hours[i], c)
		if err != nil {
			tb.Fatal(err)
		}
		size += len(v)
		n += len(c)
	}
	return float64(size) / float64(n)
}

// TestDenseKindSizes holds the benchmark kinds to within 10 % of the
// prototype's figures.
func TestDenseKindSizes(t *testing.T) {
	var all float64
	for kind, name := range denseKindNames {
		hours, cells := denseKindCells(denseKind(kind), 250)
		got := denseBytesPerSample(t, hours, cells)
		all += got / float64(len(denseKindNames)) // as many samples a kind
		t.Logf("%-12s %.3f bytes/sample (prototype %.3f)", name, got, denseKindTarget[kind])
		if got > 1.1*denseKindTarget[kind] {
			t.Errorf("%s: %.3f bytes/sample, over 110 %% of the prototype's %.3f", name, got, denseKindTarget[kind])
		}
	}
	t.Logf("all          %.3f bytes/sample (prototype 0.966)", all)
}

// xorBytesPerSample is what the compactor's XOR chunks of the same cells
// take: ChunkCount chunks a cell, their bytes as a packed cell holds them.
func xorBytesPerSample(tb testing.TB, cells [][]Sample) float64 {
	tb.Helper()
	size, n := 0, 0
	for _, c := range cells {
		k := ChunkCount(len(c))
		for i := range k {
			v, err := AppendChunkValue(nil, c[len(c)*i/k:len(c)*(i+1)/k])
			if err != nil {
				tb.Fatal(err)
			}
			size += len(v)
		}
		n += len(c)
	}
	return float64(size) / float64(n)
}

// TestDenseShapeSizes: shapes beyond the benchmark's do not blow up. Each
// is 50 cells of an hour at 15 s; the bound is what the shape may cost at
// most, in bytes a sample.
func TestDenseShapeSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	stale := math.Float64frombits(staleNaN)
	for _, shape := range []struct {
		name  string
		bound float64
		gen   func(i int, prev float64) (jitter int64, v float64)
	}{
		{"float gauge, times jittered +-5 ms", 1.8, func(i int, prev float64) (int64, float64) {
			return rng.Int64N(11) - 5, math.Round(math.Abs(prev+rng.NormFloat64()*0.1)*100) / 100
		}},
		{"constant", 0.1, func(int, float64) (int64, float64) { return 0, 42.5 }},
		{"counter with resets", 1.2, func(i int, prev float64) (int64, float64) {
			if rng.IntN(60) == 0 {
				return 0, 0
			}
			return 0, prev + float64(rng.IntN(100))
		}},
		{"ratio of two counters, no decimal", 9.1, func(int, float64) (int64, float64) {
			return 0, float64(rng.IntN(1000)) / float64(1+rng.IntN(999))
		}},
		{"random float64 bits", 9.1, func(int, float64) (int64, float64) {
			return 0, math.Float64frombits(rng.Uint64())
		}},
		{"stale markers", 9.1, func(int, float64) (int64, float64) { return 0, stale }},
		{"a stale marker an hour", 0.2, func(i int, prev float64) (int64, float64) {
			if i == 120 {
				return 0, stale
			}
			return 0, 7
		}},
	} {
		var hours []int64
		var cells [][]Sample
		for range 50 {
			cell := make([]Sample, 240)
			v := 1.0
			for i := range cell {
				var jitter int64
				jitter, v = shape.gen(i, v)
				cell[i] = Sample{T: testHour + 5 + int64(i)*15000 + jitter, V: v}
			}
			denseRoundTrip(t, testHour, cell)
			hours, cells = append(hours, testHour), append(cells, cell)
		}
		dense, xor := denseBytesPerSample(t, hours, cells), xorBytesPerSample(t, cells)
		t.Logf("%-36s dense %.3f, XOR %.3f bytes/sample", shape.name, dense, xor)
		if dense > shape.bound {
			t.Errorf("%s: %.3f bytes/sample, over %.3f", shape.name, dense, shape.bound)
		}
	}
}

// BenchmarkDenseEncode: a cell of 240 samples of each kind, an hour at 15 s.
func BenchmarkDenseEncode(b *testing.B) {
	for kind, name := range denseKindNames {
		b.Run(name, func(b *testing.B) {
			hours, cells := denseKindCells(denseKind(kind), 1)
			h, c := hours[0], cells[0]
			var v []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if v, err = AppendDenseValue(v[:0], h, c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(c)), "ns/sample")
			b.ReportMetric(float64(len(v))/float64(len(c)), "B/sample")
		})
	}
}

// BenchmarkDenseDecode: the same cells read back, into a reused slice;
// beside each, the compactor's XOR chunks of the same samples, read as
// AppendRowSamples reads them, for scale on a busy machine.
func BenchmarkDenseDecode(b *testing.B) {
	for kind, name := range denseKindNames {
		hours, cells := denseKindCells(denseKind(kind), 1)
		h, c := hours[0], cells[0]
		b.Run(name, func(b *testing.B) {
			v, err := AppendDenseValue(nil, h, c)
			if err != nil {
				b.Fatal(err)
			}
			q := AppendChunkQualifier(nil, EncDenseFloat, uint32(c[0].T-h), uint32(c[len(c)-1].T-h))
			dst := make([]Sample, 0, len(c))
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = AppendDenseSamples(dst[:0], h, q, v, math.MinInt64, math.MaxInt64); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(c)), "ns/sample")
		})
		b.Run(name+"-xor", func(b *testing.B) {
			var chunks []Chunk
			k := ChunkCount(len(c))
			for i := range k {
				part := c[len(c)*i/k : len(c)*(i+1)/k]
				data, err := AppendChunkValue(nil, part)
				if err != nil {
					b.Fatal(err)
				}
				chunks = append(chunks, Chunk{Encoding: chunkenc.EncXOR, MinT: part[0].T, MaxT: part[len(part)-1].T, Data: data})
			}
			dst := make([]Sample, 0, len(c))
			b.ReportAllocs()
			for b.Loop() {
				dst = dst[:0]
				for _, ch := range chunks {
					var err error
					if dst, err = AppendChunkSamples(dst, ch, math.MinInt64, math.MaxInt64); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(c)), "ns/sample")
		})
	}
}
