package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/store"
)

// fakeStore is a TEST DOUBLE: an in-memory store.Appender and store.Querier
// with the store's documented semantics (the shared series rules, empty
// label values dropped, sorted series, duplicate timestamps overwrite,
// all-or-nothing writes but for refused series), plus failure injection. It lets the HTTP
// layer be tested without a storage backend.
type fakeStore struct {
	mu       sync.Mutex
	series   map[string]*fakeSeries
	metadata map[string]store.Metadata
	writes   int

	// failWith, when set, fails every Write and Select with it.
	failWith error
	// block, when set, makes Write wait for ctx (a store that hangs).
	block bool
	// ignoreCtx makes a blocked Write ignore ctx entirely and wait for
	// release.
	ignoreCtx bool
	release   chan struct{}
	// selectGate, when set, makes Select wait until it is closed.
	selectGate chan struct{}
	entered    chan struct{} // signalled when a Select waits at the gate
	// failAfter > 0 makes a SeriesSet fail after that many series.
	failAfter int
	// failMetadata, when set, fails every WriteMetadata with it.
	failMetadata error
	// refuse, when set, names the series Write refuses as the real store
	// refuses a series whose new label needs a UID of an exhausted space:
	// the rest of the batch is written, and a *store.RefusedError says
	// what was not.
	refuse func(labels.Labels) bool
	// delay, when set, makes every Write take that long (a slow store).
	delay time.Duration
	// writeGate, when set, makes Write signal writeEntered and wait until
	// the gate is closed.
	writeGate    chan struct{}
	writeEntered chan struct{}
}

type fakeSeries struct {
	lset       labels.Labels
	samples    []store.Sample
	histograms []store.HistogramSample // deep copies
}

func newFakeStore() *fakeStore {
	return &fakeStore{series: map[string]*fakeSeries{}, metadata: map[string]store.Metadata{}, release: make(chan struct{}), entered: make(chan struct{}, 16)}
}

func (f *fakeStore) Write(ctx context.Context, batch []store.SeriesIn) error {
	f.mu.Lock()
	block, ignore, failWith := f.block, f.ignoreCtx, f.failWith
	f.mu.Unlock()
	if block {
		if ignore {
			<-f.release
		} else {
			<-ctx.Done()
			return ctx.Err()
		}
	}
	if failWith != nil {
		return failWith
	}
	if f.writeGate != nil {
		f.writeEntered <- struct{}{}
		<-f.writeGate
	}
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range batch {
		if v := seriesrules.CheckSeries(s.Labels, len(s.Samples), len(s.Histograms), seriesrules.Limits{}); v != nil {
			return fmt.Errorf("%w: %v", store.ErrInvalidInput, v)
		}
		for _, h := range s.Histograms {
			if v := seriesrules.CheckHistogram(h.H, h.FH); v != nil {
				return fmt.Errorf("%w: %v", store.ErrInvalidInput, v)
			}
		}
	}
	f.writes++
	var refused *store.RefusedError
	for _, s := range batch {
		// Copies (the batch's buffers are reused) and drops empty values,
		// as the store does.
		var b labels.ScratchBuilder
		for _, l := range s.Labels {
			if l.Value != "" {
				b.Add(l.Name, l.Value)
			}
		}
		lset := b.Labels()
		if f.refuse != nil && f.refuse(lset) {
			if refused == nil {
				refused = &store.RefusedError{First: fmt.Sprintf("series %s: label \"pod\": all 1-byte tagv UIDs are assigned", lset), Err: errors.New("UID space exhausted")}
			}
			refused.Series++
			refused.Samples += len(s.Samples)
			refused.Histograms += len(s.Histograms)
			continue
		}
		key := lset.String()
		fs := f.series[key]
		if fs == nil {
			fs = &fakeSeries{lset: lset}
			f.series[key] = fs
		}
		// A sample replaces whatever the series holds at its timestamp,
		// float or histogram.
		for _, smp := range s.Samples {
			fs.histograms = removeAt(fs.histograms, smp.T, func(h store.HistogramSample) int64 { return h.T })
			fs.samples = insertAt(fs.samples, smp, func(s store.Sample) int64 { return s.T })
		}
		for _, h := range s.Histograms {
			fs.samples = removeAt(fs.samples, h.T, func(s store.Sample) int64 { return s.T })
			fs.histograms = insertAt(fs.histograms, copyHistogramSample(h), func(h store.HistogramSample) int64 { return h.T })
		}
	}
	if refused != nil {
		return refused
	}
	return nil
}

