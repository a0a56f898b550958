package opentsdb

import (
	"context"
	"math"
	"testing"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/store"
)

// compactedHour is a row OpenTSDB compacted: a point a second, ints and
// floats alternating.
func compactedHour() []hrpc.Cell {
	var quals, vals [][]byte
	for i := range hour {
		v, fl := intValue(int64(i * 1000))
		if i%2 == 1 {
			v, fl = float64Value(float64(i) / 3)
		}
		quals, vals = append(quals, secQual(i, fl)), append(vals, v)
	}
	q, v := compact(quals, vals, false)
	return []hrpc.Cell{{Family: familyData, Qualifier: q, Value: v, Timestamp: 1}}
}

func BenchmarkDecodeRow(b *testing.B) {
	for _, bc := range []struct {
		name  string
		cells []hrpc.Cell
	}{
		{"compacted", compactedHour()},
		{"raw", func() []hrpc.Cell {
			// Uncompacted: a column a point, as written before compaction.
			var cells []hrpc.Cell
			for i := range hour {
				v, fl := intValue(int64(i))
				cells = append(cells, hrpc.Cell{Family: familyData, Qualifier: secQual(i, fl), Value: v, Timestamp: 1})
			}
			return cells
		}()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var d rowDecoder
			var dst []store.Sample
			b.ReportAllocs()
			for b.Loop() {
				var err error
				dst, err = d.decode(dst[:0], testBase, bc.cells, 0, math.MaxInt64)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*hour/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// BenchmarkIterator reads a unit of 200 compacted series-hours from
// in-memory tables: decoding, tag values, labels.
func BenchmarkIterator(b *testing.B) {
	f := newFakeTSDB(b, Options{})
	row := compactedHour()[0]
	for h := range 4 {
		for s := range 50 {
			f.put(f.rowKey(0, "bench.metric", testBase+int64(h)*hour, "host", string(rune('a'+s%26))+string(rune('a'+s/26)), "dc", "x"),
				row.Qualifier, row.Value, 1)
		}
	}
	src, err := newSource(context.Background(), f.m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	units, err := src.Units(context.Background())
	if err != nil || len(units) == 0 {
		b.Fatal(units, err)
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		for _, u := range units {
			it, err := src.Open(context.Background(), u)
			if err != nil {
				b.Fatal(err)
			}
			for it.Next() {
				n += len(it.At().Samples)
			}
			if err := it.Err(); err != nil {
				b.Fatal(err)
			}
			it.Close()
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}
