package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/store"
)

// fakeStore is a TEST DOUBLE: an in-memory store.Appender and store.Querier
// with the store's documented semantics (sorted series, duplicate timestamps
// overwrite, all-or-nothing writes), plus failure injection. It lets the HTTP
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
}

type fakeSeries struct {
	lset    labels.Labels
	samples []store.Sample
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
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range batch {
		if len(s.Labels) == 0 {
			return fmt.Errorf("%w: series without labels", store.ErrInvalidInput)
		}
	}
	f.writes++
	for _, s := range batch {
		lset := labels.New(s.Labels...) // copies: the batch's buffers are reused
		key := lset.String()
		fs := f.series[key]
		if fs == nil {
			fs = &fakeSeries{lset: lset}
			f.series[key] = fs
		}
		for _, smp := range s.Samples {
			i := sort.Search(len(fs.samples), func(i int) bool { return fs.samples[i].T >= smp.T })
			if i < len(fs.samples) && fs.samples[i].T == smp.T {
				fs.samples[i] = smp
				continue
			}
			fs.samples = slices.Insert(fs.samples, i, smp)
		}
	}
	return nil
}

func (f *fakeStore) WriteMetadata(_ context.Context, md []store.Metadata) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return f.failWith
	}
	for _, m := range md {
		f.metadata[m.MetricFamilyName] = m
	}
	return nil
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

func (f *fakeStore) Select(_ context.Context, q store.Query) store.SeriesSet {
	if f.selectGate != nil {
		f.entered <- struct{}{}
		<-f.selectGate
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
		if len(smp) == 0 {
			continue
		}
		if q.SeriesOnly {
			smp = nil
		}
		out = append(out, store.Series{Labels: s.lset, Samples: smp})
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
