package tabletest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// prefixRows is how many rows testQualifierPrefixes writes, over four
// regions (splits at row10, row20, row30).
const prefixRows = 40

// mark is a qualifier shaped like the compaction table's marks: 'r', a
// 2-byte metric UID, a 1-byte process ID.
func mark(uid, pid byte) string { return string([]byte{'r', 0, uid, pid}) }

// expectScan is what a scan with opts returns of rows (a full scan's
// result), keepRow standing in for opts.Filter.
func expectScan(rows []table.Row, opts table.ScanOptions, keepRow func(key []byte) bool) []table.Row {
	inRange := func(k []byte) bool {
		if len(opts.Ranges) == 0 {
			return (opts.Start == nil || bytes.Compare(k, opts.Start) >= 0) && (opts.Stop == nil || bytes.Compare(k, opts.Stop) < 0)
		}
		for _, r := range opts.Ranges {
			if bytes.Compare(k, r.Start) >= 0 && bytes.Compare(k, r.Stop) < 0 {
				return true
			}
		}
		return false
	}
	var out []table.Row
	for _, r := range rows {
		if !inRange(r.Key) || (keepRow != nil && !keepRow(r.Key)) {
			continue
		}
		var cells []table.Cell
		for _, c := range r.Cells {
			if opts.Family != "" && c.Family != opts.Family {
				continue
			}
			match := len(opts.QualifierPrefixes) == 0
			for _, p := range opts.QualifierPrefixes {
				match = match || bytes.HasPrefix(c.Qualifier, p)
			}
			if match {
				cells = append(cells, c)
			}
		}
		if len(cells) == 0 {
			continue
		}
		if opts.FirstCellOnly {
			cells = cells[:1]
		}
		out = append(out, table.Row{Key: r.Key, Cells: cells})
	}
	if opts.KeyOnly {
		out = keyOnly(out)
	}
	return out
}

func testQualifierPrefixes(t *testing.T, s *suite) {
	_, tb := s.createTable(t, table.TableSpec{
		Name:      s.tableName(t),
		Families:  []table.FamilySpec{{Name: famA}, {Name: famB}},
		SplitKeys: [][]byte{[]byte("row10"), []byte("row20"), []byte("row30")},
	})
	// Row i holds in family a: filler qualifiers before the marks, marks of
	// UIDs 0..5 with 1 to 3 process IDs each (UIDs 1 and 4 absent from rows
	// i%3 == 2, and all marks of UIDs 1 and 4 absent from row20..row29, a
	// whole region), and a qualifier after them; in family b, marks of UIDs
	// 1 and 4 in every fifth row (so row05 and row35 match in b alone).
	ts := recentTS()
	var cells []table.Cell
	for i := range prefixRows {
		r := fmt.Sprintf("row%02d", i)
		for j := range 20 {
			cells = append(cells, cell(r, famA, fmt.Sprintf("a%02d", j), ts, "filler"))
		}
		for uid := range byte(6) {
			if (uid == 1 || uid == 4) && (i%3 == 2 || i/10 == 2) {
				continue
			}
			for pid := range byte(i%3 + 1) {
				cells = append(cells, cell(r, famA, mark(uid, pid), ts+int64(pid), fmt.Sprintf("%s/a/%d/%d", r, uid, pid)))
			}
		}
		cells = append(cells, cell(r, famA, "s", ts, "after"))
		if i%5 == 0 && i/10 != 2 {
			cells = append(cells, cell(r, famB, mark(1, 9), ts, r+"/b/1"), cell(r, famB, mark(4, 0), ts, r+"/b/4"))
		}
		cells = append(cells, cell(r, famB, "z", ts, "b after"))
	}
	put(t, tb, cells...)
	all := scan(t, tb, table.ScanOptions{})
	if n := len(all); n != prefixRows {
		t.Fatalf("full scan: %d rows, want %d", n, prefixRows)
	}

	marks := [][]byte{[]byte(mark(1, 0)[:3]), []byte(mark(4, 0)[:3])}
	row := func(i int) []byte { return fmt.Appendf(nil, "row%02d", i) }
	rng := func(a, b int) table.RowRange { return table.RowRange{Start: row(a), Stop: row(b)} }
	ranges := []table.RowRange{rng(1, 3), rng(4, 6), rng(9, 12), rng(19, 31), rng(35, 36)}
	regex := `row[0-3][05]`
	for _, tc := range []struct {
		name    string
		opts    table.ScanOptions
		keepRow func([]byte) bool
		minRows int // guards the case against testing nothing
	}{
		{name: "two UIDs", opts: table.ScanOptions{}, minRows: 20},
		{name: "one process ID", opts: table.ScanOptions{QualifierPrefixes: [][]byte{[]byte(mark(2, 2))}}, minRows: 10},
		{name: "before, between and after the marks", opts: table.ScanOptions{QualifierPrefixes: [][]byte{
			[]byte("a05"), []byte(mark(0, 0)), []byte(mark(3, 1)), []byte("s"), []byte("z")}}, minRows: prefixRows},
		{name: "matching nothing", opts: table.ScanOptions{QualifierPrefixes: [][]byte{[]byte(mark(9, 0)[:3]), []byte("t")}}},
		{name: "family a", opts: table.ScanOptions{Family: famA}, minRows: 10},
		{name: "family b", opts: table.ScanOptions{Family: famB}, minRows: 5},
		{name: "key only", opts: table.ScanOptions{KeyOnly: true}, minRows: 20},
		{name: "first cell", opts: table.ScanOptions{FirstCellOnly: true}, minRows: 20},
		{name: "first cell, key only, family b", opts: table.ScanOptions{FirstCellOnly: true, KeyOnly: true, Family: famB}, minRows: 5},
		{name: "ranges", opts: table.ScanOptions{Ranges: ranges}, minRows: 5},
		{name: "ranges, first cell, key only, 1 row per call", opts: table.ScanOptions{Ranges: ranges, FirstCellOnly: true, KeyOnly: true, RowsPerCall: 1}, minRows: 5},
		{name: "1 row per call", opts: table.ScanOptions{RowsPerCall: 1}, minRows: 20},
		{name: "2 rows per call, family a, [row05, row35)", opts: table.ScanOptions{RowsPerCall: 2, Family: famA, Start: row(5), Stop: row(35)}, minRows: 10},
		{name: "key filter", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: regex}, RowsPerCall: 1},
			keepRow: func(k []byte) bool { return k[3] <= '3' && (k[4] == '0' || k[4] == '5') }, minRows: 4},
	} {
		if tc.opts.QualifierPrefixes == nil {
			tc.opts.QualifierPrefixes = marks
		}
		want := expectScan(all, tc.opts, tc.keepRow)
		if len(want) < tc.minRows {
			t.Fatalf("%s: the data gives %d rows, the case wants at least %d", tc.name, len(want), tc.minRows)
		}
		checkRows(t, fmt.Sprintf("Scan with qualifier prefixes (%s)", tc.name), scan(t, tb, tc.opts), want)
	}
	// The first-cell cases must see a row that family b alone matches.
	onlyB := false
	for _, r := range expectScan(all, table.ScanOptions{QualifierPrefixes: marks, FirstCellOnly: true}, nil) {
		onlyB = onlyB || string(r.Key) == "row05" && r.Cells[0].Family == famB
	}
	if !onlyB {
		t.Fatalf("the data lacks row05 matching in family b alone")
	}

	for _, bad := range [][][]byte{
		{[]byte("b"), []byte("a")}, {[]byte("a"), []byte("a")}, {{}}, {[]byte("a"), {}},
		{[]byte("r"), []byte("r\x00")}, {[]byte("a"), []byte("r"), []byte("r\x00")},
	} {
		sc := tb.Scan(t.Context(), table.ScanOptions{QualifierPrefixes: bad})
		if sc.Next() || sc.Err() == nil {
			t.Errorf("Scan with qualifier prefixes %q: want an error", bad)
		}
		_ = sc.Close()
	}
}

