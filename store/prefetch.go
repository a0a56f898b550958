package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// Phase one reads the values of the rows it lists while they stay within a
// byte budget (Config.ReadPrefetchBytes per group, shared out among its
// scans). A query whose rows fit, the common small selector, then costs its
// scans alone: phase two has nothing left to ask for. A scan that outgrows its
// share drops what it kept and goes on listing keys only, from the row after
// the last one it read, so a large query pays at most the budget twice and
// its memory stays bounded.

// hourRow is one prefetched row of a series: its base hour and cells.
type hourRow struct {
	hour  uint32
	cells []table.Cell
}

// minPrefetchShare is the least budget a scan gets (unless the whole budget
// is smaller): below it a scan would give up on its first rows.
const minPrefetchShare = 64 << 10

// arena holds the rows phase one keeps: copies of their cell bytes, in
// blocks that never move (a cell copied earlier stays valid as later ones
// are added), and their Cells, in slabs cut the same way. Arenas come from
// a pool and go back once the rows of their group are read (releaseRows):
// made anew per query they were a fifth of a streamed read's garbage
// (BENCHMARKS.md, "Streamed read: the answer's length, and the garbage
// collector"). A pooled arena keeps its blocks and slabs and fills them
// again from the first.
type arena struct {
	blocks [][]byte
	block  int // the block being filled; those after it are empty
	slabs  [][]table.Cell
	slab   int
	free   bool // in the pool
}

// Blocks double from the first size to the last: most scans of a small
// query keep a few hundred bytes. Slabs double from the first size.
const (
	arenaFirstBlock = 1 << 10
	arenaMaxBlock   = 64 << 10
	arenaFirstSlab  = 64
)

var arenaPool = sync.Pool{New: func() any { return new(arena) }}

func newArena() *arena {
	a := arenaPool.Get().(*arena)
	a.free = false
	return a
}

// release empties a and gives it back to the pool. Nothing may use the
// rows kept in it after, nor release it again: a second release while it
// is in the pool would hand it to two queries, and one's rows would be
// written over with the other's.
func (a *arena) release() {
	if a.free {
		panic("store: a phase-one arena released twice")
	}
	a.free = true
	if a.bytes() > maxPooledBytes {
		return // a large prefetch's arena: left to the collector
	}
	for i := range a.blocks[:min(a.block+1, len(a.blocks))] {
		a.blocks[i] = a.blocks[i][:0]
	}
	for i := range a.slabs[:min(a.slab+1, len(a.slabs))] {
		// The Cells' bytes are the arena's, but a Family is a string of
		// its own: drop them all.
		clear(a.slabs[i])
		a.slabs[i] = a.slabs[i][:0]
	}
	a.block, a.slab = 0, 0
	arenaPool.Put(a)
}

// bytes is what the arena's blocks and slabs take.
func (a *arena) bytes() int {
	n := 0
	for _, b := range a.blocks {
		n += cap(b)
	}
	for _, s := range a.slabs {
		n += cap(s) * cellSize
	}
	return n
}

// copy returns a copy of b in the arena.
func (a *arena) copy(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	dst := take(&a.blocks, &a.block, len(b), arenaFirstBlock, arenaMaxBlock, len(b))
	copy(dst, b)
	return dst
}

// cells returns n zeroed Cells of the arena, for one row (slabs are
// cleared on release).
func (a *arena) cells(n int) []table.Cell {
	return take(&a.slabs, &a.slab, n, arenaFirstSlab, math.MaxInt, 4*n)
}

// take cuts n elements from the buffer bufs[*cur] or, where it lacks room,
// from a later one, appending a new buffer when none has room: twice the
// last one's capacity (first for the first), at most limit, at least least.
// A buffer without room is left as it is, so that what was cut from it
// earlier never moves; the pooled arena fills its buffers again from the
// first.
func take[T any](bufs *[][]T, cur *int, n, first, limit, least int) []T {
	for *cur < len(*bufs) && cap((*bufs)[*cur])-len((*bufs)[*cur]) < n {
		*cur++
	}
	if *cur == len(*bufs) {
		size := first
		if k := len(*bufs); k > 0 {
			size = min(2*cap((*bufs)[k-1]), limit)
		}
		*bufs = append(*bufs, make([]T, 0, max(size, least)))
	}
	buf := (*bufs)[*cur]
	start := len(buf)
	buf = buf[:start+n]
	(*bufs)[*cur] = buf
	return buf[start : start+n : start+n]
}

