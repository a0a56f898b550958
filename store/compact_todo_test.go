package store

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// recordTable keeps the cells put into it.
type recordTable struct {
	discardTable
	put []table.Cell
}

func (r *recordTable) Put(_ context.Context, cells []table.Cell) error {
	r.put = append(r.put, cells...)
	return nil
}

// TestNoteMarksNewHours: a write entering a new hour marks each of its
// (bucket, metric)s once, with the row and qualifier the compactor parses,
// stamped with the wall clock (a stamp a mark ran 800 marks 0.8 s ahead), a
// column's next mark with a newer stamp even when the clock has not moved,
// and costs a few allocations whatever the number of marks (a string key
// and three slices a mark before).
func TestNoteMarksNewHours(t *testing.T) {
	l := rowkey.DefaultLayout
	rec := &recordTable{}
	now := time.UnixMilli(1_760_000_000_000)
	td := &todoList{t: rec, id: newProcessID(), prefix: l.HeaderWidth(), salt: l.SaltWidth(), metric: l.MetricWidth,
		now: func() time.Time { return now }, marked: map[markKey]int64{}}
	const buckets, metrics = 16, 50
	cellsOf := func(hour uint32) []table.Cell {
		var cells []table.Cell
		for b := range buckets {
			for m := range metrics {
				row := []byte{byte(b), 0, 0, byte(m + 1)}
				row = binary.BigEndian.AppendUint32(row, hour)
				row = append(row, 0, 0, 7, 0, 0, 0, 9) // a tag pair
				cells = append(cells, table.Cell{Row: row, Family: FamilyRaw}, table.Cell{Row: row, Family: FamilyRaw})
			}
		}
		return cells
	}
	ctx := context.Background()
	if err := td.note(ctx, cellsOf(1)); err != nil {
		t.Fatal(err)
	}
	if len(rec.put) != buckets*metrics {
		t.Fatalf("%d marks for %d (bucket, metric)s", len(rec.put), buckets*metrics)
	}
	seen := map[[2]uint64]bool{}
	for _, c := range rec.put {
		kind, metric, ok := parseMark(c.Qualifier, l.MetricWidth)
		if !ok || kind != markPrefix || c.Family != familyCompact || len(c.Row) != 5 {
			t.Fatalf("mark %+v: not a mark of the compaction table", c)
		}
		if hour := binary.BigEndian.Uint32(c.Row); hour != 1 {
			t.Fatalf("mark %+v: hour %d, want 1", c, hour)
		}
		if c.Timestamp != now.UnixMilli() {
			t.Fatalf("mark %+v: stamped %d ms from the clock, want 0", c, c.Timestamp-now.UnixMilli())
		}
		seen[[2]uint64{uint64(c.Row[4]), metric}] = true
	}
	if len(seen) != buckets*metrics {
		t.Fatalf("%d distinct (bucket, metric)s marked, want %d", len(seen), buckets*metrics)
	}
	rec.put = nil
	if err := td.note(ctx, cellsOf(1)); err != nil || len(rec.put) != 0 {
		t.Fatalf("marked hour 1 again: %d marks, %v", len(rec.put), err)
	}
	// Trust in the marks gone (as after MarkRefresh), the clock unmoved: a
	// new version of each mark.
	clear(td.marked)
	if err := td.note(ctx, cellsOf(1)); err != nil || len(rec.put) != buckets*metrics {
		t.Fatalf("marked hour 1 anew: %d marks, %v", len(rec.put), err)
	}
	for _, c := range rec.put {
		if c.Timestamp != now.UnixMilli()+1 {
			t.Fatalf("mark %+v written again: stamped %d ms from the clock, want 1", c, c.Timestamp-now.UnixMilli())
		}
	}
	rec.put = nil
	hour := uint32(2)
	allocs := testing.AllocsPerRun(5, func() {
		rec.put = rec.put[:0]
		_ = td.note(ctx, cellsOf(hour))
		hour++
	})
	// cellsOf's own: a slice growing to 1,600 cells and a row each.
	built := testing.AllocsPerRun(5, func() { _ = cellsOf(hour) })
	if marks := allocs - built; marks > 20 {
		t.Errorf("marking %d (bucket, metric)s of a new hour took %.0f allocations, want a few", buckets*metrics, marks)
	}
}
