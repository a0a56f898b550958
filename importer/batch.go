package importer

import (
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/store"
)

// hourMillis is the store's row span: the batches cut series on its
// boundaries so that each series-hour reaches WriteHistory whole.
const hourMillis = 3600 * 1000

// batch is the series pieces of one WriteHistory call. Labels and samples
// are copied into arenas reused from batch to batch (a source's At is valid
// only until its Next); the pieces are kept as offsets while the arenas
// grow, and become SeriesIn only in finish.
type batch struct {
	unit    *unitRun
	pieces  []piece
	labels  []labels.Label
	samples []store.Sample
	hists   []store.HistogramSample
	series  []store.SeriesIn // built by finish
	hours   []seriesHour     // of series, held while it is written
}

type piece struct{ l0, l1, s0, s1, h0, h1 int }

// size is the samples and histograms the batch holds.
func (b *batch) size() int { return len(b.samples) + len(b.hists) }

func (b *batch) reset() {
	b.unit = nil
	b.pieces = b.pieces[:0]
	b.labels = b.labels[:0]
	b.samples = b.samples[:0]
	clear(b.hists) // drop the histograms for the garbage collector
	b.hists = b.hists[:0]
	clear(b.series)
	b.series = b.series[:0]
	b.hours = b.hours[:0]
}

// add copies a series piece into the batch. A piece that continues the
// batch's last series (same labels) extends it.
func (b *batch) add(ls []labels.Label, fs []store.Sample, hs []store.HistogramSample) {
	if len(fs)+len(hs) == 0 {
		return // the store refuses a series without samples
	}
	if p := b.last(ls); p != nil {
		b.samples = append(b.samples, fs...)
		b.hists = append(b.hists, hs...)
		p.s1, p.h1 = len(b.samples), len(b.hists)
		return
	}
	p := piece{l0: len(b.labels), s0: len(b.samples), h0: len(b.hists)}
	b.labels = append(b.labels, ls...)
	b.samples = append(b.samples, fs...)
	b.hists = append(b.hists, hs...)
	p.l1, p.s1, p.h1 = len(b.labels), len(b.samples), len(b.hists)
	b.pieces = append(b.pieces, p)
}

// last returns the batch's last piece if it is of the series ls; its
// samples end the arenas.
func (b *batch) last(ls []labels.Label) *piece {
	if len(b.pieces) == 0 {
		return nil
	}
	p := &b.pieces[len(b.pieces)-1]
	if !slices.Equal(b.labels[p.l0:p.l1], ls) {
		return nil
	}
	return p
}

// takeFrom removes from the last piece (of series ls) its samples at or
// after t and appends them to fs and hs; a piece left empty goes.
func (b *batch) takeFrom(ls []labels.Label, t int64, fs []store.Sample, hs []store.HistogramSample) ([]store.Sample, []store.HistogramSample) {
	p := b.last(ls)
	if p == nil {
		return fs, hs
	}
	nf := p.s0 + sort.Search(p.s1-p.s0, func(i int) bool { return b.samples[p.s0+i].T >= t })
	nh := p.h0 + sort.Search(p.h1-p.h0, func(i int) bool { return b.hists[p.h0+i].T >= t })
	fs = append(fs, b.samples[nf:]...)
	hs = append(hs, b.hists[nh:]...)
	clear(b.hists[nh:])
	b.samples, b.hists = b.samples[:nf], b.hists[:nh]
	p.s1, p.h1 = nf, nh
	if p.s1 == p.s0 && p.h1 == p.h0 {
		b.labels = b.labels[:p.l0]
		b.pieces = b.pieces[:len(b.pieces)-1]
	}
	return fs, hs
}

// finish returns the batch's series, slices of its arenas.
func (b *batch) finish() []store.SeriesIn {
	b.series = b.series[:0]
	for _, p := range b.pieces {
		in := store.SeriesIn{Labels: b.labels[p.l0:p.l1:p.l1]}
		if p.s1 > p.s0 {
			in.Samples = b.samples[p.s0:p.s1:p.s1]
		}
		if p.h1 > p.h0 {
			in.Histograms = b.hists[p.h0:p.h1:p.h1]
		}
		b.series = append(b.series, in)
	}
	return b.series
}

