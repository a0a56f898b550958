package cellcodec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// BenchmarkAppendXORSamples decodes a chunk of SamplesPerChunk samples of
// each kind with AppendXORSamples, with AppendChunkSamples (which adds the
// bounds check) and with chunkenc's iterator, reused, as AppendChunkSamples
// did before.
func BenchmarkAppendXORSamples(b *testing.B) {
	for _, kind := range realisticKinds {
		samples := realisticSamples(rand.New(rand.NewPCG(7, 8)), kind, SamplesPerChunk, 1_700_000_000_000)
		data := AppendXORChunk(nil, samples)
		c := Chunk{Encoding: chunkenc.EncXOR, MinT: samples[0].T, MaxT: samples[len(samples)-1].T, Data: data}
		var it chunkenc.Iterator
		decoders := []struct {
			name string
			fn   func(dst []Sample) ([]Sample, error)
		}{
			{"cellcodec", func(dst []Sample) ([]Sample, error) {
				return AppendXORSamples(dst, data, math.MinInt64, math.MaxInt64)
			}},
			{"AppendChunkSamples", func(dst []Sample) ([]Sample, error) {
				return AppendChunkSamples(dst, c, math.MinInt64, math.MaxInt64)
			}},
			{"chunkenc", func(dst []Sample) ([]Sample, error) {
				var x chunkenc.XORChunk
				x.Reset(data)
				it = x.Iterator(it)
				for it.Next() == chunkenc.ValFloat {
					t, v := it.At()
					dst = append(dst, Sample{T: t, V: v})
				}
				return dst, it.Err()
			}},
		}
		for _, d := range decoders {
			b.Run(kind+"/"+d.name, func(b *testing.B) {
				dst := make([]Sample, 0, len(samples))
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if dst, err = d.fn(dst[:0]); err != nil || len(dst) != len(samples) {
						b.Fatal(len(dst), err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(samples)), "ns/sample")
			})
		}
	}
}
