package pebbletable

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// scanner walks a table's cells in key order and assembles them into rows.
// The row it returns lives in buffers that the next call to Next reuses.
type scanner struct {
	t      *tbl
	ctx    context.Context
	it     *pebble.Iterator
	opts   table.ScanOptions
	family int // -1: all
	fams   *famSet
	// sortRows is set when the scan reads all families of a table whose
	// key byte order is not name order: rows are then put in (family,
	// qualifier) order when complete (finishRow).
	sortRows bool
	unsorted bool // the current row's cells are out of family order
	filter   *keyFilter
	prefixes [][]byte         // ScanOptions.QualifierPrefixes; nil: every qualifier
	ranges   []table.RowRange // the ranges not passed yet (ScanOptions.Ranges)
	cutoffs  []int64
	err      error
	done     bool
	steps    int
	stepped  int // cells of other families stepped over since the last wanted one (skipFamily)

	rowPrefix []byte // table prefix, escaped row, terminator of the current row
	seekBuf   []byte
	row       table.Row
	keyBuf    []byte // decoded current row key
	arena     []byte // qualifiers and values of the current row
	entered   bool   // counted in by the DB's gate until Close
}

// ctxCheckEvery is how many cells a scan steps over between looks at its
// context: often enough to stop promptly, rarely enough to cost nothing.
const ctxCheckEvery = 256

// Scan implements table.Table.
func (t *tbl) Scan(ctx context.Context, opts table.ScanOptions) table.Scanner {
	s := &scanner{t: t, ctx: ctx, opts: opts, family: -1}
	if s.err = t.db.enter(ctx); s.err != nil {
		return s
	}
	s.entered = true
	if opts.Family != "" {
		f, err := t.family(opts.Family)
		if err != nil {
			s.err = fmt.Errorf("scan: %w", err)
			return s
		}
		s.family = int(f)
	}
	if s.filter, s.err = compileKeyFilter(opts.Filter); s.err != nil {
		return s
	}
	if s.err = table.CheckQualifierPrefixes(opts.QualifierPrefixes); s.err != nil {
		return s
	}
	if len(opts.QualifierPrefixes) > 0 {
		s.prefixes = opts.QualifierPrefixes
	}
	lower, upper := t.prefix, t.end
	if n := len(opts.Ranges); n > 0 {
		if s.err = table.CheckRanges(opts.Ranges); s.err != nil {
			return s
		}
		s.ranges = opts.Ranges
		opts.Start, opts.Stop = opts.Ranges[0].Start, opts.Ranges[n-1].Stop
	}
	if opts.Start != nil {
		lower = appendEscapedRow(append([]byte(nil), t.prefix...), opts.Start)
	}
	if opts.Stop != nil {
		upper = appendEscapedRow(append([]byte(nil), t.prefix...), opts.Stop)
	}
	if bytes.Compare(lower, upper) >= 0 {
		s.done = true // an empty range; Pebble wants lower < upper
		return s
	}
	if s.it, s.err = t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper}); s.err != nil {
		s.err = fmt.Errorf("scan %q: %w", t.name, s.err)
		return s
	}
	// After the iterator: the families then include those of every cell
	// it can see.
	s.fams = t.fams.Load()
	s.cutoffs = t.cutoffs(nil, s.fams, t.db.nowMillis())
	s.sortRows = s.family < 0 && !s.fams.ordered
	s.it.First()
	return s
}

