package store

import (
	"context"
	"fmt"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// cursor walks the series of a query in label order and, on demand, their
// rows (DESIGN.md section 4, steps 3 and 4). It loads the series of one
// metric group at a time (phase one, which keeps their rows within the
// prefetch budget), then reads the rows of the series it did not keep in
// multi-gets of at most ReadBatchSeries series and ReadBatchRows rows (phase
// two), the next one running while the caller consumes the current one; the
// next group's phase one runs while the current group is read. It holds the
// distinct series of two groups, two prefetch budgets and two batches of
// rows, whatever the number of series times hours the query spans.
type cursor struct {
	ctx    context.Context
	cancel context.CancelFunc
	s      *Store
	q      Query
	p      *queryPlan

	startHour, endHour uint32

	group   int         // the next group to load
	loading *groupLoad  // its phase one, under way while the current group is read
	series  []seriesRef // the current group's, in label order
	cur     int         // the current series
	pre     int         // the next of its prefetched rows

	// The planner's position: the next series and hour to ask for.
	next     int
	nextHour int64

	batch    *rowBatch // the batch being consumed
	pos      int       // its next row
	inflight *rowBatch // the multi-get under way, if any
	spare    *rowBatch // a consumed batch whose buffers are reused

	err error
}

// groupLoad is the phase one of a group, run ahead.
type groupLoad struct {
	done   chan struct{}
	series []seriesRef
	err    error
}

// rowBatch is one multi-get: its keys, whom they belong to, and the answer.
type rowBatch struct {
	keys   [][]byte
	keyBuf []byte
	owners []int // index in series, per key
	hours  []uint32
	raw    []bool // per key: read FamilyRaw too
	nRaw   int
	done   chan struct{}
	rows   []table.Row
	err    error
}

// newCursor plans q; a cursor without a plan yields nothing.
func (s *Store) newCursor(ctx context.Context, q Query) (*cursor, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &cursor{ctx: ctx, cancel: cancel, s: s, q: q, cur: -1}
	if q.Start > q.End {
		return c, nil
	}
	var ok bool
	if c.startHour, c.endHour, ok = rowkey.HourRange(q.Start, q.End); !ok {
		return c, nil
	}
	p, err := s.planQuery(ctx, q.Matchers)
	if err != nil {
		cancel()
		return nil, err
	}
	if p != nil {
		// The first group's phase one reads what it may meanwhile.
		p.marks = s.startMarks(ctx, p.metricSet(), c.startHour, c.endHour)
	}
	c.p = p
	return c, nil
}

// nextSeries moves to the next series, loading the next group's series when
// the current group's are done.
func (c *cursor) nextSeries() bool {
	if c.err != nil || c.p == nil {
		return false
	}
	c.cur++
	c.pre = 0
	for c.cur >= len(c.series) {
		if c.group >= len(c.p.groups) {
			return false
		}
		if err := c.loadGroup(); err != nil {
			c.err = err
			return false
		}
	}
	return true
}

// at is the current series.
func (c *cursor) at() *seriesRef { return &c.series[c.cur] }

// loadGroup makes the next group current, once the rows of the current one
// are all consumed or dropped, and starts the phase one of the group after
// it, so that it runs while this one is read.
func (c *cursor) loadGroup() error {
	if c.inflight != nil {
		<-c.inflight.done
		c.inflight = nil
	}
	c.release(c.batch)
	c.batch, c.pos = nil, 0
	releaseRows(c.series)
	clear(c.series)
	c.series = nil
	gl := c.loading
	if gl == nil {
		// Nothing read ahead (the first group): read it here, in the
		// query's own goroutine (findSeries says why).
		gl = &groupLoad{}
		gl.series, gl.err = c.findGroup(c.group, c.p.marks)
	} else {
		<-gl.done
	}
	c.loading = nil
	c.group++
	if gl.err != nil {
		return gl.err
	}
	if m := c.p.marks; m != nil {
		// Phase two and the later groups read after the marks.
		raw, _, err := m.wait(c.ctx)
		if err != nil {
			return err
		}
		c.p.raw, c.p.marks = raw, nil
	}
	if c.group < len(c.p.groups) {
		c.loading = c.startGroup(c.group)
	}
	c.series, c.cur, c.next, c.nextHour = gl.series, 0, 0, 0
	return nil
}

func (c *cursor) startGroup(g int) *groupLoad {
	gl := &groupLoad{done: make(chan struct{})}
	marks := c.p.marks
	go func() {
		defer close(gl.done)
		gl.series, gl.err = c.findGroup(g, marks)
	}()
	return gl
}

// findGroup runs phase one of group g; marks are the query's, when still
// being read.
func (c *cursor) findGroup(g int, marks *marksRead) ([]seriesRef, error) {
	return c.s.findSeries(c.ctx, c.p, c.p.groups[g], c.startHour, c.endHour, !c.q.SeriesOnly, marks)
}

// nextRow returns the next row of the current series: its base hour and
// cells, valid until the next call. ok is false after its last row.
func (c *cursor) nextRow() (hour uint32, cells []table.Cell, ok bool) {
	if c.next < c.cur {
		// Series skipped without reading their rows are never asked for.
		c.next, c.nextHour = c.cur, 0
	}
	if sr := &c.series[c.cur]; sr.prefetched {
		if c.pre >= len(sr.rows) {
			return 0, nil, false
		}
		r := sr.rows[c.pre]
		c.pre++
		return r.hour, r.cells, true
	}
	for c.err == nil {
		if b := c.batch; b != nil && c.pos < len(b.owners) {
			o := b.owners[c.pos]
			if o > c.cur {
				return 0, nil, false
			}
			i := c.pos
			c.pos++
			if o < c.cur {
				continue // a row of a series the caller skipped
			}
			return b.hours[i], b.rows[i].Cells, true
		}
		if c.inflight == nil && c.next >= len(c.series) {
			return 0, nil, false
		}
		if err := c.nextBatch(); err != nil {
			c.err = err
		}
	}
	return 0, nil, false
}

// nextBatch makes the multi-get under way (or a new one) the current batch and
// starts the next.
func (c *cursor) nextBatch() error {
	if c.inflight == nil {
		c.startBatch()
	}
	b := c.inflight
	select {
	case <-b.done:
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
	c.inflight = nil
	if b.err != nil {
		c.release(b)
		return fmt.Errorf("read %d rows: %w", len(b.keys), b.err)
	}
	c.release(c.batch)
	c.batch, c.pos = b, 0
	if c.next < len(c.series) {
		c.startBatch()
	}
	return nil
}

func (c *cursor) release(b *rowBatch) {
	if b != nil {
		clear(b.rows)
		b.rows = nil
		c.spare = b
	}
}

// startBatch cuts the next batch of row keys, every hour from a series' first to
// its last, and starts its multi-get.
func (c *cursor) startBatch() {
	b := c.spare
	c.spare = nil
	if b == nil {
		b = &rowBatch{}
	}
	b.keys, b.keyBuf, b.owners, b.hours, b.raw, b.nRaw = b.keys[:0], b.keyBuf[:0], b.owners[:0], b.hours[:0], b.raw[:0], 0
	b.rows, b.err = nil, nil
	lay := c.s.layout
	maxRows, maxSeries := c.s.cfg.ReadBatchRows, c.s.cfg.ReadBatchSeries
	nSeries := 0
	for c.next < len(c.series) && len(b.owners) < maxRows && nSeries < maxSeries {
		sr := &c.series[c.next]
		if sr.prefetched {
			c.next++
			continue
		}
		// Hours count in int64: the last hour plus one overflows uint32.
		c.nextHour = max(c.nextHour, int64(sr.first))
		for c.nextHour <= int64(sr.last) && len(b.owners) < maxRows {
			b.keyBuf = lay.AppendRowKey(b.keyBuf, bytesOf(sr.sid), uint32(c.nextHour))
			b.owners = append(b.owners, c.next)
			b.hours = append(b.hours, uint32(c.nextHour))
			c.nextHour += rowkey.HourSeconds
		}
		if c.nextHour <= int64(sr.last) {
			break // the row budget cut this series
		}
		c.next++
		c.nextHour = 0
		nSeries++
	}
	// Keys are cut from keyBuf only now that it no longer grows.
	off := 0
	for i, o := range b.owners {
		n := lay.HeaderWidth() + len(c.series[o].sid) - lay.MetricWidth
		key := b.keyBuf[off : off+n : off+n]
		b.keys = append(b.keys, key)
		off += n
		// Most queries have no marked hour: nothing to work out per key.
		raw := len(c.p.raw) > 0 && c.p.raw.has(c.s.rangeSalt(key), c.s.sidMetric(c.series[o].sid), b.hours[i])
		b.raw = append(b.raw, raw)
		if raw {
			b.nRaw++
		}
	}
	b.done = make(chan struct{})
	c.inflight = b
	if len(b.keys) == 0 {
		close(b.done) // every series left was prefetched
		return
	}
	go func() {
		defer close(b.done)
		b.rows, b.err = c.s.getRows(c.ctx, b.keys, b.raw, b.nRaw)
	}()
}

// getRows reads the rows of keys, those whose raw[i] is set with every
// family and the others with FamilyData alone; nRaw is how many are set.
func (s *Store) getRows(ctx context.Context, keys [][]byte, raw []bool, nRaw int) ([]table.Row, error) {
	switch nRaw {
	case 0:
		return s.data.Get(ctx, FamilyData, keys)
	case len(keys):
		return s.data.Get(ctx, "", keys)
	}
	dataKeys := make([][]byte, 0, len(keys)-nRaw)
	rawKeys := make([][]byte, 0, nRaw)
	for i, k := range keys {
		if raw[i] {
			rawKeys = append(rawKeys, k)
		} else {
			dataKeys = append(dataKeys, k)
		}
	}
	var (
		rawRows []table.Row
		rawErr  error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		rawRows, rawErr = s.data.Get(ctx, "", rawKeys)
	}()
	dataRows, err := s.data.Get(ctx, FamilyData, dataKeys)
	<-done
	if err == nil {
		err = rawErr
	}
	if err != nil {
		return nil, err
	}
	rows := make([]table.Row, len(keys))
	for i := range keys {
		if raw[i] {
			rows[i], rawRows = rawRows[0], rawRows[1:]
		} else {
			rows[i], dataRows = dataRows[0], dataRows[1:]
		}
	}
	return rows, nil
}

// close stops the reads under way and waits for them.
func (c *cursor) close() {
	c.cancel()
	if c.inflight != nil {
		<-c.inflight.done
		c.inflight = nil
	}
	if c.loading != nil {
		<-c.loading.done
		releaseRows(c.loading.series)
		c.loading = nil
	}
	if c.p != nil && c.p.marks != nil {
		<-c.p.marks.done
	}
	releaseRows(c.series)
	c.series, c.batch, c.spare = nil, nil, nil
}
