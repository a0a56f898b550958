package store

import (
	"context"
	"fmt"

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
	return &seriesSet{c: c}
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
	return &chunkSeriesSet{c: c}
}

// seriesSet decodes each series' rows into samples.
type seriesSet struct {
	c       *cursor
	dec     rowDecoder
	samples []Sample
	hists   []HistogramSample
	cur     Series
	err     error
}

func (ss *seriesSet) Next() bool {
	c := ss.c
	for ss.err == nil && c.nextSeries() {
		sr := c.at()
		if c.q.SeriesOnly {
			ss.cur = Series{Labels: sr.lset}
			return true
		}
		ss.samples = ss.samples[:0]
		clear(ss.hists)
		ss.hists = ss.hists[:0]
		for {
			hour, cells, ok := c.nextRow()
			if !ok {
				break
			}
			if err := ss.dec.decode(rowkey.HourMillis(hour), cells, c.q.Start, c.q.End, false); err != nil {
				ss.err = fmt.Errorf("row of series %s at hour %d: %w", sr.lset, hour, err)
				return false
			}
			ss.samples = append(ss.samples, ss.dec.loose...)
			ss.hists = append(ss.hists, ss.dec.looseH...)
		}
		if len(ss.samples) > 0 || len(ss.hists) > 0 {
			ss.cur = Series{Labels: sr.lset}
			if len(ss.samples) > 0 {
				ss.cur.Samples = ss.samples[:len(ss.samples):len(ss.samples)]
			}
			if len(ss.hists) > 0 {
				ss.cur.Histograms = ss.hists[:len(ss.hists):len(ss.hists)]
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
	ss.samples, ss.hists = nil, nil
}

// chunkSeriesSet assembles each series' rows into chunks.
type chunkSeriesSet struct {
	c   *cursor
	dec rowDecoder
	b   chunkBuilder
	cur ChunkSeries
	err error
}

func (cs *chunkSeriesSet) Next() bool {
	c := cs.c
	for cs.err == nil && c.nextSeries() {
		sr := c.at()
		if c.q.SeriesOnly {
			cs.cur = ChunkSeries{Labels: sr.lset}
			return true
		}
		cs.b.reset()
		for {
			hour, cells, ok := c.nextRow()
			if !ok {
				break
			}
			err := cs.dec.decode(rowkey.HourMillis(hour), cells, c.q.Start, c.q.End, true)
			if err == nil {
				err = cs.b.addRow(&cs.dec)
			}
			if err != nil {
				cs.err = fmt.Errorf("row of series %s at hour %d: %w", sr.lset, hour, err)
				return false
			}
		}
		chunks, err := cs.b.finish()
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
	cs.b = chunkBuilder{}
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