func (s *scanner) Next() bool {
	if s.err != nil || s.done {
		return false
	}
	s.row.Cells = s.row.Cells[:0]
	s.arena = s.arena[:0]
	s.rowPrefix = s.rowPrefix[:0]
	s.unsorted = false
	it := s.it
	for it.Valid() {
		if s.steps++; s.steps%ctxCheckEvery == 0 {
			if err := s.ctx.Err(); err != nil {
				s.err = err
				return false
			}
		}
		k := it.Key()
		if len(s.rowPrefix) == 0 || !bytes.HasPrefix(k, s.rowPrefix) {
			if len(s.row.Cells) > 0 {
				s.finishRow()
				return true // the next row starts here
			}
			if !s.enterRow(k) {
				return false
			}
			if s.ranges != nil && !s.inRanges() {
				if len(s.ranges) == 0 {
					break
				}
				continue
			}
			if s.filter != nil && !s.filter.accept(s.keyBuf) {
				it.SeekGE(s.pastRow())
				s.rowPrefix = s.rowPrefix[:0]
				continue
			}
		}
		fam := k[len(s.rowPrefix)]
		if s.family >= 0 && int(fam) != s.family {
			s.skipFamily(fam)
			continue
		}
		s.stepped = 0
		if s.prefixes != nil && s.skipQualifier(k, fam) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			s.err = fmt.Errorf("scan %q: %w", s.t.name, err)
			return false
		}
		if len(v) < tsLen {
			s.err = fmt.Errorf("scan %q: corrupt cell value of %d bytes", s.t.name, len(v))
			return false
		}
		family, ok := s.fams.name(fam)
		if !ok {
			s.err = fmt.Errorf("scan %q: %w", s.t.name, errFamilyByte(k))
			return false
		}
		ts := cellTimestamp(v)
		if ts < s.cutoffs[fam] {
			it.Next()
			continue
		}
		s.appendCell(k[len(s.rowPrefix)+1:], family, ts, v[tsLen:])
		if s.opts.FirstCellOnly {
			if !s.sortRows || fam == 0xFF {
				it.SeekGE(s.pastRow())
				if !s.sortRows {
					return true
				}
				continue
			}
			// The first cell in key order may not be the first by family
			// name: take the first of each family, finishRow keeps the
			// least. Where the row has no other family, this seek lands
			// where pastRow's would.
			it.SeekGE(append(append(s.seekBuf[:0], s.rowPrefix...), fam+1))
			continue
		}
		it.Next()
	}
	if err := it.Error(); err != nil {
		s.err = fmt.Errorf("scan %q: %w", s.t.name, err)
		return false
	}
	s.done = true
	if len(s.row.Cells) == 0 {
		return false
	}
	s.finishRow()
	return true
}

// nextsBeforeSeek is how many cells of other families a scan of one family
// steps over with Next before it seeks past them. A seek costs several
// Nexts (BenchmarkScanFamilyBeside: some 650 ns a row against 225 for the
// whole row read), and the common case is one cell: the fence cell beside
// each compacted row's chunks.
const nextsBeforeSeek = 4

// skipFamily steps past the current cell, of family fam, which a scan of
// s.family does not want: to the next cell while only a few were stepped
// over, else by a seek to s.family's first cell of the row, or past the
// row where fam comes after s.family.
func (s *scanner) skipFamily(fam byte) {
	if s.stepped < nextsBeforeSeek {
		s.stepped++
		s.it.Next()
		return
	}
	s.stepped = 0
	if int(fam) < s.family {
		s.seekBuf = append(append(s.seekBuf[:0], s.rowPrefix...), byte(s.family))
		s.it.SeekGE(s.seekBuf)
		return
	}
	s.it.SeekGE(s.pastRow())
}

// finishRow puts a complete row's cells in (family, qualifier) order, and
// keeps only the first for FirstCellOnly, when the scan reads families
// whose key bytes are not in name order.
func (s *scanner) finishRow() {
	if !s.sortRows {
		return
	}
	if s.unsorted {
		sortCells(s.row.Cells)
	}
	if s.opts.FirstCellOnly {
		s.row.Cells = s.row.Cells[:1]
	}
}

// enterRow makes the row of cell key k the current one.
func (s *scanner) enterRow(k []byte) bool {
	p := len(s.t.prefix)
	row, n, _, _, ok := splitCellKey(s.keyBuf[:0], k[p:])
	if !ok {
		s.err = fmt.Errorf("scan %q: corrupt cell key %q", s.t.name, k)
		return false
	}
	s.keyBuf = row
	s.rowPrefix = append(s.rowPrefix[:0], k[:p+n]...)
	return true
}

