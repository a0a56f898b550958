package cellcodec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/internal/benchdata"
)

// denseKindBound is, per value kind of make bench's data set
// (internal/benchdata), the bytes a sample of value measured when the
// format was fixed (0.530, 1.444, 0.524, 0.547) and a tenth: a change that
// loses more fails TestDenseKindSizes.
var denseKindBound = [benchdata.Kinds]float64{0.583, 1.588, 0.576, 0.602}

// denseKindCells are the cells of series series of kind over an hour and a
// half of 15 s scrapes from the epoch, cut by hour as the compactor cuts
// them (a cell of 240 samples, one of 120), as the prototype measured.
func denseKindCells(kind benchdata.Kind, series int) (hours []int64, cells [][]Sample) {
	const rounds = 360
	for s := range series {
		g := benchdata.NewValues(kind, s*benchdata.Kinds+int(kind))
		var hour []Sample
		for r := range rounds {
			t := int64(r) * 15000
			if len(hour) > 0 && t/HourMillis != hour[0].T/HourMillis {
				hours, cells = append(hours, hour[0].T/HourMillis*HourMillis), append(cells, hour)
				hour = nil
			}
			hour = append(hour, Sample{T: t, V: g.Next()})
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

// TestDenseKindSizes holds the benchmark kinds to denseKindBound.
func TestDenseKindSizes(t *testing.T) {
	var all float64
	for kind := range benchdata.Kind(benchdata.Kinds) {
		hours, cells := denseKindCells(kind, 250)
		got := denseBytesPerSample(t, hours, cells)
		all += got / benchdata.Kinds // as many samples a kind
		t.Logf("%-17s %.3f bytes/sample (bound %.3f)", kind.Suffix(), got, denseKindBound[kind])
		if got > denseKindBound[kind] {
			t.Errorf("%s: %.3f bytes/sample, over the bound %.3f", kind.Suffix(), got, denseKindBound[kind])
		}
	}
	t.Logf("all               %.3f bytes/sample", all)
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
	for kind := range benchdata.Kind(benchdata.Kinds) {
		name := kind.Suffix()
		b.Run(name, func(b *testing.B) {
			hours, cells := denseKindCells(kind, 1)
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
	for kind := range benchdata.Kind(benchdata.Kinds) {
		name := kind.Suffix()
		hours, cells := denseKindCells(kind, 1)
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
