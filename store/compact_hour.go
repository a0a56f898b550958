package store

import (
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
	for _, m := range ready {
		if err := c.compactMetric(ctx, l, salt, m.uid, hour, st); err != nil {
			return false, fmt.Errorf("metric UID %d of hour %d, bucket %d: %w", m.uid, hour, salt, err)
		}
		c.doneMarks = append(c.doneMarks, m.marks...)
		// Every chunk of the metric's rows is acknowledged by now.
		c.marksDue = time.Now().Add(c.markDelay)
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
		// Both families: raw cells wait in FamilyRaw, or in FamilyData
		// when an earlier version wrote them.
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

// apply carries out c.plan in its three steps, each under the lease.
func (c *Compactor) apply(ctx context.Context, l *lease, st *PassStats) error {
	p := &c.plan
	if p.rows == 0 {
		return nil
	}
	if err := c.pace.wait(ctx, len(p.delRaw)); err != nil {
		return err
	}
	steps := []struct {
		what string
		f    func(context.Context) error
	}{
		{"write chunks", func(ctx context.Context) error { return c.data.Put(ctx, p.puts) }},
		{"delete replaced chunks", func(ctx context.Context) error { return c.data.DeleteVersions(ctx, p.delChunks) }},
		{"delete raw cells", func(ctx context.Context) error { return c.data.DeleteVersions(ctx, p.delRaw) }},
	}
	for i, s := range steps {
		if i == 1 && len(p.delChunks) == 0 {
			continue
		}
		if err := c.guarded(ctx, l, s.f); err != nil {
			return fmt.Errorf("%s of %d rows: %w", s.what, p.rows, err)
		}
	}
	st.SeriesHours += p.rows
	st.RawCellsDeleted += len(p.delRaw)
	st.BytesWritten += p.bytes
	c.m.seriesHours.Add(float64(p.rows))
	c.m.rawDeleted.Add(float64(len(p.delRaw)))
	c.m.bytesWritten.Add(float64(p.bytes))
	for i, n := range p.layouts {
		c.m.cells.WithLabelValues(cellLayouts[i]).Add(float64(n))
	}
	return nil
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
