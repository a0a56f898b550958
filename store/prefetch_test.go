package store

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

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

// TestArenaReuse: an arena's copies and cells stay as written while it
// grows over several blocks and slabs; released and taken again, it fills
// the same blocks from the first.
func TestArenaReuse(t *testing.T) {
	fill := func(a *arena, seed byte) (copies [][]byte, rows [][]table.Cell) {
		for i := range 300 {
			b := bytes.Repeat([]byte{seed + byte(i)}, 1+i*7%500)
			copies = append(copies, a.copy(b))
			cells := a.cells(1 + i%5)
			for j := range cells {
				if cells[j].Value != nil || cells[j].Family != "" {
					t.Fatalf("row %d: cells not zeroed", i)
				}
				cells[j].Value = copies[i]
			}
			rows = append(rows, cells)
		}
		return copies, rows
	}
	check := func(copies [][]byte, rows [][]table.Cell, seed byte) {
		t.Helper()
		for i, c := range copies {
			if want := bytes.Repeat([]byte{seed + byte(i)}, 1+i*7%500); !bytes.Equal(c, want) {
				t.Fatalf("copy %d changed", i)
			}
			for _, cell := range rows[i] {
				if !bytes.Equal(cell.Value, copies[i]) {
					t.Fatalf("row %d: a cell changed", i)
				}
			}
		}
	}
	a := new(arena)
	copies, rows := fill(a, 1)
	check(copies, rows, 1)
	if len(a.blocks) < 3 || len(a.slabs) < 3 {
		t.Fatalf("%d blocks and %d slabs for 300 rows, want several of each", len(a.blocks), len(a.slabs))
	}
	blocks := len(a.blocks)
	first := &a.blocks[0][:1][0]
	a.release()
	a.free = false // as newArena does, taking it from the pool
	copies, rows = fill(a, 101)
	check(copies, rows, 101)
	if len(a.blocks) != blocks || &a.blocks[0][:1][0] != first {
		t.Errorf("refilled: %d blocks (was %d), first block moved: %v; want the same blocks", len(a.blocks), blocks, &a.blocks[0][:1][0] != first)
	}
}

// TestReleaseRows: the arenas of a group's series, shared and interleaved
// as sorting by labels leaves them, are each released once (a second
// release panics), and the series forget their rows.
func TestReleaseRows(t *testing.T) {
	for _, n := range []int{1, 3, 16, 40} {
		arenas := make([]*arena, n)
		for i := range arenas {
			arenas[i] = newArena()
			arenas[i].copy([]byte("x"))
		}
		var series []seriesRef
		for i := range 5 * n {
			a := arenas[(i*7)%n]
			series = append(series, seriesRef{mem: a, rows: []hourRow{{hour: 1}}})
			if i%3 == 0 {
				series = append(series, seriesRef{mem: a, rows: []hourRow{{hour: 2}}})
			}
		}
		series = append(series, seriesRef{}) // a series phase one kept no rows of
		releaseRows(series)
		for i, a := range arenas {
			if !a.free {
				t.Errorf("%d arenas: arena %d not released", n, i)
			}
		}
		for i, sr := range series {
			if sr.mem != nil || sr.rows != nil {
				t.Fatalf("%d arenas: series %d still holds its rows", n, i)
			}
		}
	}
}

// TestConcurrentReadsReuseBuffers: queries running at once, each of
// several metrics (a group each, so phase one's arenas are given back
// between groups) or of one, in both response shapes, over an hour of
// chunks and an hour of raw cells, each return what the same query
// returns alone: the pooled arenas and set buffers one query gives back
// are not still in use by it when another takes them.
func TestConcurrentReadsReuseBuffers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		t0 := int64(1_760_000_000_000) / hour * hour
		for h := range int64(2) {
			batch := benchBatch(200, 240, t0+h*hour)
			if err := s.Write(ctx, batch); err != nil {
				t.Fatal(err)
			}
			if h == 0 {
				for _, in := range batch {
					compactHour(t, s, in.Labels, in.Samples)
				}
			}
		}
		queries := []Query{
			{Start: t0, End: t0 + 2*hour - 1, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchRegexp, "__name__", "node_metric_1.*")}},
			{Start: t0 + hour/2, End: t0 + 2*hour - 1, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchRegexp, "__name__", "node_metric_2.")}},
			{Start: t0, End: t0 + 2*hour - 1, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "node_metric_7")}},
		}
		read := func(q Query, chunks bool) (string, error) {
			var out strings.Builder
			if chunks {
				cs := s.SelectChunks(ctx, q)
				defer cs.Close()
				for cs.Next() {
					fmt.Fprintf(&out, "%s:", cs.At().Labels)
					for _, c := range cs.At().Chunks {
						chk, err := chunkenc.FromData(c.Encoding, c.Data)
						if err != nil {
							return "", err
						}
						it := chk.Iterator(nil)
						for it.Next() == chunkenc.ValFloat {
							ts, v := it.At()
							fmt.Fprintf(&out, " %d=%g", ts, v)
						}
					}
					out.WriteString("\n")
				}
				return out.String(), cs.Err()
			}
			ss := s.Select(ctx, q)
			defer ss.Close()
			for ss.Next() {
				fmt.Fprintf(&out, "%s:", ss.At().Labels)
				for _, smp := range ss.At().Samples {
					fmt.Fprintf(&out, " %d=%g", smp.T, smp.V)
				}
				out.WriteString("\n")
			}
			return out.String(), ss.Err()
		}
		want := map[string]string{}
		for i, q := range queries {
			for _, chunks := range []bool{false, true} {
				got, err := read(q, chunks)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Count(got, "\n") < 4 {
					t.Fatalf("query %d alone: %d series", i, strings.Count(got, "\n"))
				}
				want[fmt.Sprint(i, chunks)] = got
			}
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for k := range 12 {
					i, chunks := (w+k)%len(queries), (w+k)%2 == 0
					got, err := read(queries[i], chunks)
					if err != nil {
						t.Error(err)
						return
					}
					if got != want[fmt.Sprint(i, chunks)] {
						t.Errorf("query %d (chunks %v) read at once with others differs from its read alone", i, chunks)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}
