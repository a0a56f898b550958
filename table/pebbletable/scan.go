package pebbletable

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// scanner walks a table's cells in key order and assembles them into rows.
// The row it returns lives in buffers that the next call to Next reuses.
type scanner struct {
	t       *tbl
	ctx     context.Context
	it      *pebble.Iterator
	opts    table.ScanOptions
	family  int // -1: all
	filter  *keyFilter
	ranges  []table.RowRange // the ranges not passed yet (ScanOptions.Ranges)
	cutoffs []int64
	err     error
	done    bool
	steps   int

	rowPrefix []byte // table prefix, escaped row, terminator of the current row
	seekBuf   []byte
	row       table.Row
	keyBuf    []byte // decoded current row key
	arena     []byte // qualifiers and values of the current row
}

// ctxCheckEvery is how many cells a scan steps over between looks at its
// context: often enough to stop promptly, rarely enough to cost nothing.
const ctxCheckEvery = 256

// Scan implements table.Table.
func (t *tbl) Scan(ctx context.Context, opts table.ScanOptions) table.Scanner {
	s := &scanner{t: t, ctx: ctx, opts: opts, family: -1}
	if s.err = t.db.check(ctx); s.err != nil {
		return s
	}
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
	s.cutoffs = t.cutoffs(nil, t.db.nowMillis())
	if s.it, s.err = t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper}); s.err != nil {
		s.err = fmt.Errorf("scan %q: %w", t.name, s.err)
		return s
	}
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
			if int(fam) < s.family {
				it.SeekGE(append(append(s.seekBuf[:0], s.rowPrefix...), byte(s.family)))
			} else {
				it.SeekGE(s.pastRow())
			}
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
		ts := cellTimestamp(v)
		if ts < s.cutoffs[fam] {
			it.Next()
			continue
		}
		s.appendCell(k[len(s.rowPrefix)+1:], fam, ts, v[tsLen:])
		if s.opts.FirstCellOnly {
			it.SeekGE(s.pastRow())
			return true
		}
		it.Next()
	}
	if err := it.Error(); err != nil {
		s.err = fmt.Errorf("scan %q: %w", s.t.name, err)
		return false
	}
	s.done = true
	return len(s.row.Cells) > 0
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

// pastRow returns the first key after every cell of the current row.
func (s *scanner) pastRow() []byte {
	s.seekBuf = append(s.seekBuf[:0], s.rowPrefix...)
	s.seekBuf[len(s.seekBuf)-1] = pastRow
	return s.seekBuf
}

func (s *scanner) appendCell(qualifier []byte, fam byte, ts int64, value []byte) {
	// Slices into an array the arena outgrows stay valid until the next row.
	start := len(s.arena)
	s.arena = append(s.arena, qualifier...)
	if !s.opts.KeyOnly {
		s.arena = append(s.arena, value...)
	}
	q := len(qualifier)
	s.row.Key = s.keyBuf
	s.row.Cells = append(s.row.Cells, table.Cell{
		Row:       s.keyBuf,
		Family:    s.t.families[fam],
		Qualifier: s.arena[start : start+q : start+q],
		Timestamp: ts,
		Value:     s.arena[start+q : len(s.arena) : len(s.arena)],
	})
}

func (s *scanner) At() table.Row { return s.row }

func (s *scanner) Err() error { return s.err }

func (s *scanner) Close() error {
	s.done = true
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
