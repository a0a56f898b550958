package importer

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/testdb"
)

// fakeSource is generated history: units of two hours, each with series
// of float samples every step (one series of histograms), yielded in pieces
// of at most piece samples cut at hour boundaries, as a block source does.
type fakeSource struct {
	units  []Unit
	series int   // per unit
	step   int64 // ms
	piece  int
	// extra, when set, adds labels (to make series a store refuses).
	extra func(unit, series int) []labels.Label
	// negative gives the first series of each unit samples before 1970.
	negative bool
	// badHistogram, when set and true for a histogram sample, makes its
	// count disagree with its buckets: a histogram the store refuses
	// (histogram.Validate) and the importer's own checks do not look at.
	badHistogram func(unit int, t int64) bool
	// shared leaves the unit label out: the units hold the same series.
	shared bool
	// interleave yields the series' pieces in turn, one piece of each
	// series, then the next of each, as an OpenTSDB unit yields its rows
	// hour by hour.
	interleave bool

	mu     sync.Mutex
	opened map[string]int
}

// base is 2026-01-01T00:00:00Z, on an hour boundary.
const base = int64(1767225600000)

func newFakeSource(units, series int, step time.Duration) *fakeSource {
	return newSpanSource(units, series, step, 2*time.Hour)
}

// newSpanSource is newFakeSource with units of the given span, which need
// not be whole hours.
func newSpanSource(units, series int, step, span time.Duration) *fakeSource {
	f := &fakeSource{series: series, step: step.Milliseconds(), piece: 1 << 30, opened: map[string]int{}}
	ms := span.Milliseconds()
	for i := range units {
		mint := base + int64(i)*ms
		f.units = append(f.units, Unit{ID: fmt.Sprintf("u%02d", i), MinTime: mint, MaxTime: mint + ms - 1,
			Series: int64(series), Samples: int64(series) * ms / f.step})
	}
	return f
}

func (f *fakeSource) Units(context.Context) ([]Unit, error) { return f.units, nil }
func (f *fakeSource) Close() error                          { return nil }

func (f *fakeSource) Open(_ context.Context, u Unit) (SeriesIterator, error) {
	f.mu.Lock()
	f.opened[u.ID]++
	f.mu.Unlock()
	idx, err := strconv.Atoi(u.ID[1:])
	if err != nil {
		return nil, err
	}
	if f.interleave {
		return newInterleavedIter(f, u, idx), nil
	}
	return &fakeIter{f: f, u: u, unit: idx, s: -1}, nil
}

// want is what the store must hold of series s of a unit.
func (f *fakeSource) want(u Unit, unit, s int) store.SeriesIn {
	ls := []labels.Label{{Name: "__name__", Value: "fake_metric"}, {Name: "series", Value: strconv.Itoa(s)}}
	if !f.shared {
		ls = append(ls, labels.Label{Name: "unit", Value: u.ID})
	}
	if f.extra != nil {
		ls = append(ls, f.extra(unit, s)...)
		sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	}
	in := store.SeriesIn{Labels: ls}
	var ts []int64
	if f.negative && s == 0 {
		ts = append(ts, -3*f.step, -2*f.step, -f.step)
	}
	for t := u.MinTime; t <= u.MaxTime; t += f.step {
		ts = append(ts, t)
	}
	for _, t := range ts {
		if s == 1 {
			n := uint64(t/f.step%100 + 100)
			h := &histogram.Histogram{Count: n, ZeroCount: n, Sum: float64(t % 977), Schema: 1}
			if f.badHistogram != nil && f.badHistogram(unit, t) {
				h.Count++
			}
			in.Histograms = append(in.Histograms, store.HistogramSample{T: t, H: h})
			continue
		}
		in.Samples = append(in.Samples, store.Sample{T: t, V: math.Sin(float64(t/f.step)) * float64(s+1)})
	}
	return in
}

type fakeIter struct {
	f        *fakeSource
	u        Unit
	unit, s  int
	cur, out store.SeriesIn
}

// Next yields the unit's series one after the other, each in pieces.
func (it *fakeIter) Next() bool {
	for len(it.cur.Samples)+len(it.cur.Histograms) == 0 {
		it.s++
		if it.s >= it.f.series {
			return false
		}
		it.cur = it.f.want(it.u, it.unit, it.s)
	}
	nf, nh, ok := cutBefore(it.cur.Samples, it.cur.Histograms, it.f.piece)
	if !ok {
		nf, nh = splitCount(it.cur.Samples, it.cur.Histograms, it.f.piece)
	}
	it.out = store.SeriesIn{Labels: it.cur.Labels, Samples: it.cur.Samples[:nf], Histograms: it.cur.Histograms[:nh]}
	it.cur.Samples, it.cur.Histograms = it.cur.Samples[nf:], it.cur.Histograms[nh:]
	return true
}

// interleavedIter yields a piece of each series in turn.
type interleavedIter struct {
	iters []*fakeIter
	i     int
	out   store.SeriesIn
}

func newInterleavedIter(f *fakeSource, u Unit, unit int) *interleavedIter {
	it := &interleavedIter{}
	for s := range f.series {
		fi := &fakeIter{f: f, u: u, unit: unit, s: s, cur: f.want(u, unit, s)}
		fi.f = &fakeSource{series: s + 1, piece: f.piece} // Next stops after series s
		it.iters = append(it.iters, fi)
	}
	return it
}

func (it *interleavedIter) Next() bool {
	for range len(it.iters) {
		fi := it.iters[it.i%len(it.iters)]
		it.i++
		if fi.Next() {
			it.out = fi.out
			return true
		}
	}
	return false
}

func (it *interleavedIter) At() store.SeriesIn { return it.out }
func (it *interleavedIter) Err() error         { return nil }
func (it *interleavedIter) Close() error       { return nil }

func (it *fakeIter) At() store.SeriesIn { return it.out }
func (it *fakeIter) Err() error         { return nil }
func (it *fakeIter) Close() error       { return nil }

func openPebble(tb testing.TB) (table.DB, string) { return testdb.Pebble(tb) }

// target is a store and a state on a backend.
type target struct {
	st    *store.Store
	state *State
	db    table.DB
}

func openTarget(tb testing.TB, db table.DB, prefix string) target {
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 4}})
	if err != nil {
		tb.Fatal(err)
	}
	state, err := OpenState(ctx, db, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return target{st: st, state: state, db: db}
}

func forEachBackend(t *testing.T, f func(t *testing.T, tg target)) {
	testdb.ForEach(t, "import", func(t *testing.T, db table.DB, prefix string) {
		f(t, openTarget(t, db, prefix))
	})
}

func pebbleTarget(tb testing.TB) target {
	db, prefix := openPebble(tb)
	return openTarget(tb, db, prefix)
}
