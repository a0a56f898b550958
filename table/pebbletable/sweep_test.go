package pebbletable

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// sweepSim writes like a time-series store for hours simulated hours (each
// hour, one row per series holding that hour's samples, the row key series
// then hour) on a table with a 24-hour TTL, and sweeps after each hour with
// sweep. It returns what the sweeps did over the last half, in steady state.
func sweepSim(t *testing.T, hours int, sweep func(context.Context, *DB) (SweepStats, error)) SweepStats {
	t.Helper()
	ctx := context.Background()
	clk := &clock{now: time.Unix(1700000000, 0)}
	db := openTest(t, t.TempDir(), Options{Now: clk.Now, SweepInterval: -1})
	tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "ts", Families: []table.FamilySpec{{Name: "d", TTL: 24 * time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	const series, samples = 10, 20
	var total SweepStats
	for h := range hours {
		var cells []table.Cell
		for s := range series {
			row := fmt.Appendf(nil, "series%02d/hour%05d", s, h)
			for i := range samples {
				ts := clk.Now().Add(time.Duration(i) * time.Minute).UnixMilli()
				cells = append(cells, table.Cell{Row: row, Family: "d", Qualifier: []byte{byte(i)}, Timestamp: ts, Value: []byte("v")})
			}
		}
		if err := tt.Put(ctx, cells); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		st, err := sweep(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if h >= hours/2 {
			total.add(st)
		}
	}
	// Nothing older than the TTL (and the last pass's lag) is left.
	if got, limit := rawCells(t, tt.(*tbl)), (24+24/sweepPasses+1)*series*samples; got > limit {
		t.Errorf("%d cells stored after the sweeps, want at most %d", got, limit)
	}
	return total
}

// TestSweepReadsFollowDeletes is the regression test of issue 12, finding 8:
// the sweep read the whole table at every interval (hourly), reading about
// TTL/interval+1 cells for each cell it deleted: 25 with a day's retention,
// 361 with 15 days. Paced, it reads about sweepPasses+1 per cell deleted,
// whatever the retention and the interval.
func TestSweepReadsFollowDeletes(t *testing.T) {
	paced := sweepSim(t, 96, func(ctx context.Context, db *DB) (SweepStats, error) { return db.sweepDue(ctx, time.Hour) })
	if paced.Deleted == 0 {
		t.Fatal("the paced sweeps deleted nothing")
	}
	// A pass reads the table, sweepPasses+1 times what it deletes, and reads
	// each cell again before deleting it, under its lock.
	ratio := float64(paced.Read) / float64(paced.Deleted)
	if limit := sweepPasses + 3; ratio > float64(limit) {
		t.Errorf("paced sweeps read %d cells to delete %d: %.1f per cell deleted, want at most %d", paced.Read, paced.Deleted, ratio, limit)
	}
	if paced.Ranges == 0 {
		t.Errorf("paced sweeps deleted %d cells without one range deletion, in runs of %d consecutive expired cells", paced.Deleted, 3*20)
	}
	every := sweepSim(t, 96, func(ctx context.Context, db *DB) (SweepStats, error) {
		db.sweepMu.Lock()
		defer db.sweepMu.Unlock()
		var st SweepStats
		for _, tb := range db.sweepable() {
			s, err := tb.sweep(ctx)
			st.add(s)
			if err != nil {
				return st, err
			}
		}
		return st, nil
	})
	t.Logf("cells read per cell deleted: %.1f paced (%d range deletions), %.1f sweeping every hour",
		ratio, paced.Ranges, float64(every.Read)/float64(every.Deleted))
}

// TestSweepRangeRecheck: a fresh cell written, after the sweep's snapshot,
// between expired cells it means to delete with one range deletion stops
// that deletion; the next sweep deletes around it.
func TestSweepRangeRecheck(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Unix(1700000000, 0)}
	db := openTest(t, t.TempDir(), Options{Now: clk.Now, SweepInterval: -1})
	tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "r", Families: []table.FamilySpec{{Name: "d", TTL: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	tb := tt.(*tbl)
	old := clk.Now().Add(-2 * time.Hour).UnixMilli()
	var cells []table.Cell
	for i := range 100 {
		cells = append(cells, table.Cell{Row: fmt.Appendf(nil, "r%03d", i), Family: "d", Qualifier: []byte("q"), Timestamp: old})
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	first := appendCellKey(nil, tb.id, cells[0].Row, 0, []byte("q"))
	last := appendCellKey(nil, tb.id, cells[99].Row, 0, []byte("q"))
	fresh := table.Cell{Row: []byte("r050x"), Family: "d", Qualifier: []byte("q"), Timestamp: table.LatestTimestamp, Value: []byte("fresh")}
	if err := tb.Put(ctx, []table.Cell{fresh}); err != nil {
		t.Fatal(err)
	}
	st, ok, err := tb.deleteRange(ctx, first, last, db.nowMillis())
	if err != nil || ok || st.Deleted != 0 {
		t.Fatalf("range deletion over a fresh cell: deleted %d, ok %v, %v", st.Deleted, ok, err)
	}
	if got := rawCells(t, tb); got != 101 {
		t.Fatalf("%d cells stored after a refused range deletion, want 101", got)
	}
	n, err := db.Sweep(ctx)
	if err != nil || n != 100 {
		t.Fatalf("Sweep: deleted %d, %v; want 100", n, err)
	}
	rows, err := tb.Get(ctx, "", [][]byte{fresh.Row})
	if err != nil || len(rows[0].Cells) != 1 || rawCells(t, tb) != 1 {
		t.Fatalf("after the sweep: %+v, %v, %d cells stored; want the fresh cell alone", rows, err, rawCells(t, tb))
	}
}