// releaseRows gives back the arenas that the kept rows of series are in,
// each once, and forgets the rows: their group is read.
func releaseRows(series []seriesRef) {
	var (
		arenas []*arena
		seen   map[*arena]bool // once there are more than a few
	)
	for i := range series {
		sr := &series[i]
		a := sr.mem
		sr.mem, sr.rows = nil, nil
		if a == nil || (len(arenas) > 0 && arenas[len(arenas)-1] == a) {
			continue
		}
		// A group has a scan or a few per metric, each with its arena
		// shared by its series, which sorting by labels interleaves.
		switch {
		case seen != nil:
			if seen[a] {
				continue
			}
			seen[a] = true
		case slices.Contains(arenas, a):
			continue
		case len(arenas) == 16:
			seen = make(map[*arena]bool, 64)
			for _, b := range arenas {
				seen[b] = true
			}
			seen[a] = true
		}
		arenas = append(arenas, a)
	}
	for _, a := range arenas {
		a.release()
	}
}

// rangeScan is the phase one of one scan range: the distinct series it
// finds, and their rows while the budget lasts.
type rangeScan struct {
	s      *Store
	metric uint64
	conds  []rowkey.TagCond
	budget int // bytes of cells it may keep; <= 0: list keys only
	kept   int // rowBytes of the rows kept

	out   []seriesRef
	salts []byte // per series in out: its salt bucket
	bySID map[string]int
	sid   []byte
	// arena holds the kept rows; nil until the first.
	arena *arena
	// scans that listed rows: after more than one, a series' rows may be
	// out of hour order.
	scans int
	// dropped: dropMarked ran, so a series may be left without rows.
	dropped bool
}

func (s *Store) newRangeScan(metric uint64, conds []rowkey.TagCond, budget int) *rangeScan {
	return &rangeScan{s: s, metric: metric, conds: conds, budget: budget, bySID: map[string]int{}}
}

// scanRanges lists the series of a scan task: its FamilyData ranges, then
// its every-family ranges. A series lives in one salt bucket, so only the
// task's two scans, each over other hours, return rows of the same series.
func (s *Store) scanRanges(ctx context.Context, t scanTask, conds []rowkey.TagCond, budget int) ([]seriesRef, error) {
	rs := s.newRangeScan(t.metric, conds, budget)
	if err := rs.scanEach(ctx, t.filter, familyRanges{t.data, FamilyData}, familyRanges{t.all, ""}); err != nil {
		return nil, err
	}
	return rs.result(), nil
}

// familyRanges are ranges to read of one family ("" for every family).
type familyRanges struct {
	ranges []table.RowRange
	family string
}

// scanEach scans each of parts in turn.
func (rs *rangeScan) scanEach(ctx context.Context, filter *table.KeyFilter, parts ...familyRanges) error {
	for _, p := range parts {
		if err := rs.scan(ctx, p.ranges, p.family, filter); err != nil {
			return err
		}
	}
	return nil
}

// result is the series found, each one's rows in hour order.
func (rs *rangeScan) result() []seriesRef {
	if rs.budget <= 0 {
		return rs.out
	}
	if rs.scans > 1 {
		// A later scan's hours may come before an earlier one's.
		for i := range rs.out {
			slices.SortStableFunc(rs.out[i].rows, func(a, b hourRow) int { return cmp.Compare(a.hour, b.hour) })
		}
	}
	if rs.dropped {
		// Rows of a marked hour that the scan of every family did not find
		// again (deleted in between): their series may have none left.
		rs.out = slices.DeleteFunc(rs.out, func(sr seriesRef) bool { return len(sr.rows) == 0 })
	}
	return rs.out
}

// dropMarked drops the kept rows of the hours raw marks, to be read again
// of every family; a series left without rows is dropped if no later scan
// finds it again (see result).
func (rs *rangeScan) dropMarked(raw rawHours) {
	if rs.budget <= 0 || len(raw) == 0 {
		return
	}
	rs.dropped = true
	for i := range rs.out {
		salt := rs.salts[i]
		rs.out[i].rows = slices.DeleteFunc(rs.out[i].rows, func(r hourRow) bool { return raw.has(salt, rs.metric, r.hour) })
	}
}

// scan lists the series of ranges, read of family ("" for every family).
func (rs *rangeScan) scan(ctx context.Context, ranges []table.RowRange, family string, filter *table.KeyFilter) error {
	if len(ranges) > 0 {
		rs.scans++
	}
	for len(ranges) > 0 {
		next, err := rs.run(ctx, ranges, family, filter)
		if err != nil || next == nil {
			return err
		}
		ranges = rangesFrom(ranges, next)
	}
	return nil
}