// inRanges reports whether the current row lies in the scan's ranges. It
// drops the ranges the row is past; when the row lies before the next
// range, it seeks to that range's start.
func (s *scanner) inRanges() bool {
	for len(s.ranges) > 0 && bytes.Compare(s.keyBuf, s.ranges[0].Stop) >= 0 {
		s.ranges = s.ranges[1:]
	}
	if len(s.ranges) == 0 {
		return false
	}
	if bytes.Compare(s.keyBuf, s.ranges[0].Start) < 0 {
		s.seekBuf = appendEscapedRow(append(s.seekBuf[:0], s.t.prefix...), s.ranges[0].Start)
		s.it.SeekGE(s.seekBuf)
		s.rowPrefix = s.rowPrefix[:0]
		return false
	}
	return true
}

// matchPrefixes reports whether qualifier q starts with one of prefixes
// (sorted, none a prefix of another), else which prefix is the first above
// q (len(prefixes): none is).
func matchPrefixes(prefixes [][]byte, q []byte) (next int, ok bool) {
	i, found := slices.BinarySearchFunc(prefixes, q, bytes.Compare)
	if found || (i > 0 && bytes.HasPrefix(q, prefixes[i-1])) {
		return 0, true
	}
	return i, false
}

// skipQualifier reports whether no prefix matches the qualifier of cell
// key k (of family fam); it then seeks to the family's first cell that the
// next prefix may match, or past the family when no prefix is left. Rows
// hold up to thousands of cells of which a scan wants a few: seeking skips
// the others unread. Out of Next's loop: written inline there, it slowed
// scans without prefixes by a few percent (BenchmarkScanKeys).
func (s *scanner) skipQualifier(k []byte, fam byte) bool {
	next, ok := matchPrefixes(s.prefixes, k[len(s.rowPrefix)+1:])
	if ok {
		return false
	}
	switch {
	case next < len(s.prefixes):
		s.it.SeekGE(append(append(append(s.seekBuf[:0], s.rowPrefix...), fam), s.prefixes[next]...))
	case s.family >= 0 || fam == 0xFF:
		s.it.SeekGE(s.pastRow())
	default:
		s.it.SeekGE(append(append(s.seekBuf[:0], s.rowPrefix...), fam+1))
	}
	return true
}

// pastRow returns the first key after every cell of the current row.
func (s *scanner) pastRow() []byte {
	s.seekBuf = append(s.seekBuf[:0], s.rowPrefix...)
	s.seekBuf[len(s.seekBuf)-1] = pastRow
	return s.seekBuf
}

func (s *scanner) appendCell(qualifier []byte, family string, ts int64, value []byte) {
	// Slices into an array the arena outgrows stay valid until the next row.
	start := len(s.arena)
	s.arena = append(s.arena, qualifier...)
	if !s.opts.KeyOnly {
		s.arena = append(s.arena, value...)
	}
	q := len(qualifier)
	if n := len(s.row.Cells); n > 0 && family < s.row.Cells[n-1].Family {
		s.unsorted = true
	}
	s.row.Key = s.keyBuf
	s.row.Cells = append(s.row.Cells, table.Cell{
		Row:       s.keyBuf,
		Family:    family,
		Qualifier: s.arena[start : start+q : start+q],
		Timestamp: ts,
		Value:     s.arena[start+q : len(s.arena) : len(s.arena)],
	})
}

func (s *scanner) At() table.Row { return s.row }

func (s *scanner) Err() error { return s.err }

func (s *scanner) Close() error {
	s.done = true
	if s.entered {
		defer s.t.db.exit()
		s.entered = false
	}
	if s.it == nil {
		return nil
	}
	err := s.it.Close()
	s.it = nil
	if err != nil {
		return fmt.Errorf("close scan of %q: %w", s.t.name, err)
	}
	return nil
}
