package store

import (
	"bytes"
	"context"
	"time"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// A query reads the compaction table's marks before it reads the rows of
// its hours (rawhours.go), and in that order it misses no acknowledged
// sample. That costs a round trip on every query: on make bench's read of
// the whole data set, 15 % of the throughput, 20 % of HBase's CPU and 10 %
// of the adapter's. So the first group of a query reads the FamilyData rows
// of its older hours while its marks are read, and keeps what it read only
// if that order cannot have mattered:
//
//   - What the early read can miss: an hour compacted between the two
//     reads. Its rows read before the compactor wrote the chunks (no chunk
//     yet; the raw cells are in FamilyRaw, which the early read does not
//     open), its marks read after the compactor deleted them (so the hour
//     is not read again of every family).
//   - The compactor deletes a mark no sooner than MarkDeleteDelay after the
//     chunks of the rows it covered were acknowledged (Compactor.Pass). So
//     the miss above needs the marks to be read more than MarkDeleteDelay
//     after the rows.
//   - The rows were read after the early read was sent, the marks before
//     their answer came back. The early read is kept only if that answer
//     came back within half of MarkDeleteDelay (the other half a margin
//     for the clocks) of the send; otherwise the rows are read again, after the
//     marks. Only durations on each process's own monotonic clock count,
//     never timestamps across machines.
//   - Hours the marks do mark are read again of every family, after the
//     marks, as in the ordered read; the early read's rows of them are
//     dropped.
//
// Hours that began less than earlyReadMinAge ago are read after the marks
// only: most of them are marked (open, or closed within the compactor's
// grace and interval), and an early read of them would be read again. The
// same goes for older hours while the compactor lags (backfill, a
// compactor down) or late samples are waiting: once a query's marks cover
// some of its older hours, reads go in order until a query's marks cover
// none (readState.oldMarked).
const (
	// MarkDeleteDelay is how long after the chunks of a fold are
	// acknowledged the compactor waits before it deletes the fold's marks.
	MarkDeleteDelay = 2 * time.Second
	earlyReadMinAge = 2 * time.Hour
)

// markDelay is MarkDeleteDelay, which the package's tests shorten (both
// sides of the protocol take it from here when a Store or a Compactor is
// made, so they always agree).
var markDelay = MarkDeleteDelay

// marksRead is a query's read of the compaction table's marks, under way
// (startMarks, marksshare.go).
type marksRead struct {
	// What the query asks for, and for how long it waits.
	ctx                context.Context
	metrics            map[uint64]bool
	startHour, endHour uint32

	done chan struct{}
	raw  rawHours
	err  error
	// at is when the read's last answer had come back: every mark it
	// returns was read by then.
	at time.Time
}

// recentHour is the first hour read only after the marks: hours that
// began less than earlyReadMinAge ago.
func recentHour() uint32 {
	return uint32(time.Now().Add(-earlyReadMinAge).Unix() / rowkey.HourSeconds * rowkey.HourSeconds)
}

// mayReadEarly reports whether a query from startHour on may read some
// hours early: it has older hours, and the last marks read did not cover
// older hours (oldMarked).
func (s *Store) mayReadEarly(startHour uint32) bool {
	return s.read.alwaysEarly || (startHour < recentHour() && !s.read.oldMarked.Load())
}

// wait returns the marks once they are read.
func (m *marksRead) wait(ctx context.Context) (rawHours, time.Time, error) {
	select {
	case <-m.done:
		return m.raw, m.at, m.err
	case <-ctx.Done():
		return nil, time.Time{}, ctx.Err()
	}
}

// ready reports whether the marks are read already.
func (m *marksRead) ready() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// scanEarly is scanRanges for a task of the first group of a query whose
// marks are being read (t.data not yet split by them, t.all empty): it
// reads the FamilyData rows of the older hours at once, and the rest once
// the marks are in.
func (s *Store) scanEarly(ctx context.Context, t scanTask, conds []rowkey.TagCond, budget int, marks *marksRead, startHour, endHour uint32) ([]seriesRef, error) {
	recentFrom := recentHour()
	if startHour >= recentFrom || (!s.read.alwaysEarly && (marks.ready() || s.read.oldMarked.Load())) {
		return s.scanOrdered(ctx, t, conds, budget, marks, startHour, endHour, recentFrom)
	}
	old, recent := s.cutRanges(t.data, t.metric, recentFrom)
	rs := s.newRangeScan(t.metric, conds, budget)
	sent := time.Now()
	if err := rs.scan(ctx, old, FamilyData, t.filter); err != nil {
		return nil, err
	}
	if hook := s.read.afterEarlyRead; hook != nil {
		hook()
	}
	raw, at, err := marks.wait(ctx)
	if err != nil {
		return nil, err
	}
	if at.Sub(sent) > s.read.markWindow {
		s.read.earlyRereads.Add(1)
		return s.scanOrdered(ctx, t, conds, budget, marks, startHour, endHour, recentFrom)
	}
	// splitRaw takes the marked hours within the bounds it is given: each
	// part's own.
	_, oldAll := s.splitRaw(old, t.metric, startHour, min(endHour, recentFrom-rowkey.HourSeconds), raw)
	s.read.oldMarked.Store(len(oldAll) > 0)
	if len(oldAll) > 0 {
		rs.dropMarked(raw)
	}
	recentData, recentAll := s.splitRaw(recent, t.metric, max(startHour, recentFrom), endHour, raw)
	err = rs.scanEach(ctx, t.filter, familyRanges{oldAll, ""}, familyRanges{recentData, FamilyData}, familyRanges{recentAll, ""})
	if err != nil {
		return nil, err
	}
	return rs.result(), nil
}

// scanOrdered reads a task's rows after its marks: t.data split by them,
// as scanTasks splits the later groups'. It notes whether the marks cover
// hours before recentFrom (oldMarked).
func (s *Store) scanOrdered(ctx context.Context, t scanTask, conds []rowkey.TagCond, budget int, marks *marksRead, startHour, endHour, recentFrom uint32) ([]seriesRef, error) {
	raw, _, err := marks.wait(ctx)
	if err != nil {
		return nil, err
	}
	s.read.oldMarked.Store(raw.anyBefore(t.metric, recentFrom))
	t.data, t.all = s.splitRaw(t.data, t.metric, startHour, endHour, raw)
	return s.scanRanges(ctx, t, conds, budget)
}

// cutRanges splits ranges (sorted, disjoint, each the rows of metric in one
// bucket over some hours) into the parts of hours before hour and the parts
// from it on.
func (s *Store) cutRanges(ranges []table.RowRange, metric uint64, hour uint32) (before, from []table.RowRange) {
	at := s.layout.AppendScanRanges(nil, metric, hour, hour) // one per bucket
	for _, r := range ranges {
		cut := at[0].Start
		if salt := s.rangeSalt(r.Start); int(salt) < len(at) {
			cut = at[salt].Start
		}
		switch {
		case bytes.Compare(cut, r.Start) <= 0:
			from = append(from, r)
		case r.Stop != nil && bytes.Compare(cut, r.Stop) >= 0:
			before = append(before, r)
		default:
			before = append(before, table.RowRange{Start: r.Start, Stop: cut})
			from = append(from, table.RowRange{Start: cut, Stop: r.Stop})
		}
	}
	return before, from
}
