package pebbletable

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestCheckKeys: cells under keys no read can return (as Put wrote them for
// long rows before the fix) are deleted at the first Open that checks, the
// others kept; once checked, a database is not checked again.
func TestCheckKeys(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := Open(dir, Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	spec := table.TableSpec{Name: "t", Families: []table.FamilySpec{{Name: "a"}, {Name: "b"}}}
	tb, err := table.EnsureTable(ctx, db, spec)
	if err != nil {
		t.Fatal(err)
	}
	good := []table.Cell{
		{Row: []byte("r1"), Family: "a", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("1")},
		{Row: []byte("r\x00" + strings.Repeat("x", 500)), Family: "b", Qualifier: []byte("q"), Timestamp: 2, Value: []byte("2")},
	}
	if err := tb.Put(ctx, good); err != nil {
		t.Fatal(err)
	}
	id := db.tables["t"].id
	value := make([]byte, tsLen+1)
	bad := [][]byte{
		append(appendTablePrefix(nil, id), "no row end"...),    // does not parse
		append(appendRowPrefix(nil, id, []byte("r0")), 7, 'q'), // no family has byte 7
		appendCellKey(nil, id+5, []byte("r2"), 0, []byte("q")), // no such table
		append(appendTablePrefix(nil, id), 0, 0x33),            // a bad escape
		{cellPrefix, 1},                        // shorter than a table prefix
		appendRowPrefix(nil, id, []byte("r1")), // a row end and no family byte
		append(appendTablePrefix(nil, id), strings.Repeat("garbage", 100)...), // what the bug left
	}
	inject := func() {
		t.Helper()
		for _, k := range bad {
			if err := db.pdb.Set(k, value, pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
	}
	inject()
	if _, err := scanAll(tb); err == nil || !strings.Contains(err.Error(), "corrupt cell key") {
		t.Fatalf("a scan over the injected keys: %v", err)
	}
	// A database that predates the check: no marker.
	if err := db.pdb.Delete(keysCheckedKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, dir, Options{SweepInterval: -1})
	tb, err = db.Table(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := scanAll(tb)
	if err != nil {
		t.Fatalf("scan after the check: %v", err)
	}
	if len(rows) != 2 || string(rows[0].Cells[0].Value) != "2" || string(rows[1].Cells[0].Value) != "1" {
		t.Fatalf("scan after the check: %v", rows)
	}
	for _, k := range bad {
		if _, closer, err := db.pdb.Get(k); err == nil {
			_ = closer.Close()
			t.Errorf("key %q is still there", k)
		}
	}
	if n, err := db.checkKeys(); n != 0 || err != nil {
		t.Errorf("checked again: %d deleted, %v", n, err)
	}
	// Checked once: keys injected now stay (and no writer makes them).
	inject()
	if n, err := db.checkKeys(); n != 0 || err != nil {
		t.Errorf("checked again after the marker: %d deleted, %v", n, err)
	}
}

func scanAll(tb table.Table) ([]table.Row, error) {
	sc := tb.Scan(context.Background(), table.ScanOptions{})
	defer sc.Close()
	var rows []table.Row
	for sc.Next() {
		r := sc.At()
		rows = append(rows, table.Row{Key: append([]byte(nil), r.Key...), Cells: append([]table.Cell(nil), r.Cells...)})
		for i, c := range rows[len(rows)-1].Cells {
			rows[len(rows)-1].Cells[i].Value = append([]byte(nil), c.Value...)
		}
	}
	return rows, sc.Err()
}

// BenchmarkCheckKeys: the one-time check over a store of a million cells of
// data-table-like keys (rows of 24 bytes, 4 cells each), flushed to disk as
// a store of that size would be: what a first start after the fix costs.
func BenchmarkCheckKeys(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, b.TempDir(), Options{SweepInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	tb, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "t", Families: []table.FamilySpec{{Name: "r"}, {Name: "t"}}})
	if err != nil {
		b.Fatal(err)
	}
	const rows, perRow = 250_000, 4
	var cells []table.Cell
	for r := range rows {
		row := fmt.Appendf(nil, "\x03\x00\x00\x01%08x\x00\x00\x01\x00\x00\x02\x00\x00\x05\x00\x00", r)
		for q := range perRow {
			cells = append(cells, table.Cell{Row: row, Family: "r", Qualifier: []byte{0, byte(q), 0x10, 0}, Timestamp: 1, Value: []byte("\x40\x59\x00\x00\x00\x00\x00\x00")})
		}
		if len(cells) >= 10_000 {
			if err := tb.Put(ctx, cells); err != nil {
				b.Fatal(err)
			}
			cells = cells[:0]
		}
	}
	if err := db.pdb.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := db.pdb.Delete(keysCheckedKey, pebble.Sync); err != nil {
			b.Fatal(err)
		}
		if n, err := db.checkKeys(); n != 0 || err != nil {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*perRow), "ns/cell")
}

// TestCheckKeysBatches: more bad keys than one batch of deletions holds
// are all deleted.
func TestCheckKeysBatches(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	b := db.pdb.NewBatch()
	const n = 100_000 // of 64 bytes: more than keyCheckBatch
	for i := range n {
		k := append(appendTablePrefix(nil, 9), fmt.Sprintf("%059d", i)...)
		if err := b.Set(k, []byte("value of a cell"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Delete(keysCheckedKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if got, err := db.checkKeys(); got != n || err != nil {
		t.Fatalf("deleted %d, want %d: %v", got, n, err)
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{cellPrefix}, UpperBound: []byte{cellPrefix + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.First() {
		t.Errorf("a key is left: %q", it.Key())
	}
}
