package pebbletable

import (
	"context"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestDeleteRows deletes a range of rows, including rows that hold zero
// bytes and a row that is a prefix of others: exactly the rows in [start,
// end) go, physically (raw cells of the key space counted), and the table
// is no longer the sweep's.
func TestDeleteRows(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "ts", Families: []table.FamilySpec{{Name: "a", TTL: time.Hour}, {Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "other", Families: []table.FamilySpec{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	rows := []string{"\x00", "\x01", "\x01\x00", "\x01\x00\x05", "\x01\x01", "\x02", "\x02\x00", "\x03"}
	now := time.Now().UnixMilli()
	for _, tb := range []table.Table{tt, other} {
		var cells []table.Cell
		for _, r := range rows {
			for _, fam := range []string{"a", "b"} {
				if tb == other && fam == "b" {
					continue
				}
				cells = append(cells, table.Cell{Row: []byte(r), Family: fam, Qualifier: []byte("q"), Timestamp: now, Value: []byte("v")})
			}
		}
		if err := tb.Put(ctx, cells); err != nil {
			t.Fatal(err)
		}
	}
	if !sweepsTable(db, "ts") {
		t.Fatal("a table with a TTL is not the sweep's before DeleteRows")
	}
	if err := tt.(table.RowRangeDeleter).DeleteRows(ctx, []table.RowRange{{Start: []byte("\x01\x00"), Stop: []byte("\x02")}, {Start: []byte("\x05"), Stop: []byte("\x06")}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"\x00", "\x01", "\x02", "\x02\x00", "\x03"}
	sc := tt.Scan(ctx, table.ScanOptions{})
	var got []string
	for sc.Next() {
		got = append(got, string(sc.At().Key))
		if n := len(sc.At().Cells); n != 2 {
			t.Errorf("row %q: %d cells left, want 2", sc.At().Key, n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	if len(got) != len(want) {
		t.Fatalf("rows left %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("rows left %q, want %q", got, want)
		}
	}
	if n := rawCells(t, tt.(*tbl)); n != 2*len(want) {
		t.Errorf("%d cells stored, want %d", n, 2*len(want))
	}
	if n := rawCells(t, other.(*tbl)); n != len(rows) {
		t.Errorf("the other table lost cells: %d stored, want %d", n, len(rows))
	}
	if sweepsTable(db, "ts") {
		t.Error("the sweep still reads a table whose owner deletes its rows")
	}
	// To the end of the table.
	if err := tt.(table.RowRangeDeleter).DeleteRows(ctx, []table.RowRange{{Start: []byte("\x02\x00")}}); err != nil {
		t.Fatal(err)
	}
	if n := rawCells(t, tt.(*tbl)); n != 2*3 {
		t.Errorf("%d cells stored after deleting to the end, want 6", n)
	}
}

func sweepsTable(db *DB, name string) bool {
	for _, t := range db.sweepable() {
		if t.name == name {
			return true
		}
	}
	return false
}
