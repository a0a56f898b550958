package tabletest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

func testKeyFilter(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ts := recentTS()
	keys := []string{
		"a", "a\n", "ab", "abc", "axb", "a\x00b", "a\nb", "a\xffb", "a\x80", "b\n", "\n", "\x00\x00\x00\x00",
		"k1", "k1x1", "k1x1extra", "k1x2", "k2x1", "k2y1", "\xff\x00\xff\x01", "\xff\x01\xfe\x01",
	}
	var cells []table.Cell
	for _, k := range keys {
		cells = append(cells, cell(k, famA, "q", ts, k), cell(k, famB, "q", ts, k))
	}
	put(t, tb, cells...)
	rowsFor := func(keys ...string) []table.Row {
		slices.Sort(keys)
		var cells []table.Cell
		for _, k := range keys {
			cells = append(cells, cell(k, famA, "q", ts, k), cell(k, famB, "q", ts, k))
		}
		return rowsOf(cells...)
	}
	fuzzy := func(key, mask string) table.FuzzyKey {
		return table.FuzzyKey{Key: []byte(key), Mask: []byte(mask)}
	}
	for _, tc := range []struct {
		name   string
		opts   table.ScanOptions
		want   []table.Row
		mangle func([]table.Row) []table.Row
	}{
		{name: "regex matches the whole key", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: "a"}}, want: rowsFor("a")},
		{name: "regex dot-all over binary", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: "(?s)a.b"}}, want: rowsFor("axb", "a\x00b", "a\nb", "a\xffb")},
		{name: "regex byte escape", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: `a\xFFb`}}, want: rowsFor("a\xffb")},
		{name: "regex newline anywhere", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: `(?s).*\x0a.*`}}, want: rowsFor("a\n", "a\nb", "b\n", "\n")},
		{name: "regex high byte class", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: `(?s)a[\x80-\xff].*`}}, want: rowsFor("a\xffb", "a\x80")},
		{name: "regex alternation", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: `(?:ab|b\x0a)c?`}}, want: rowsFor("ab", "abc", "b\n")},
		{name: "regex counted", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: `\x00{4}|k[12]{1,2}`}}, want: rowsFor("\x00\x00\x00\x00", "k1")},
		{name: "regex anchors", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: `^k.x.$`}}, want: rowsFor("k1x1", "k1x2", "k2x1")},
		{name: "regex matching nothing", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: "zzz"}}, want: nil},
		{name: "fuzzy", opts: table.ScanOptions{Filter: &table.KeyFilter{Fuzzy: []table.FuzzyKey{fuzzy("k\x00x\x00", "\x00\x01\x00\x01")}}},
			want: rowsFor("k1x1", "k1x1extra", "k1x2", "k2x1")},
		{name: "fuzzy patterns or", opts: table.ScanOptions{Filter: &table.KeyFilter{Fuzzy: []table.FuzzyKey{
			fuzzy("k1\x00\x00", "\x00\x00\x01\x01"), fuzzy("\x00\x00y\x00", "\x01\x01\x00\x01")}}},
			want: rowsFor("k1x1", "k1x1extra", "k1x2", "k2y1")},
		{name: "fuzzy binary", opts: table.ScanOptions{Filter: &table.KeyFilter{Fuzzy: []table.FuzzyKey{fuzzy("\xff\x00\xff\x00", "\x00\x01\x00\x01")}}},
			want: rowsFor("\xff\x00\xff\x01")},
		{name: "regex and fuzzy", opts: table.ScanOptions{Filter: &table.KeyFilter{Regex: `(?s).*1`, Fuzzy: []table.FuzzyKey{fuzzy("k\x00x\x00", "\x00\x01\x00\x01")}}},
			want: rowsFor("k1x1", "k2x1")},
		{name: "fuzzy in a range", opts: table.ScanOptions{Start: []byte("k1x2"), Stop: []byte("k2y"), Filter: &table.KeyFilter{Fuzzy: []table.FuzzyKey{fuzzy("k\x00x\x00", "\x00\x01\x00\x01")}}},
			want: rowsFor("k1x2", "k2x1")},
		{name: "regex, family, first cell, key only", opts: table.ScanOptions{Family: famB, FirstCellOnly: true, KeyOnly: true, RowsPerCall: 1, Filter: &table.KeyFilter{Regex: `k.x.`}},
			want: rowsFor("k1x1", "k1x2", "k2x1"), mangle: func(rows []table.Row) []table.Row {
				return keyOnly(project(rows, func(_ int, c table.Cell) bool { return c.Family == famB }))
			}},
	} {
		want := tc.want
		if tc.mangle != nil {
			want = tc.mangle(want)
		}
		checkRows(t, fmt.Sprintf("Scan with filter (%s)", tc.name), scan(t, tb, tc.opts), want)
	}
}
