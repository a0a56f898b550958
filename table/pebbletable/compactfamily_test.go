package pebbletable

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestCompactFamilyFlushes: CompactFamily moves what the memtable holds,
// range deletions included, into a file, in the background; a family the
// table lacks is an error.
func TestCompactFamilyFlushes(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	tb, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "ts", Families: []table.FamilySpec{{Name: "t"}, {Name: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	var cells []table.Cell
	for i := range 1000 {
		cells = append(cells, table.Cell{Row: fmt.Appendf(nil, "row%04d", i), Family: "r", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")})
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	if err := tb.(table.RowRangeDeleter).DeleteRows(ctx, []table.RowRange{{Start: []byte("row0100"), Stop: []byte("row0900")}}); err != nil {
		t.Fatal(err)
	}
	fc := tb.(table.FamilyCompacter)
	if err := fc.CompactFamily(ctx, "x"); err == nil {
		t.Error("CompactFamily of a family the table lacks succeeded")
	}
	flushes := db.pdb.Metrics().Flush.Count
	if tables := db.pdb.Metrics().Total().TablesCount; tables != 0 {
		t.Fatalf("%d files before CompactFamily, want the cells in the memtable alone", tables)
	}
	if err := fc.CompactFamily(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for db.pdb.Metrics().Flush.Count == flushes || db.pdb.Metrics().Total().TablesCount == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no flush 30 s after CompactFamily (flushes %d, files %d)", db.pdb.Metrics().Flush.Count, db.pdb.Metrics().Total().TablesCount)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rows, err := tb.Get(ctx, "r", [][]byte{[]byte("row0099"), []byte("row0100"), []byte("row0900")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows[0].Cells) != 1 || len(rows[1].Cells) != 0 || len(rows[2].Cells) != 1 {
		t.Fatalf("after the flush: %+v", rows)
	}
}
