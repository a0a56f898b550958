package store

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/prom-hbase/prom-hbase/rowkey"
)

// Select returns the series matching q.Matchers with their samples in
// [q.Start, q.End], in label order, read in bounded batches as the caller
// iterates (see cursor).
func (s *Store) Select(ctx context.Context, q Query) SeriesSet {
	c, err := s.newCursor(ctx, q)
	if err != nil {
		return &errSeriesSet{err: err}
	}
	return &seriesSet{c: c, bufs: getSetBuffers()}
}

// SelectChunks is Select with each series' samples as Prometheus chunks:
// stored chunks that lie wholly in [q.Start, q.End] with no raw sample over
// them go out as they are; the rest is decoded and cut anew (see
// ChunkSeries).
func (s *Store) SelectChunks(ctx context.Context, q Query) ChunkSeriesSet {
	c, err := s.newCursor(ctx, q)
	if err != nil {
		return &errChunkSeriesSet{errSeriesSet{err: err}}
	}
	return &chunkSeriesSet{c: c, bufs: getSetBuffers()}
}

// setBuffers are what a series set decodes and builds into: a query's
// worth of them (some 10 KB on a read of 25 series over 2 hours) was
// allocated anew per query, one of the larger shares of a streamed read's
// garbage (BENCHMARKS.md, "Streamed read: the answer's length, and the
// garbage collector"). A set takes them from a pool and gives them back
// on Close, after which nothing it returned is used (the sets' contract).
type setBuffers struct {
	dec     rowDecoder
	b       chunkBuilder
	samples []Sample
	hists   []HistogramSample
}

var setBufferPool = sync.Pool{New: func() any { return new(setBuffers) }}

func getSetBuffers() *setBuffers { return setBufferPool.Get().(*setBuffers) }

// maxPooledBytes bounds the buffers a query gives back to a pool: a
// query that grew them past it (a long series read as samples, a large
// prefetch) leaves them to the collector rather than to the next query.
const maxPooledBytes = 1 << 20

// putSetBuffers empties bufs, dropping every reference into rows and
// chunks so that the pool keeps no HBase answer or store block alive, and
// gives them back unless they grew past maxPooledBytes.
func putSetBuffers(bufs *setBuffers) {
	const sampleSize = int(unsafe.Sizeof(Sample{}))
	if (cap(bufs.samples)+cap(bufs.dec.raw)+cap(bufs.dec.loose)+cap(bufs.b.pending))*sampleSize+cap(bufs.b.arena) > maxPooledBytes {
		return
	}
	bufs.dec.release()
	bufs.b.release()
	bufs.samples = bufs.samples[:0]
	clear(bufs.hists[:cap(bufs.hists)])
	bufs.hists = bufs.hists[:0]
	setBufferPool.Put(bufs)
}

// seriesSet decodes each series' rows into samples.
type seriesSet struct {
	c    *cursor
	bufs *setBuffers // nil once closed
	cur  Series
	err  error
}

func (ss *seriesSet) Next() bool {
	c, b := ss.c, ss.bufs
	if b == nil {
		return false
	}
	for ss.err == nil && c.nextSeries() {
		sr := c.at()
		if c.q.SeriesOnly {
			ss.cur = Series{Labels: sr.lset}
			return true
		}
		b.samples = b.samples[:0]
		clear(b.hists)
		b.hists = b.hists[:0]
		for {
			hour, cells, ok := c.nextRow()
			if !ok {
				break
			}
			if err := b.dec.decode(rowkey.HourMillis(hour), cells, c.q.Start, c.q.End, false); err != nil {
				ss.err = fmt.Errorf("row of series %s at hour %d: %w", sr.lset, hour, err)
				return false
			}
			b.samples = append(b.samples, b.dec.loose...)
			b.hists = append(b.hists, b.dec.looseH...)
		}
		if len(b.samples) > 0 || len(b.hists) > 0 {
			ss.cur = Series{Labels: sr.lset}
			if len(b.samples) > 0 {
				ss.cur.Samples = b.samples[:len(b.samples):len(b.samples)]
			}
			if len(b.hists) > 0 {
				ss.cur.Histograms = b.hists[:len(b.hists):len(b.hists)]
			}
			return true
		}
	}
	return false
}

func (ss *seriesSet) At() Series { return ss.cur }

func (ss *seriesSet) Err() error {
	if ss.err != nil {
		return ss.err
	}
	return ss.c.err
}

func (ss *seriesSet) Close() {
	ss.c.close()
	ss.cur = Series{}
	if ss.bufs != nil {
		putSetBuffers(ss.bufs)
		ss.bufs = nil
	}
}

// chunkSeriesSet assembles each series' rows into chunks.
type chunkSeriesSet struct {
	c    *cursor
	bufs *setBuffers // nil once closed
	cur  ChunkSeries
	err  error
}

func (cs *chunkSeriesSet) Next() bool {
	c, bufs := cs.c, cs.bufs
	if bufs == nil {
		return false
	}
	for cs.err == nil && c.nextSeries() {
		sr := c.at()
		if c.q.SeriesOnly {
			cs.cur = ChunkSeries{Labels: sr.lset}
			return true
		}
		bufs.b.reset()
		for {
			hour, cells, ok := c.nextRow()
			if !ok {
				break
			}
			err := bufs.dec.decode(rowkey.HourMillis(hour), cells, c.q.Start, c.q.End, true)
			if err == nil {
				err = bufs.b.addRow(&bufs.dec)
			}
			if err != nil {
				cs.err = fmt.Errorf("row of series %s at hour %d: %w", sr.lset, hour, err)
				return false
			}
		}
		chunks, err := bufs.b.finish()
		if err != nil {
			cs.err = fmt.Errorf("series %s: %w", sr.lset, err)
			return false
		}
		if len(chunks) > 0 {
			cs.cur = ChunkSeries{Labels: sr.lset, Chunks: chunks}
			return true
		}
	}
	return false
}

func (cs *chunkSeriesSet) At() ChunkSeries { return cs.cur }

func (cs *chunkSeriesSet) Err() error {
	if cs.err != nil {
		return cs.err
	}
	return cs.c.err
}

func (cs *chunkSeriesSet) Close() {
	cs.c.close()
	cs.cur = ChunkSeries{}
	if cs.bufs != nil {
		putSetBuffers(cs.bufs)
		cs.bufs = nil
	}
}

// errSeriesSet is a query that failed before its first series.
type errSeriesSet struct{ err error }

func (e *errSeriesSet) Next() bool { return false }
func (e *errSeriesSet) At() Series { return Series{} }
func (e *errSeriesSet) Err() error { return e.err }
func (e *errSeriesSet) Close()     {}

type errChunkSeriesSet struct{ errSeriesSet }

func (e *errChunkSeriesSet) At() ChunkSeries { return ChunkSeries{} }

var _ ChunkQuerier = (*Store)(nil)