// rangesFrom is what is left of ranges from key on.
func rangesFrom(ranges []table.RowRange, key []byte) []table.RowRange {
	for len(ranges) > 0 && ranges[0].Stop != nil && bytes.Compare(ranges[0].Stop, key) <= 0 {
		ranges = ranges[1:]
	}
	if len(ranges) == 0 {
		return nil
	}
	out := slices.Clone(ranges)
	if bytes.Compare(out[0].Start, key) < 0 {
		out[0].Start = key
	}
	return out
}

// run scans ranges. It returns where to go on with keys only when the
// budget ran out, nil at the end of the ranges.
func (rs *rangeScan) run(ctx context.Context, ranges []table.RowRange, family string, filter *table.KeyFilter) (next []byte, err error) {
	keep := rs.budget > 0
	opts := table.ScanOptions{Family: family, KeyOnly: !keep, FirstCellOnly: !keep, Filter: filter}
	if len(ranges) == 1 {
		opts.Start, opts.Stop = ranges[0].Start, ranges[0].Stop
	} else {
		opts.Ranges = ranges
	}
	sc := rs.s.data.Scan(ctx, opts)
	defer sc.Close()
	for sc.Next() {
		row := sc.At()
		i, ok, err := rs.add(row.Key)
		if err != nil {
			return nil, err
		}
		if !ok || !keep {
			continue
		}
		n := rowBytes(row.Cells)
		if rs.kept+n > rs.budget {
			rs.dropRows()
			// The row after this one: its key with a zero byte appended.
			return append(append([]byte(nil), row.Key...), 0), nil
		}
		rs.keepRow(i, row)
		rs.kept += n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan data table: %w", err)
	}
	return nil, nil
}

// add notes the series of a row key; ok is false for a row the conditions
// reject (the backend's filter only saves transfer: the check is here).
func (rs *rangeScan) add(key []byte) (i int, ok bool, err error) {
	k, err := rs.s.layout.Parse(key)
	if err != nil {
		return 0, false, fmt.Errorf("data table: %w", err)
	}
	if k.Metric != rs.metric || !rs.s.layout.MatchConds(k, rs.conds) {
		return 0, false, nil
	}
	rs.sid, _ = rs.s.layout.AppendSeriesIDFromRowKey(rs.sid[:0], key)
	i, found := rs.bySID[string(rs.sid)]
	if !found {
		i = len(rs.out)
		rs.out = append(rs.out, seriesRef{sid: string(rs.sid), first: k.BaseHour, last: k.BaseHour, prefetched: rs.budget > 0})
		rs.salts = append(rs.salts, k.Salt)
		rs.bySID[rs.out[i].sid] = i
	}
	// Rows come by hour within a scan; the second scan of a task may go back.
	sr := &rs.out[i]
	sr.first, sr.last = min(sr.first, k.BaseHour), max(sr.last, k.BaseHour)
	return i, true, nil
}

// rowBytes is what keeping a row costs: its cells' bytes, and the Cell each
// of them takes in cellBuf. A raw cell holds about 12 bytes against a Cell's
// 100: counting bytes alone, a scan of raw hours kept some 70 MiB on a
// budget of 8 (TestReadMemoryBounded, once Pebble's ranges were scanned
// together).
func rowBytes(cells []table.Cell) int {
	n := len(cells) * cellSize
	for i := range cells {
		n += len(cells[i].Qualifier) + len(cells[i].Value)
	}
	return n
}

const cellSize = int(unsafe.Sizeof(table.Cell{}))

// keepRow copies a row's cells (the scanner reuses them) to series i.
func (rs *rangeScan) keepRow(i int, row table.Row) {
	if rs.arena == nil {
		rs.arena = newArena()
	}
	cells := rs.arena.cells(len(row.Cells))
	for j, c := range row.Cells {
		cells[j] = table.Cell{
			Family: c.Family, Qualifier: rs.arena.copy(c.Qualifier),
			Timestamp: c.Timestamp, Value: rs.arena.copy(c.Value),
		}
	}
	k, _ := rs.s.layout.Parse(row.Key)
	sr := &rs.out[i]
	sr.rows = append(sr.rows, hourRow{hour: k.BaseHour, cells: cells})
	sr.mem = rs.arena
}

// dropRows gives up prefetching in this range: its series are read in
// phase two, and what was kept is released.
func (rs *rangeScan) dropRows() {
	rs.budget = 0
	for i := range rs.out {
		rs.out[i].rows, rs.out[i].prefetched, rs.out[i].mem = nil, false, nil
	}
	if rs.arena != nil {
		rs.arena.release()
	}
	rs.arena, rs.kept = nil, 0
}
