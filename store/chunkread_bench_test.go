package store

import (
	"context"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// BenchmarkSelectChunks reads 200 series of 6 hours at 15 s (288,000
// samples) per operation as chunks and as samples, from raw hours and from
// compacted ones (where the chunked read passes stored chunks through).
func BenchmarkSelectChunks(b *testing.B) {
	for _, be := range backends {
		b.Run(be.Name, func(b *testing.B) {
			db, prefix := be.Open(b)
			ctx := context.Background()
			const nSeries, hours, perHour = 200, 6, 240
			t0 := int64(1_760_000_000_000) / hour * hour
			for _, compacted := range []bool{false, true} {
				name, p := "raw", prefix+"raw_"
				if compacted {
					name, p = "compacted", prefix+"compacted_"
				}
				s := openStore(b, db, Config{TablePrefix: p})
				for h := range int64(hours) {
					batch := benchBatch(nSeries, perHour, t0+h*hour)
					if err := s.Write(ctx, batch); err != nil {
						b.Fatal(err)
					}
					if compacted {
						for _, in := range batch {
							compactHour(b, s, in.Labels, in.Samples)
						}
					}
				}
				q := Query{Start: t0, End: t0 + hours*hour, Matchers: []*labels.Matcher{mustMatcher(b, labels.MatchEqual, "job", "node")}}
				b.Run(name+"/chunks", func(b *testing.B) {
					n := 0
					for b.Loop() {
						cs := s.SelectChunks(ctx, q)
						for cs.Next() {
							for _, c := range cs.At().Chunks {
								n += c.Samples
							}
						}
						if err := cs.Err(); err != nil {
							b.Fatal(err)
						}
						cs.Close()
					}
					if n != b.N*nSeries*hours*perHour {
						b.Fatalf("read %d samples, want %d", n, b.N*nSeries*hours*perHour)
					}
					b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
				})
				b.Run(name+"/samples", func(b *testing.B) {
					n := 0
					for b.Loop() {
						ss := s.Select(ctx, q)
						for ss.Next() {
							n += len(ss.At().Samples)
						}
						if err := ss.Err(); err != nil {
							b.Fatal(err)
						}
						ss.Close()
					}
					b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
				})
			}
		})
	}
}
