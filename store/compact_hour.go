package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// metricMarks are the marks of one metric in a compaction table row.
type metricMarks struct {
	uid    uint64
	marks  []table.Cell
	newest int64
}

// bucketHour compacts the marked metrics of one compaction table row whose
// marks are quiet, under the row's lease. done reports that nothing of the
// bucket-hour is left for later. The marks read are queued for deletion
// (deleteMarks), exactly the versions read: a mark written meanwhile stays.
func (c *Compactor) bucketHour(ctx context.Context, row table.Row, st *PassStats) (done bool, err error) {
	hour, salt, ok := parseTodoKey(row.Key)
	if !ok || (c.layout.SaltWidth() == 0 && salt != 0) || (c.layout.SaltWidth() == 1 && int(salt) >= c.layout.SaltBuckets) {
		return false, fmt.Errorf("compaction table row %x does not name a bucket-hour of this layout", row.Key)
	}
	quietBefore := c.cfg.now().Add(-c.cfg.Quiet).UnixMilli()
	var (
		leaseCell *table.Cell
		metrics   []*metricMarks
	)
	for i := range row.Cells {
		cell := &row.Cells[i]
		if string(cell.Qualifier) == string(leaseQualifier) {
			leaseCell = cell
			continue
		}
		// Both kinds: the compactor folds raw cells from either family.
		if _, uid, ok := parseMark(cell.Qualifier, c.layout.MetricWidth); ok {
			i := slices.IndexFunc(metrics, func(m *metricMarks) bool { return m.uid == uid })
			if i < 0 {
				i = len(metrics)
				metrics = append(metrics, &metricMarks{uid: uid})
			}
			m := metrics[i]
			m.marks = append(m.marks, *cell)
			m.newest = max(m.newest, cell.Timestamp)
		}
	}
	if len(metrics) == 0 {
		// A lease left behind by a compactor killed after its last mark went.
		if leaseCell != nil {
			if _, exp, ok := parseLease(leaseCell.Value); !ok || !c.cfg.now().Before(exp) {
				return true, c.todo.DeleteVersions(ctx, []table.Cell{*leaseCell})
			}
		}
		return true, nil
	}
	ready := slices.DeleteFunc(slices.Clone(metrics), func(m *metricMarks) bool { return m.newest > quietBefore })
	if len(ready) == 0 {
		return false, nil
	}
	l, err := takeLease(ctx, c.todo, row.Key, leaseCell, c.id, c.cfg.Lease, c.cfg.now)
	if err != nil || l == nil {
		return false, err
	}
	defer func() {
		if rerr := l.release(context.WithoutCancel(ctx)); rerr != nil && err == nil {
			err = rerr
		}
	}()
	// A metric's marks are queued for deletion only once the deletions of
	// its folds have landed (flushDeletes), so a failure leaves them to
	// bring a later pass back. A flush the queue's size set off while a
	// later metric was folded holds earlier metrics' deletions too: when
	// one fails, no mark of the bucket-hour goes (a metric whose deletions
	// did land is folded again, which changes nothing).
	c.delsLost = false
	var folded []table.Cell
	for _, m := range ready {
		if err = c.compactMetric(ctx, l, salt, m.uid, hour, st); err != nil {
			err = fmt.Errorf("metric UID %d of hour %d, bucket %d: %w", m.uid, hour, salt, err)
			break
		}
		folded = append(folded, m.marks...)
	}
	if ferr := c.flushDeletes(ctx, l, st); ferr != nil {
		return false, errors.Join(err, fmt.Errorf("hour %d, bucket %d: %w", hour, salt, ferr))
	}
	if len(folded) > 0 && !c.delsLost {
		c.doneMarks = append(c.doneMarks, folded...)
		// Every chunk of the metrics' rows is acknowledged by now.
		c.marksDue = time.Now().Add(c.markDelay)
	}
	if err != nil {
		return false, err
	}
	return len(ready) == len(metrics), nil
}

// deleteMarks deletes the marks of the pass's folds once markDelay
// (MarkDeleteDelay) has passed since the last fold's chunks were
// acknowledged: a query that read a folded hour's rows early, before its
// chunks, and its marks within half of that finds the marks and reads the
// hour again (earlyread.go). Deleting the exact versions read needs no
// lease: another compactor folding the hour meanwhile deletes the same
// versions, and a mark written since is another version. Marks left by a
// failure (or a kill) only have a later pass fold their hours again, which
// changes nothing.
func (c *Compactor) deleteMarks(ctx context.Context, st *PassStats) error {
	marks := c.doneMarks
	c.doneMarks = nil
	if len(marks) == 0 {
		return nil
	}
	if d := time.Until(c.marksDue); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err := c.todo.DeleteVersions(ctx, marks); err != nil {
		return fmt.Errorf("delete %d marks of compacted rows: %w", len(marks), err)
	}
	st.MarksDeleted += len(marks)
	return nil
}