func (f *fakeStore) WriteMetadata(_ context.Context, md []store.Metadata) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return f.failWith
	}
	if f.failMetadata != nil {
		return f.failMetadata
	}
	for _, m := range md {
		f.metadata[m.MetricFamilyName] = m
	}
	return nil
}

// insertAt inserts x into s, sorted by time, replacing an element of the
// same time.
func insertAt[T any](s []T, x T, t func(T) int64) []T {
	i := sort.Search(len(s), func(i int) bool { return t(s[i]) >= t(x) })
	if i < len(s) && t(s[i]) == t(x) {
		s[i] = x
		return s
	}
	return slices.Insert(s, i, x)
}

// removeAt removes the element of time ts from s, sorted by time.
func removeAt[T any](s []T, ts int64, t func(T) int64) []T {
	i := sort.Search(len(s), func(i int) bool { return t(s[i]) >= ts })
	if i < len(s) && t(s[i]) == ts {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// copyHistogramSample copies h deeply: the request's arenas are reused.
func copyHistogramSample(h store.HistogramSample) store.HistogramSample {
	out := store.HistogramSample{T: h.T}
	if h.H != nil {
		out.H = h.H.Copy()
		out.H.CustomValues = slices.Clone(h.H.CustomValues)
	}
	if h.FH != nil {
		out.FH = h.FH.Copy()
		out.FH.CustomValues = slices.Clone(h.FH.CustomValues)
	}
	return out
}

// numHistograms counts every stored histogram sample.
func (f *fakeStore) numHistograms() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.series {
		n += len(s.histograms)
	}
	return n
}

// numSamples counts every stored sample.
func (f *fakeStore) numSamples() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.series {
		n += len(s.samples)
	}
	return n
}

func (f *fakeStore) Select(ctx context.Context, q store.Query) store.SeriesSet {
	if f.selectGate != nil {
		f.entered <- struct{}{}
		select {
		case <-f.selectGate:
		case <-ctx.Done():
			return &fakeSet{err: ctx.Err()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return &fakeSet{err: f.failWith}
	}
	var out []store.Series
	for _, s := range f.series {
		if !matches(s.lset, q.Matchers) {
			continue
		}
		var smp []store.Sample
		for _, x := range s.samples {
			if x.T >= q.Start && x.T <= q.End {
				smp = append(smp, x)
			}
		}
		var hs []store.HistogramSample
		for _, x := range s.histograms {
			if x.T >= q.Start && x.T <= q.End {
				hs = append(hs, copyHistogramSample(x))
			}
		}
		if len(smp) == 0 && len(hs) == 0 {
			continue
		}
		if q.SeriesOnly {
			smp, hs = nil, nil
		}
		out = append(out, store.Series{Labels: s.lset, Samples: smp, Histograms: hs})
	}
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].Labels, out[j].Labels) < 0 })
	return &fakeSet{series: out, i: -1, failAfter: f.failAfter}
}

func matches(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

type fakeSet struct {
	series    []store.Series
	i         int
	err       error
	failAfter int
}

func (s *fakeSet) Next() bool {
	if s.err != nil || s.i+1 >= len(s.series) {
		return false
	}
	if s.failAfter > 0 && s.i+1 == s.failAfter {
		s.err = errors.New("scanner lost its region server")
		return false
	}
	s.i++
	return true
}
func (s *fakeSet) At() store.Series { return s.series[s.i] }
func (s *fakeSet) Err() error       { return s.err }
func (s *fakeSet) Close()           {}
