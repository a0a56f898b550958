package tabletest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// scanRows is how many rows the scan tests write: enough for several round
// trips and region boundaries, few enough for a quick test on HBase.
const scanRows = 300

// scanTable creates a table split in four regions holding scanRows rows
// row000..row299, each with cells a:q1, a:q2 and b:q, and returns the rows as
// a full scan must return them.
func scanTable(t *testing.T, s *suite) (table.Table, []table.Row) {
	db := s.newDB(t)
	spec := table.TableSpec{
		Name:      s.tableName(t),
		Families:  []table.FamilySpec{{Name: famA}, {Name: famB}},
		SplitKeys: [][]byte{[]byte("row100"), []byte("row2"), []byte("row2500")},
	}
	if err := db.CreateTable(t.Context(), spec); err != nil {
		t.Fatalf("CreateTable(%q): %v", spec.Name, err)
	}
	tb, err := db.Table(t.Context(), spec.Name)
	if err != nil {
		t.Fatalf("Table(%q): %v", spec.Name, err)
	}
	ts := recentTS()
	var cells []table.Cell
	for i := scanRows - 1; i >= 0; i-- {
		r := fmt.Sprintf("row%03d", i)
		cells = append(cells,
			cell(r, famB, "q", ts, r+"/b:q"),
			cell(r, famA, "q2", ts+1, r+"/a:q2"),
			cell(r, famA, "q1", ts, r+"/a:q1"))
	}
	put(t, tb, cells...)
	var want []table.Cell
	for i := range scanRows {
		r := fmt.Sprintf("row%03d", i)
		want = append(want, cell(r, famA, "q1", ts, r+"/a:q1"), cell(r, famA, "q2", ts+1, r+"/a:q2"), cell(r, famB, "q", ts, r+"/b:q"))
	}
	return tb, rowsOf(want...)
}

// project keeps the cells of rows that pass keep, dropping rows left empty.
func project(rows []table.Row, keep func(i int, c table.Cell) bool) []table.Row {
	var out []table.Row
	for _, r := range rows {
		var cells []table.Cell
		for i, c := range r.Cells {
			if keep(i, c) {
				cells = append(cells, c)
			}
		}
		if len(cells) > 0 {
			out = append(out, table.Row{Key: r.Key, Cells: cells})
		}
	}
	return out
}

func testScan(t *testing.T, s *suite) {
	tb, all := scanTable(t, s)
	row := func(i int) []byte { return fmt.Appendf(nil, "row%03d", i) }

	checkRows(t, "Scan of everything", scan(t, tb, table.ScanOptions{}), all)
	checkRows(t, "Scan [row050, row250)", scan(t, tb, table.ScanOptions{Start: row(50), Stop: row(250)}), all[50:250])
	checkRows(t, "Scan [nil, row010)", scan(t, tb, table.ScanOptions{Stop: row(10)}), all[:10])
	checkRows(t, "Scan [row290, nil)", scan(t, tb, table.ScanOptions{Start: row(290)}), all[290:])
	checkRows(t, "Scan [row0505, row0515)", scan(t, tb, table.ScanOptions{Start: []byte("row0505"), Stop: []byte("row0515")}), all[51:52])
	checkRows(t, "Scan past the last row", scan(t, tb, table.ScanOptions{Start: []byte("rox")}), nil)
	checkRows(t, "Scan of family b", scan(t, tb, table.ScanOptions{Family: famB}),
		project(all, func(_ int, c table.Cell) bool { return c.Family == famB }))
	checkRows(t, "Scan of family a, [row100, row103)", scan(t, tb, table.ScanOptions{Family: famA, Start: row(100), Stop: row(103)}),
		project(all[100:103], func(_ int, c table.Cell) bool { return c.Family == famA }))
	checkRows(t, "KeyOnly scan", scan(t, tb, table.ScanOptions{KeyOnly: true}), keyOnly(all))
	first := project(all, func(i int, _ table.Cell) bool { return i == 0 })
	checkRows(t, "FirstCellOnly scan", scan(t, tb, table.ScanOptions{FirstCellOnly: true}), first)
	checkRows(t, "FirstCellOnly KeyOnly scan", scan(t, tb, table.ScanOptions{FirstCellOnly: true, KeyOnly: true}), keyOnly(first))
	checkRows(t, "FirstCellOnly scan of family b", scan(t, tb, table.ScanOptions{FirstCellOnly: true, Family: famB}),
		project(all, func(_ int, c table.Cell) bool { return c.Family == famB }))
	checkRows(t, "Scan with 7 rows per call", scan(t, tb, table.ScanOptions{RowsPerCall: 7}), all)
	checkRows(t, "Scan with 1 row per call across a split", scan(t, tb, table.ScanOptions{RowsPerCall: 1, Start: row(90), Stop: row(110)}), all[90:110])

	// A scanner closed early, twice, stops.
	sc := tb.Scan(t.Context(), table.ScanOptions{RowsPerCall: 2})
	for i := range 3 {
		if !sc.Next() {
			t.Fatalf("early close: Next %d returned false: %v", i, sc.Err())
		}
		checkRows(t, "row before early Close", []table.Row{cloneRow(sc.At())}, all[i:i+1])
	}
	if err := sc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := sc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if sc.Next() {
		t.Errorf("Next after Close returned true")
	}
}

func testScanCancel(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	const n = 2000
	ts := recentTS()
	cells := make([]table.Cell, n)
	for i := range cells {
		cells[i] = cell(fmt.Sprintf("r%05d", i), famA, "q", ts, "v")
	}
	put(t, tb, cells...)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	sc := tb.Scan(ctx, table.ScanOptions{})
	if sc.Next() {
		t.Errorf("Next with a cancelled context returned true")
	}
	if err := sc.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err of a scan with a cancelled context: got %v, want context.Canceled", err)
	}
	if err := sc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	sc = tb.Scan(ctx, table.ScanOptions{RowsPerCall: 10})
	defer sc.Close()
	if !sc.Next() {
		t.Fatalf("Next: %v", sc.Err())
	}
	cancel()
	rows := 1
	for sc.Next() {
		rows++
	}
	if rows == n {
		t.Errorf("scan cancelled after its first row went on to read all %d rows", n)
	}
	if err := sc.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err of a scan cancelled midway: got %v, want context.Canceled", err)
	}
}
