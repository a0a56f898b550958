package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/hbasetable"
	"github.com/prom-hbase/prom-hbase/table/testdb"
)

// BenchmarkSelectChunksPerMetric reads compacted hours one metric at a time,
// four queries in flight, as a Prometheus evaluating many small selectors
// does (and as make bench reads): 50 metrics of 20 series, 2 hours at 15 s.
// Per query the cost is mostly fixed (plan, phase-one scans, a multi-get
// when phase one did not keep the rows), so this is the figure those
// overheads move.
func BenchmarkSelectChunksPerMetric(b *testing.B) {
	for _, be := range backends {
		// The data table in one region per salt bucket (the default) or in
		// one: on HBase a write of a few hundred samples costs half as much
		// in one region, a read of a small metric several times more.
		for _, regions := range []int{0, 1} {
			// The hours compacted into dense cells (the default, for these
			// integer values) or into XOR chunks, which go out untouched.
			for _, fc := range []string{FloatChunksAuto, FloatChunksXOR} {
				b.Run(fmt.Sprintf("%s/regions=%d/%s", be.Name, regions, fc), func(b *testing.B) {
					benchSelectPerMetric(b, be, regions, fc)
				})
			}
		}
	}
}

func benchSelectPerMetric(b *testing.B, be testdb.Backend, regions int, floatChunks string) {
	db, prefix := be.Open(b)
	ctx := context.Background()
	const nSeries, hours, perHour, metrics = 1000, 2, 240, 50
	t0 := int64(1_760_000_000_000) / hour * hour
	s := openStore(b, db, Config{TablePrefix: prefix, DataRegions: regions, FloatChunks: floatChunks})
	for h := range int64(hours) {
		batch := benchBatch(nSeries, perHour, t0+h*hour)
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		for _, in := range batch {
			compactHour(b, s, in.Labels, in.Samples)
		}
	}
	settle(b, db, prefix+DataTableSuffix)
	for _, mode := range []struct {
		name     string
		prefetch int
	}{{"prefetch", 0}, {"keys-only", -1}} {
		r := openStore(b, db, Config{TablePrefix: prefix, ReadPrefetchBytes: mode.prefetch})
		b.Run(mode.name, func(b *testing.B) {
			readPerMetric(b, r, t0, hours*hour, metrics, nSeries/metrics*hours*perHour)
		})
	}
}

// readPerMetric reads metric after metric, four queries in flight, each
// over [t0, t0+span), checking that each returns want samples.
func readPerMetric(b *testing.B, s *Store, t0, span int64, metrics, want int) {
	ctx := context.Background()
	var next, n atomic.Int64
	b.SetParallelism(2) // 4 in flight on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprintf("node_metric_%d", next.Add(1)%int64(metrics))
			q := Query{Start: t0, End: t0 + span - 1, Matchers: []*labels.Matcher{mustMatcher(b, labels.MatchEqual, "__name__", name)}}
			cs := s.SelectChunks(ctx, q)
			got := 0
			for cs.Next() {
				for _, c := range cs.At().Chunks {
					got += c.Samples
				}
			}
			if err := cs.Err(); err != nil {
				b.Error(err)
			}
			cs.Close()
			if got != want {
				b.Errorf("%s: read %d samples, want %d", name, got, want)
			}
			n.Add(int64(got))
		}
	})
	b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "samples/s")
}

// settle flushes and major-compacts an HBase table, so that a read
// benchmark reads HFiles without the compaction's delete markers, as a
// store does once HBase has compacted the hours.
func settle(tb testing.TB, db table.DB, name string) {
	h, ok := db.(*hbasetable.DB)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := h.Client().FlushTable(ctx, name); err != nil {
		tb.Fatal(err)
	}
	if err := h.Client().MajorCompactTable(ctx, name); err != nil {
		tb.Fatal(err)
	}
}
