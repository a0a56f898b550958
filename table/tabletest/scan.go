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
	_, tb := s.createTable(t, table.TableSpec{
		Name:      s.tableName(t),
		Families:  []table.FamilySpec{{Name: famA}, {Name: famB}},
		SplitKeys: [][]byte{[]byte("row100"), []byte("row2"), []byte("row2500")},
	})
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

func testScanRanges(t *testing.T, s *suite) {
	tb, all := scanTable(t, s)
	row := func(i int) []byte { return fmt.Appendf(nil, "row%03d", i) }
	rng := func(a, b int) table.RowRange { return table.RowRange{Start: row(a), Stop: row(b)} }
	// Ranges within a region, across the split at row100, a one-row range,
	// ranges next to each other, and one past the last row.
	ranges := []table.RowRange{rng(3, 5), rng(10, 12), rng(98, 103), rng(150, 151), rng(151, 153),
		rng(249, 252), {Start: []byte("row2995"), Stop: []byte("rox")}}
	var want []table.Row
	for _, r := range ranges {
		for i := range all {
			if k := string(all[i].Key); k >= string(r.Start) && k < string(r.Stop) {
				want = append(want, all[i])
			}
		}
	}
	checkRows(t, "Scan of ranges", scan(t, tb, table.ScanOptions{Ranges: ranges}), want)
	checkRows(t, "Scan of ranges, 1 row per call", scan(t, tb, table.ScanOptions{Ranges: ranges, RowsPerCall: 1}), want)
	checkRows(t, "Scan of ranges, Start and Stop ignored", scan(t, tb, table.ScanOptions{Ranges: ranges, Start: row(200), Stop: row(201)}), want)
	first := project(want, func(i int, _ table.Cell) bool { return i == 0 })
	checkRows(t, "Scan of ranges, first cell, key only", scan(t, tb, table.ScanOptions{Ranges: ranges, FirstCellOnly: true, KeyOnly: true}), keyOnly(first))
	checkRows(t, "Scan of ranges, family b, key filter", scan(t, tb, table.ScanOptions{Ranges: ranges, Family: famB,
		Filter: &table.KeyFilter{Regex: `row..[1-3]`}}),
		project(want, func(_ int, c table.Cell) bool {
			k := string(c.Row)
			return c.Family == famB && k[5] >= '1' && k[5] <= '3'
		}))

	groups, err := table.GroupRanges(t.Context(), tb, ranges)
	if err != nil {
		t.Fatalf("GroupRanges: %v", err)
	}
	var flat []table.RowRange
	var got []table.Row
	for _, g := range groups {
		if len(g) == 0 {
			t.Errorf("GroupRanges returned an empty group")
		}
		flat = append(flat, g...)
		got = append(got, scan(t, tb, table.ScanOptions{Ranges: g})...)
	}
	if fmt.Sprint(flat) != fmt.Sprint(ranges) {
		t.Errorf("GroupRanges: groups %q do not hold each range once, in order: %q", groups, ranges)
	}
	checkRows(t, "Scan of each group", got, want)

	for _, bad := range [][]table.RowRange{
		{rng(5, 3)}, {rng(3, 3)}, {{Start: row(3)}}, {rng(3, 10), rng(5, 12)},
	} {
		sc := tb.Scan(t.Context(), table.ScanOptions{Ranges: bad})
		if sc.Next() || sc.Err() == nil {
			t.Errorf("Scan of ranges %q: want an error", bad)
		}
		_ = sc.Close()
	}
}
