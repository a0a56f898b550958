package hbasetable

import (
	"context"
	"fmt"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
	"github.com/prom-hbase/prom-hbase/table"
)

// Filter maps scan options to HBase's server-side filters: the key filter
// to RowFilter (regex) and FuzzyRowFilter, QualifierPrefixes to
// MultipleColumnPrefixFilter, KeyOnly to KeyOnlyFilter, all in one
// MUST_PASS_ALL list. Nil when nothing filters. FirstCellOnly is no filter
// (see Scan).
func Filter(opts *table.ScanOptions) hrpc.Filter {
	var fs []hrpc.Filter
	if len(opts.Ranges) > 0 {
		// First: its seek hints skip the gaps before the other filters run.
		fs = append(fs, rangesFilter(opts.Ranges))
	}
	if f := opts.Filter; f != nil {
		if f.Regex != "" {
			// Java's find() matches anywhere and its $ also matches before
			// a final line break: \z anchors at the very end of the key.
			fs = append(fs, hrpc.RowFilter{Op: pb.CompareType_EQUAL, Comparator: hrpc.RegexStringComparator{
				Pattern: `^(?:` + f.Regex + `)\z`, Charset: "ISO-8859-1"}})
		}
		if len(f.Fuzzy) > 0 {
			fs = append(fs, fuzzyFilter(f.Fuzzy))
		}
	}
	if len(opts.QualifierPrefixes) > 0 {
		fs = append(fs, hrpc.MultipleColumnPrefixFilter{Prefixes: opts.QualifierPrefixes})
	}
	if opts.KeyOnly {
		fs = append(fs, hrpc.KeyOnlyFilter{})
	}
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return hrpc.FilterList{Op: pb.FilterList_MUST_PASS_ALL, Filters: fs}
}

// fuzzyFilter builds a FuzzyRowFilter that also holds keys to the length
// of the pattern: HBase's accepts a key shorter than the pattern when the
// key matches the pattern's prefix. Patterns are grouped by length; each
// group's filter goes with a RowFilter asking for that many bytes.
func fuzzyFilter(patterns []table.FuzzyKey) hrpc.Filter {
	var lengths []int
	groups := map[int][]hrpc.FuzzyKey{}
	for _, k := range patterns {
		n := len(k.Key)
		if _, ok := groups[n]; !ok {
			lengths = append(lengths, n)
		}
		groups[n] = append(groups[n], hrpc.FuzzyKey{Key: k.Key, Mask: k.Mask})
	}
	var any []hrpc.Filter
	for _, n := range lengths {
		minLen := hrpc.RowFilter{Op: pb.CompareType_EQUAL, Comparator: hrpc.RegexStringComparator{
			Pattern: fmt.Sprintf(`(?s)^.{%d}`, n), Charset: "ISO-8859-1"}}
		any = append(any, hrpc.FilterList{Op: pb.FilterList_MUST_PASS_ALL, Filters: []hrpc.Filter{
			hrpc.FuzzyRowFilter{Keys: groups[n]}, minLen}})
	}
	if len(any) == 1 {
		return any[0]
	}
	return hrpc.FilterList{Op: pb.FilterList_MUST_PASS_ONE, Filters: any}
}

func rangesFilter(ranges []table.RowRange) hrpc.Filter {
	f := hrpc.MultiRowRangeFilter{Ranges: make([]hrpc.RowRange, len(ranges))}
	for i, r := range ranges {
		f.Ranges[i] = hrpc.RowRange{Start: r.Start, StartInclusive: true, Stop: r.Stop}
	}
	return f
}

// Scan iterates over a key range, or over the ranges of opts.Ranges with
// one scanner: from the first range's start to the last one's stop, a
// MultiRowRangeFilter making the region server seek over the gaps.
func (t *Table) Scan(ctx context.Context, opts table.ScanOptions) table.Scanner {
	if err := table.CheckQualifierPrefixes(opts.QualifierPrefixes); err != nil {
		return &scanner{err: fmt.Errorf("hbasetable: scan %s: %w", t.name, err)}
	}
	if n := len(opts.Ranges); n > 0 {
		if err := table.CheckRanges(opts.Ranges); err != nil {
			return &scanner{err: fmt.Errorf("hbasetable: scan %s: %w", t.name, err)}
		}
		opts.Start, opts.Stop = opts.Ranges[0].Start, opts.Ranges[n-1].Stop
	}
	s := &hrpc.Scan{Start: opts.Start, Stop: opts.Stop, Filter: Filter(&opts)}
	if opts.Family != "" {
		s.Families = [][]byte{[]byte(opts.Family)}
	}
	if opts.FirstCellOnly {
		// The store limit, not FirstKeyOnlyFilter: filters see cells before
		// HBase resolves deletes on a NEW_VERSION_BEHAVIOR family, so the
		// filter could stop at a deleted cell and hide the whole row (seen
		// after the compactor deleted a row's raw cells). The scanner keeps
		// the first cell of a row of several families. The limit counts
		// the cells the filters let through, so with QualifierPrefixes it
		// is the first matching cell.
		s.CellsPerFamily = 1
	}
	sc := t.c.Scan(ctx, t.name, s, hbase.ScanOptions{RowsPerCall: opts.RowsPerCall})
	return &scanner{sc: sc, name: t.name, firstOnly: opts.FirstCellOnly}
}

type scanner struct {
	err       error // set when the scan could not start
	sc        *hbase.Scanner
	name      string
	firstOnly bool
	cells     []table.Cell
	fam       string
	row       table.Row
}

func (s *scanner) Next() bool {
	if s.err != nil || !s.sc.Next() {
		return false
	}
	r := s.sc.At()
	s.cells = convert(s.cells[:0], r.Cells, &s.fam)
	if s.firstOnly && len(s.cells) > 1 {
		s.cells = s.cells[:1]
	}
	s.row = table.Row{Key: r.Key, Cells: s.cells}
	return true
}

func (s *scanner) At() table.Row { return s.row }

func (s *scanner) Err() error {
	if s.err != nil {
		return s.err
	}
	if err := s.sc.Err(); err != nil {
		return fmt.Errorf("hbasetable: scan %s: %w", s.name, err)
	}
	return nil
}

func (s *scanner) Close() error {
	if s.sc == nil {
		return nil
	}
	return s.sc.Close()
}

// GroupRanges groups the ranges by the region their start lies in, as the
// client's location cache has it: one scan per region then serves them. A
// range that crosses into the next region stays whole in its first group
// (the scanner follows it across).
func (t *Table) GroupRanges(ctx context.Context, ranges []table.RowRange) ([][]table.RowRange, error) {
	var (
		out  [][]table.RowRange
		last *hbase.RegionInfo
	)
	for i, r := range ranges {
		reg, err := t.c.RegionOf(ctx, t.name, r.Start)
		if err != nil {
			return nil, fmt.Errorf("hbasetable: locate %s: %w", t.name, err)
		}
		if last != nil && string(reg.Name) == string(last.Name) {
			out[len(out)-1] = append(out[len(out)-1], ranges[i])
			continue
		}
		out = append(out, []table.RowRange{ranges[i]})
		last = reg
	}
	return out, nil
}