// compactMetric compacts the hour rows of one metric in one bucket-hour,
// BatchRows at a time. A row with a malformed cell is left as it is (reads
// report it too) and fails the bucket-hour once the others are done.
func (c *Compactor) compactMetric(ctx context.Context, l *lease, salt byte, metric uint64, hour uint32, st *PassStats) error {
	ranges := c.layout.AppendScanRanges(nil, metric, hour, hour)
	r := ranges[0]
	if c.layout.SaltWidth() == 1 {
		r = ranges[salt]
	}
	hourMillis := rowkey.HourMillis(hour)
	var rowErr error
	start := r.Start
	for {
		// Every family: raw cells wait in FamilyRaw, or in FamilyData
		// when an earlier version wrote them, and the fold's condition is
		// on the fence in FamilyFence.
		rows, err := scanPage(ctx, c.data, table.ScanOptions{Start: start, Stop: r.Stop}, c.cfg.BatchRows)
		if err != nil {
			return fmt.Errorf("read hour rows: %w", err)
		}
		c.plan.reset()
		for _, row := range rows {
			if err := c.plan.addRow(row.Key, hourMillis, row.Cells); err != nil && rowErr == nil {
				rowErr = fmt.Errorf("row %x left raw: %w", row.Key, err)
			}
		}
		if err := c.apply(ctx, l, st); err != nil {
			return err
		}
		if len(rows) < c.cfg.BatchRows {
			return rowErr
		}
		start = append(slices.Clip(rows[len(rows)-1].Key), 0)
	}
}

// maxPendingDeletes bounds the cells whose deletion the compactor holds
// back (pendingDeletes) before it deletes them: some 68 series-hours of
// 15-second samples, a few MB of keys.
const maxPendingDeletes = 16384

// pendingDeletes are the deletions of folds whose chunks are written:
// step (2) of compactPlan for several batches of rows, up to a
// bucket-hour's. Deleting them together rather than batch by batch costs
// the embedded store one range-deletion commit where it cost one a batch:
// Pebble fragments every range deletion of its memtable again for the
// first iterator after each such commit, so with few series to a metric
// and bucket (batches of a row or two) a pass's cost grew with the square
// of its folds (BENCHMARKS.md, "folds of few series"). HBase gets fewer,
// larger Multis. Killed before they land, the rows read the same (see
// compactPlan) and keep their marks.
type pendingDeletes struct {
	cells []table.Cell // each row's old chunk cells, then its raw cells
	del   []pendingRow // the rows with cells to delete
	rows  int          // rows folded, with deletions or without
	raw   int          // raw cells among cells
	conds []table.CondDelete
}

// pendingRow is one row's deletions, cells[from:to], and the cell that
// guards them: the row's fence must still hold wrote.
type pendingRow struct {
	from, to int
	raw      int
	wrote    []byte
}

func (d *pendingDeletes) add(p *compactPlan) {
	for _, f := range p.fences {
		from := len(d.cells)
		d.cells = append(d.cells, p.delChunks[f.chunksFrom:f.chunksTo]...)
		d.cells = append(d.cells, p.delRaw[f.rawFrom:f.rawTo]...)
		if len(d.cells) > from {
			d.del = append(d.del, pendingRow{from: from, to: len(d.cells), raw: f.rawTo - f.rawFrom, wrote: f.wrote})
		}
	}
	d.raw += len(p.delRaw)
	d.rows += p.rows
}

// condDeletes returns one conditional deletion a row, in d's scratch.
func (d *pendingDeletes) condDeletes() []table.CondDelete {
	d.conds = d.conds[:0]
	for _, r := range d.del {
		d.conds = append(d.conds, table.CondDelete{Row: d.cells[r.from].Row, Family: FamilyFence, Qualifier: fenceQualifier,
			Expected: r.wrote, Delete: d.cells[r.from:r.to]})
	}
	return d.conds
}

func (d *pendingDeletes) reset() {
	clear(d.cells)
	clear(d.del)
	clear(d.conds)
	d.cells, d.del, d.conds, d.rows, d.raw = d.cells[:0], d.del[:0], d.conds[:0], 0, 0
}

// apply writes c.plan's chunk cells under the lease and queues its
// deletions, deleting the queue once it holds maxPendingDeletes cells.
func (c *Compactor) apply(ctx context.Context, l *lease, st *PassStats) error {
	p := &c.plan
	if p.rows == 0 {
		return nil
	}
	if err := c.pace.wait(ctx, len(p.delRaw)); err != nil {
		return err
	}
	if err := c.guarded(ctx, l, func(ctx context.Context) error { return c.putFenced(ctx, p) }); err != nil {
		return fmt.Errorf("write chunks of %d rows: %w", p.rows, err)
	}
	st.BytesWritten += p.bytes
	c.m.bytesWritten.Add(float64(p.bytes))
	for i, n := range p.layouts {
		c.m.cells.WithLabelValues(cellLayouts[i]).Add(float64(n))
	}
	c.dels.add(p)
	if len(c.dels.cells) >= maxPendingDeletes {
		return c.flushDeletes(ctx, l, st)
	}
	return nil
}

// errFenced reports a row that another compactor rewrote between this
// one's read of it and its write: this one's lease was taken over.
var errFenced = errors.New("row rewritten by another compactor since it was read (the lease was taken over)")