// testQualifierPrefixesAddedFamily: in a table whose added family sorts
// before the first one, the first matching cell is still the first by
// family name.
func testQualifierPrefixesAddedFamily(t *testing.T, s *suite) {
	spec := table.TableSpec{Name: s.tableName(t), Families: []table.FamilySpec{{Name: "t"}}}
	db, tb := s.createTable(t, spec)
	if err := db.AddFamily(t.Context(), spec.Name, table.FamilySpec{Name: "a"}); err != nil {
		t.Fatalf("AddFamily: %v", err)
	}
	ts := recentTS()
	put(t, tb,
		cell("x1", "t", mark(1, 0), ts, "x1 t"), cell("x1", "a", mark(1, 5), ts, "x1 a"), cell("x1", "a", "b", ts, "x1 a b"),
		cell("x2", "t", mark(1, 0), ts, "x2 t"), cell("x2", "a", "b", ts, "x2 a b"),
		cell("x3", "a", "q", ts, "x3 a q"),
		cell("x4", "a", mark(1, 1), ts, "x4 a"), cell("x4", "t", "z", ts, "x4 t z"))
	all := scan(t, tb, table.ScanOptions{})
	prefixes := [][]byte{[]byte(mark(1, 0)[:3])}
	for _, opts := range []table.ScanOptions{
		{QualifierPrefixes: prefixes},
		{QualifierPrefixes: prefixes, FirstCellOnly: true},
		{QualifierPrefixes: prefixes, FirstCellOnly: true, KeyOnly: true, RowsPerCall: 1},
		{QualifierPrefixes: prefixes, Family: "t", FirstCellOnly: true},
	} {
		want := expectScan(all, opts, nil)
		if len(want) < 2 {
			t.Fatalf("scan %+v: the data gives %d rows", opts, len(want))
		}
		checkRows(t, fmt.Sprintf("Scan with qualifier prefixes, added family (%+v)", opts), scan(t, tb, opts), want)
	}
}
