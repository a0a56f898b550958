package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// TestScanRangePrefetch: a scan of one range, or of the ranges of several
// salt buckets at once, keeps every row while they fit its budget; one that
// outgrows it keeps none and still lists every series with its hours, as a
// key-only scan does.
func TestScanRangePrefetch(t *testing.T) {
	for _, buckets := range []int{1, 4} {
		t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) { testScanRangePrefetch(t, buckets) })
	}
}

func testScanRangePrefetch(t *testing.T, buckets int) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: buckets}})
		t0 := int64(1_760_000_000_000) / hour * hour
		const nSeries, hours, perHour = 30, 3, 20
		for h := range int64(hours) {
			var batch []SeriesIn
			for i := range nSeries {
				var smps []Sample
				for j := range perHour {
					smps = append(smps, Sample{T: t0 + h*hour + int64(j)*1000, V: float64(i*j) + 0.5})
				}
				batch = append(batch, SeriesIn{Labels: lbls("__name__", "pf", "i", fmt.Sprint(i)), Samples: smps})
			}
			if err := s.Write(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		var b labels2uid.Batch
		b.Add(labels2uid.Metric, "pf")
		if err := s.uids.Lookup(ctx, &b); err != nil || !b.Found[labels2uid.Metric][0] {
			t.Fatalf("lookup: %v", err)
		}
		metric := b.UIDs[labels2uid.Metric][0]
		startHour, endHour, _ := rowkey.HourRange(t0, t0+hours*hour-1)
		var ranges []table.RowRange
		for _, r := range s.layout.AppendScanRanges(nil, metric, startHour, endHour) {
			ranges = append(ranges, table.RowRange(r))
		}
		if len(ranges) != buckets {
			t.Fatalf("%d ranges, want %d", len(ranges), buckets)
		}
		all := nSeries * hours * perHour * (4 + 8 + cellSize) // qualifier, value and Cell
		for _, tc := range []struct {
			budget int
			kept   bool
		}{{0, false}, {all, true}, {all / 2, false}} {
			found, err := s.scanRanges(ctx, scanTask{metric: metric, all: ranges}, nil, tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != nSeries {
				t.Fatalf("budget %d: %d series, want %d", tc.budget, len(found), nSeries)
			}
			for _, sr := range found {
				if sr.first != startHour || sr.last != endHour {
					t.Fatalf("budget %d: hours %d..%d, want %d..%d", tc.budget, sr.first, sr.last, startHour, endHour)
				}
				if sr.prefetched != tc.kept {
					t.Fatalf("budget %d: prefetched %v, want %v", tc.budget, sr.prefetched, tc.kept)
				}
				if !tc.kept {
					if sr.rows != nil {
						t.Fatalf("budget %d: rows kept after the budget ran out", tc.budget)
					}
					continue
				}
				if len(sr.rows) != hours {
					t.Fatalf("budget %d: %d rows, want %d", tc.budget, len(sr.rows), hours)
				}
				for h, r := range sr.rows {
					if r.hour != startHour+uint32(h)*rowkey.HourSeconds || len(r.cells) != perHour {
						t.Fatalf("budget %d: row %d: hour %d, %d cells", tc.budget, h, r.hour, len(r.cells))
					}
					// The copies outlive the scanner's buffers.
					for j := range r.cells {
						smp, err := decodeRawCell(int64(r.hour)*1000, &r.cells[j])
						if err != nil || smp.T != int64(r.hour)*1000+int64(j)*1000 || smp.V != float64(int64(smp.V))+0.5 {
							t.Fatalf("budget %d: row %d cell %d: %+v %v", tc.budget, h, j, smp, err)
						}
					}
				}
			}
		}
	})
}
