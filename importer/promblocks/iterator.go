package promblocks

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/store"
)

const hourMillis = 3600 * 1000

// everything selects every series of a block (an empty label name matches
// no label, so the index answers with all its postings).
var everything = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "", ".*")}

// seriesIter reads the merged series of a unit's blocks in label order and
// yields each in pieces.
type seriesIter struct {
	ss      storage.SeriesSet
	closers []io.Closer
	piece   int

	it      chunkenc.Iterator // of the current series
	more    bool              // the current series has a sample not yet yielded
	vt      chunkenc.ValueType
	lbls    []labels.Label
	samples []store.Sample
	hists   []store.HistogramSample
	cur     store.SeriesIn
	err     error
}

// openSeries opens the unit's blocks and queriers over its range, one per
// block and matcher set, merged into one series set.
func openSeries(ctx context.Context, u unit, opts Options) (_ *seriesIter, err error) {
	it := &seriesIter{piece: opts.PieceSamples}
	defer func() {
		if err != nil {
			err = errors.Join(err, it.Close())
		}
	}()
	matchers := opts.Matchers
	if len(matchers) == 0 {
		matchers = [][]*labels.Matcher{everything}
	}
	var sets []storage.SeriesSet
	for _, b := range u.blocks {
		blk, err := tsdb.OpenBlock(opts.Logger, b.dir, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("promblocks: open block %s: %w", b.dir, err)
		}
		it.closers = append(it.closers, blk)
		q, err := tsdb.NewBlockQuerier(blk, u.MinTime, u.MaxTime)
		if err != nil {
			return nil, fmt.Errorf("promblocks: query block %s: %w", b.dir, err)
		}
		// Queriers close before their blocks (Close runs them in reverse).
		it.closers = append(it.closers, q)
		for _, ms := range matchers {
			sets = append(sets, q.Select(ctx, true, nil, ms...))
		}
	}
	if len(sets) == 1 {
		it.ss = sets[0]
	} else {
		it.ss = storage.NewMergeSeriesSet(sets, 0, storage.ChainedSeriesMerge)
	}
	return it, nil
}

// Next yields the next piece: the rest of the current series, or of the
// next one that has samples in the range.
func (it *seriesIter) Next() bool {
	for it.err == nil {
		if !it.more {
			if !it.ss.Next() {
				it.err = it.ss.Err()
				return false
			}
			s := it.ss.At()
			it.lbls = it.lbls[:0]
			s.Labels().Range(func(l labels.Label) { it.lbls = append(it.lbls, l) })
			it.it = s.Iterator(it.it)
			it.vt = it.it.Next()
			it.more = true
		}
		it.fill()
		if it.err == nil && len(it.samples)+len(it.hists) > 0 {
			it.cur = store.SeriesIn{Labels: it.lbls, Samples: it.samples, Histograms: it.hists}
			return true
		}
	}
	return false
}

// fill reads the current series' samples into a piece: until the series
// ends, or an hour boundary once the piece holds it.piece samples, or at
// twice that.
func (it *seriesIter) fill() {
	it.samples = it.samples[:0]
	clear(it.hists) // the importer keeps the histograms, not this slice
	it.hists = it.hists[:0]
	var n int
	var lastHour int64
	for ; it.vt != chunkenc.ValNone; it.vt = it.it.Next() {
		t := it.it.AtT()
		if n >= it.piece && (floorHour(t) != lastHour || n >= 2*it.piece) {
			return // this sample begins the next piece
		}
		switch it.vt {
		case chunkenc.ValFloat:
			_, v := it.it.At()
			it.samples = append(it.samples, store.Sample{T: t, V: v})
		case chunkenc.ValHistogram:
			_, h := it.it.AtHistogram(nil)
			it.hists = append(it.hists, store.HistogramSample{T: t, H: h})
		case chunkenc.ValFloatHistogram:
			_, fh := it.it.AtFloatHistogram(nil)
			it.hists = append(it.hists, store.HistogramSample{T: t, FH: fh})
		default:
			it.err = fmt.Errorf("promblocks: series %s: unknown value type %v", labels.New(it.lbls...), it.vt)
			return
		}
		n++
		lastHour = floorHour(t)
	}
	it.more = false
	if err := it.it.Err(); err != nil {
		it.err = fmt.Errorf("promblocks: series %s: %w", labels.New(it.lbls...), err)
	}
}

func floorHour(t int64) int64 {
	h := t - t%hourMillis
	if t < 0 && t%hourMillis != 0 {
		h -= hourMillis
	}
	return h
}

func (it *seriesIter) At() store.SeriesIn { return it.cur }
func (it *seriesIter) Err() error         { return it.err }

// Close closes the queriers, then the blocks.
func (it *seriesIter) Close() error {
	var errs []error
	for i := len(it.closers) - 1; i >= 0; i-- {
		errs = append(errs, it.closers[i].Close())
	}
	it.closers = nil
	return errors.Join(errs...)
}