// putFenced writes the plan's chunk cells, each row's only if the row
// still holds, in the first cell the plan writes there, what the compactor
// read (table.CondPut; one call on both backends). The lease keeps two
// compactors off one bucket-hour, but a holder that stalls past its
// lease's end may have its write land after another has taken over and
// folded a later sample in: the same qualifier and timestamp, the stale
// chunk would replace the newer one, whose raw cells are gone. The
// condition turns that write into a refusal. A refused row (one that does
// not hold the put: holdsPut) fails the bucket-hour, and this batch's
// deletions are not queued: the rows of earlier batches were written by
// this compactor, and their deletions still go (flushDeletes), each fenced
// in the same way.
func (c *Compactor) putFenced(ctx context.Context, p *compactPlan) error {
	conds := c.conds[:0]
	for _, f := range p.fences {
		conds = append(conds, table.CondPut{Row: p.puts[f.from].Row, Family: FamilyFence, Qualifier: fenceQualifier, Expected: f.expected, Put: p.puts[f.from:f.to]})
	}
	c.conds = conds
	defer clear(c.conds)
	written, err := c.data.CheckAndPutBatch(ctx, conds)
	if err != nil {
		return err
	}
	for i, w := range written {
		if w {
			continue
		}
		mine, err := c.holdsPut(ctx, &conds[i])
		if err != nil {
			return fmt.Errorf("row %x refused its chunks; reading it back: %w", conds[i].Row, err)
		}
		if !mine {
			return fmt.Errorf("%w: row %x", errFenced, conds[i].Row)
		}
	}
	return nil
}

// holdsPut reports whether p's row holds every cell p puts, as the newest
// version of its column: the put is in place. A conditional put refused
// for that is this compactor's own, landed by an earlier attempt of the
// same call whose answer was lost (a retry finds its condition changed by
// the first attempt: table.Table.CheckAndPutBatch), not another
// compactor's takeover, which writes other cells or other versions. Taking
// it as written is what the first attempt's answer would have said; the
// row's deletions are then fenced on the same cell as after any write.
// Such refusals are rare (faults), so the read costs nothing in a pass.
func (c *Compactor) holdsPut(ctx context.Context, p *table.CondPut) (bool, error) {
	var fams []string
	for i := range p.Put {
		if !slices.Contains(fams, p.Put[i].Family) {
			fams = append(fams, p.Put[i].Family)
		}
	}
	for _, fam := range fams {
		rows, err := c.data.Get(ctx, fam, [][]byte{p.Row})
		if err != nil {
			return false, err
		}
		for i := range p.Put {
			want := &p.Put[i]
			if want.Family != fam {
				continue
			}
			got := findCell(rows[0].Cells, fam, want.Qualifier)
			if got == nil || got.Timestamp != want.Timestamp || !bytes.Equal(got.Value, want.Value) {
				return false, nil
			}
		}
	}
	return true, nil
}

// flushDeletes deletes the pending deletions under the lease, each row's
// replaced chunks and raw cells in one deletion, and empties the queue
// whatever happens: deletions that failed are redone by a later pass, which
// finds the rows' marks.
//
// Each row's deletion is fenced as its put was (putFenced), on the same
// cell, which must still hold what this compactor wrote there. A holder
// that stalls past its lease's end with deletions on their way would
// otherwise have them land after another compactor folded the row again:
// deleting an old chunk's exact version can delete a new chunk of the same
// qualifier and timestamp (a row folded into a dense cell, then an XOR
// one, then a dense one again), whose raw cells are gone. A refused row
// fails the bucket-hour; its cells are the other compactor's to delete.
func (c *Compactor) flushDeletes(ctx context.Context, l *lease, st *PassStats) (err error) {
	d := &c.dels
	defer d.reset()
	if d.rows == 0 {
		return nil
	}
	defer func() {
		if err != nil {
			c.delsLost = true
		}
	}()
	rows, raw := d.rows, d.raw
	var refused error
	if len(d.del) > 0 {
		conds := d.condDeletes()
		var deleted []bool
		del := func(ctx context.Context) (err error) {
			deleted, err = c.data.CheckAndDeleteBatch(ctx, conds)
			return err
		}
		if err := c.guarded(ctx, l, del); err != nil {
			return fmt.Errorf("delete replaced chunks and raw cells of %d rows: %w", len(conds), err)
		}
		for i, ok := range deleted {
			if !ok {
				rows--
				raw -= d.del[i].raw
				if refused == nil {
					refused = fmt.Errorf("%w: row %x", errFenced, conds[i].Row)
				}
			}
		}
	}
	st.SeriesHours += rows
	st.RawCellsDeleted += raw
	c.m.seriesHours.Add(float64(rows))
	c.m.rawDeleted.Add(float64(raw))
	return refused
}

// guarded runs one destructive call under the lease (see lease.guard).
func (c *Compactor) guarded(ctx context.Context, l *lease, f func(context.Context) error) error {
	gctx, cancel, err := l.guard(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	err = f(gctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("%w: %w", errLeaseLost, err)
	}
	return err
}