// cutBefore splits the time-sorted samples fs and hs at the latest hour
// boundary that leaves at most room of them (floats and histograms
// together) before it. ok is false when even the first hour holds more
// than room.
func cutBefore(fs []store.Sample, hs []store.HistogramSample, room int) (nf, nh int, ok bool) {
	if len(fs)+len(hs) <= room {
		return len(fs), len(hs), true
	}
	// The (room+1)-th sample in time order: its hour, and all after it,
	// must wait.
	i, j := splitCount(fs, hs, room)
	var t int64
	if j < len(hs) && (i >= len(fs) || hs[j].T <= fs[i].T) {
		t = hs[j].T
	} else {
		t = fs[i].T
	}
	boundary := t - t%hourMillis // timestamps are checked non-negative
	nf = sort.Search(len(fs), func(k int) bool { return fs[k].T >= boundary })
	nh = sort.Search(len(hs), func(k int) bool { return hs[k].T >= boundary })
	return nf, nh, nf+nh > 0
}

// batcher fills batches with a unit's pieces, at most max samples each,
// and hands each full batch to emit, which returns the next empty batch
// (nil with an error). It keeps each series-hour in one batch: a batch is
// cut at an hour boundary of the series being added, and the hour a full
// batch ends with is carried into the next when the series goes on in the
// next piece. Only an hour of one series holding more than max samples is
// split.
type batcher struct {
	max  int
	cur  *batch
	emit func(*batch) (*batch, error)
	// carried samples, reused
	cf []store.Sample
	ch []store.HistogramSample
}

// add adds a piece of a series; pieces of one series come in time order.
func (bt *batcher) add(ls []labels.Label, fs []store.Sample, hs []store.HistogramSample) error {
	for len(fs)+len(hs) > 0 {
		nf, nh, ok := cutBefore(fs, hs, bt.max-bt.cur.size())
		if !ok {
			// The piece's first hour does not fit; with the part of it
			// already in the batch, it goes to the next batch, unless it
			// is all the batch holds.
			hour := firstTime(fs, hs)
			hour -= hour % hourMillis
			bt.cf, bt.ch = bt.cur.takeFrom(ls, hour, bt.cf[:0], bt.ch[:0])
			if bt.cur.size() > 0 {
				if err := bt.flush(); err != nil {
					return err
				}
				bt.cur.add(ls, bt.cf, bt.ch)
				clear(bt.ch)
				continue
			}
			bt.cur.add(ls, bt.cf, bt.ch)
			clear(bt.ch)
			nf, nh = splitCount(fs, hs, bt.max-bt.cur.size())
		}
		bt.cur.add(ls, fs[:nf], hs[:nh])
		fs, hs = fs[nf:], hs[nh:]
		if len(fs)+len(hs) > 0 {
			if err := bt.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func firstTime(fs []store.Sample, hs []store.HistogramSample) int64 {
	switch {
	case len(hs) == 0:
		return fs[0].T
	case len(fs) == 0:
		return hs[0].T
	}
	return min(fs[0].T, hs[0].T)
}

// splitCount returns how many of fs and hs are the first n in time order.
func splitCount(fs []store.Sample, hs []store.HistogramSample, n int) (nf, nh int) {
	for nf+nh < n {
		if nh >= len(hs) || (nf < len(fs) && fs[nf].T < hs[nh].T) {
			nf++
		} else {
			nh++
		}
	}
	return nf, nh
}

// flush emits the current batch if it holds anything.
func (bt *batcher) flush() error {
	if len(bt.cur.pieces) == 0 {
		return nil
	}
	// The batch belongs to emit now, whatever it returns.
	next, err := bt.emit(bt.cur)
	bt.cur = next
	return err
}
