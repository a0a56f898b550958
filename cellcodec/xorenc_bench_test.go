package cellcodec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// realisticKinds are the series shapes of a Prometheus scrape that the
// benchmarks and tests encode (BENCHMARKS.md's load, plus jitter).
var realisticKinds = []string{"counter2dec", "intgauge", "constant", "jitter"}

// realisticSamples are n samples of kind, 15 s apart from start.
func realisticSamples(rng *rand.Rand, kind string, n int, start int64) []Sample {
	s := make([]Sample, n)
	t, v := start, math.Round(rng.Float64()*1e6)/100
	for i := range s {
		t += 15000
		switch kind {
		case "counter2dec": // CPU seconds: moves by a few hundredths.
			v = math.Round((v+rng.Float64()*3)*100) / 100
		case "intgauge": // memory pages: unchanged in 70 % of scrapes.
			if rng.IntN(10) < 3 {
				v = float64(int64(v) + rng.Int64N(2001) - 1000)
			}
		case "constant":
		case "jitter": // a counter scraped a few ms off the beat.
			t += rng.Int64N(41) - 20
			v += float64(rng.IntN(50))
		default:
			panic(kind)
		}
		s[i] = Sample{T: t, V: v}
	}
	return s
}

// chunkencAppend is the reference encoder: chunkenc's own appender.
func chunkencAppend(tb testing.TB, dst []byte, samples []Sample) []byte {
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range samples {
		app.Append(0, s.T, s.V)
	}
	return append(dst, c.Bytes()...)
}

// BenchmarkAppendXORChunk encodes a chunk of SamplesPerChunk samples of
// each kind with AppendXORChunk and with chunkenc's appender.
func BenchmarkAppendXORChunk(b *testing.B) {
	for _, kind := range realisticKinds {
		samples := realisticSamples(rand.New(rand.NewPCG(7, 8)), kind, SamplesPerChunk, 1_700_000_000_000)
		encoders := []struct {
			name string
			fn   func(dst []byte) []byte
		}{
			{"cellcodec", func(dst []byte) []byte { return AppendXORChunk(dst, samples) }},
			{"chunkenc", func(dst []byte) []byte { return chunkencAppend(b, dst, samples) }},
		}
		for _, e := range encoders {
			b.Run(fmt.Sprintf("%s/%s", kind, e.name), func(b *testing.B) {
				dst := e.fn(nil)
				b.ReportAllocs()
				for b.Loop() {
					dst = e.fn(dst[:0])
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(samples)), "ns/sample")
				b.ReportMetric(float64(len(dst))/float64(len(samples)), "B/sample")
			})
		}
	}
}

// mixedChunks are count chunks of SamplesPerChunk samples, each of a kind
// and a seed of its own, in no order: what a streamed read of many series
// encodes, and what a branch predictor cannot learn as it learns one chunk
// encoded over and over.
func mixedChunks(count int) [][]Sample {
	rng := rand.New(rand.NewPCG(21, 22))
	chunks := make([][]Sample, count)
	for i := range chunks {
		kind := realisticKinds[rng.IntN(len(realisticKinds))]
		seeded := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		chunks[i] = realisticSamples(seeded, kind, SamplesPerChunk, 1_700_000_000_000+rng.Int64N(1<<30))
	}
	return chunks
}

// BenchmarkAppendXORChunkMixed encodes 1,000 different chunks of the
// realistic kinds in turn, one per iteration, with AppendXORChunk and with
// chunkenc's appender.
func BenchmarkAppendXORChunkMixed(b *testing.B) {
	chunks := mixedChunks(1000)
	encoders := []struct {
		name string
		fn   func(dst []byte, samples []Sample) []byte
	}{
		{"cellcodec", AppendXORChunk},
		{"chunkenc", func(dst []byte, samples []Sample) []byte { return chunkencAppend(b, dst, samples) }},
	}
	for _, e := range encoders {
		b.Run(e.name, func(b *testing.B) {
			var dst []byte
			samples, written := 0, 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i = (i + 1) % len(chunks) {
				dst = e.fn(dst[:0], chunks[i])
				samples += len(chunks[i])
				written += len(dst)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(samples), "ns/sample")
			b.ReportMetric(float64(written)/float64(samples), "B/sample")
		})
	}
}
