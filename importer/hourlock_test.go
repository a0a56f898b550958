package importer

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/store"
)

func TestHourLocks(t *testing.T) {
	var l hourLocks
	ctx := context.Background()
	a, b, c := seriesHour{1, 0}, seriesHour{1, hourMillis}, seriesHour{2, 0}
	if err := l.lock(ctx, []seriesHour{a}); err != nil {
		t.Fatal(err)
	}
	// Other series-hours are free.
	if err := l.lock(ctx, []seriesHour{b}); err != nil {
		t.Fatal(err)
	}
	// c is free but a is not: the write waits, holding neither.
	got := make(chan error)
	go func() { got <- l.lock(ctx, []seriesHour{c, a}) }()
	for waited := 0; waited == 0; runtime.Gosched() {
		l.mu.Lock()
		waited = l.waited
		l.mu.Unlock()
	}
	select {
	case err := <-got:
		t.Fatalf("lock of a held series-hour returned %v", err)
	default:
	}
	if err := l.lock(ctx, []seriesHour{c}); err != nil {
		t.Fatal(err)
	}
	l.unlock([]seriesHour{a, c})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// Now a and c are held by it: a lock given up on returns the cause.
	cctx, cancel := context.WithCancelCause(ctx)
	cause := errors.New("import stopped")
	cancel(cause)
	if err := l.lock(cctx, []seriesHour{c}); !errors.Is(err, cause) {
		t.Errorf("lock with an ended context: %v, want its cause", err)
	}
	l.unlock([]seriesHour{a, b, c})
	if len(l.held) != 0 {
		t.Errorf("held after every unlock: %v", l.held)
	}
}

func TestAppendSeriesHours(t *testing.T) {
	var h maphash.Hash
	h.SetSeed(maphash.MakeSeed())
	x := []labels.Label{{Name: "__name__", Value: "x"}}
	xEmpty := []labels.Label{{Name: "__name__", Value: "x"}, {Name: "e", Value: ""}}
	y := []labels.Label{{Name: "__name__", Value: "y"}}
	hx, hy := labelsHash(&h, x), labelsHash(&h, y)
	if hx == hy || labelsHash(&h, xEmpty) != hx {
		t.Fatalf("hashes: x %x, x with an empty label %x, y %x", hx, labelsHash(&h, xEmpty), hy)
	}
	series := []store.SeriesIn{
		{Labels: x, Samples: []store.Sample{{T: 5}, {T: hourMillis - 1}, {T: 3 * hourMillis}, {T: 3*hourMillis + 7}}},
		{Labels: y, Histograms: []store.HistogramSample{{T: hourMillis}}},
		// The same series again (a store drops empty labels), and
		// histograms in an hour of its floats.
		{Labels: xEmpty, Samples: []store.Sample{{T: 4 * hourMillis}}, Histograms: []store.HistogramSample{{T: 3*hourMillis + 1}}},
	}
	prefix := []seriesHour{{9, 9}}
	got := appendSeriesHours(prefix, series, &h)
	want := append([]seriesHour{{9, 9}}, seriesHour{hx, 0}, seriesHour{hx, 3 * hourMillis}, seriesHour{hx, 4 * hourMillis}, seriesHour{hy, hourMillis})
	slices.SortFunc(want[1:], compareSeriesHours)
	if !slices.Equal(got, want) {
		t.Errorf("series-hours\n%v, want\n%v", got, want)
	}
}

// exclusive records every two writes in flight at once that hold the same
// series-hour: store.WriteHistory's contract forbids them. Each write is
// held until another starts, or for a moment, so that writes the importer
// lets overlap do overlap; the first is held until a second is in flight
// (it fails after a minute without one: the import is not parallel).
type exclusive struct {
	w Writer

	mu        sync.Mutex
	busy      map[string]int // series-hour: writes in flight holding it
	inFlight  int
	entered   chan struct{} // closed and replaced when a write starts
	parallel  chan struct{} // closed when two writes are in flight
	first     bool          // the first write has started
	conflicts []string
}

func newExclusive(w Writer) *exclusive {
	return &exclusive{w: w, busy: map[string]int{}, entered: make(chan struct{}), parallel: make(chan struct{})}
}

func (e *exclusive) WriteHistory(ctx context.Context, b []store.SeriesIn) error {
	keys := map[string]bool{}
	for _, s := range b {
		var ls []labels.Label
		for _, l := range s.Labels {
			if l.Value != "" {
				ls = append(ls, l)
			}
		}
		for _, smp := range s.Samples {
			keys[fmt.Sprintf("%s@%d", labelsString(ls), smp.T/hourMillis)] = true
		}
		for _, smp := range s.Histograms {
			keys[fmt.Sprintf("%s@%d", labelsString(ls), smp.T/hourMillis)] = true
		}
	}
	e.mu.Lock()
	for k := range keys {
		if e.busy[k] > 0 {
			e.conflicts = append(e.conflicts, k)
		}
		e.busy[k]++
	}
	if e.inFlight++; e.inFlight == 2 {
		select {
		case <-e.parallel:
		default:
			close(e.parallel)
		}
	}
	first := !e.first
	e.first = true
	close(e.entered)
	e.entered = make(chan struct{})
	next := e.entered
	e.mu.Unlock()
	var err error
	if first {
		select {
		case <-e.parallel:
		case <-time.After(time.Minute):
			err = errors.New("no second write came while the first was in flight")
		}
	} else {
		select {
		case <-next:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err == nil {
		err = e.w.WriteHistory(ctx, b)
	}
	e.mu.Lock()
	for k := range keys {
		e.busy[k]--
	}
	e.inFlight--
	e.mu.Unlock()
	return err
}

func (e *exclusive) check(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.conflicts) > 0 {
		t.Errorf("%d times two writes in flight held the same series-hour, first %s", len(e.conflicts), e.conflicts[0])
	}
}

// TestRunWritesSeriesHoursOneAtATime: series-hours larger than a batch are
// split across batches, and units not aligned on hours share hours of the
// same series; never are two writes of one series-hour in flight at once,
// while the import still writes in parallel.
func TestRunWritesSeriesHoursOneAtATime(t *testing.T) {
	for _, c := range []struct {
		name  string
		f     *fakeSource
		batch int
	}{
		// 3,600 samples a series-hour, batches of 1,000.
		{"split hours", newFakeSource(2, 2, time.Second), 1000},
		// Units of 90 minutes holding the same series: each batch a unit.
		{"unaligned units", newSpanSource(6, 3, 10*time.Second, 90*time.Minute), 10_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := pebbleTarget(t)
			c.f.shared = c.name == "unaligned units"
			ex := newExclusive(tg.st)
			cfg := runCfg(c.f, tg, ex)
			cfg.Workers, cfg.BatchSamples, cfg.Attempts = 4, c.batch, 1
			cfg.Verify = true
			sum, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Imported != len(c.f.units) || len(sum.Mismatches) != 0 {
				t.Errorf("summary %+v", sum)
			}
			ex.check(t)
			checkStore(t, tg.st, c.f)
		})
	}
}

// BenchmarkAppendSeriesHours is the lock's cost per batch: a batch of
// 100,000 samples, 416 series of an hour at 15 s (typical), and what a
// batch costs to lock and unlock.
func BenchmarkAppendSeriesHours(b *testing.B) {
	series := make([]store.SeriesIn, DefaultBatchSamples/240)
	for i := range series {
		fs := make([]store.Sample, 240)
		for k := range fs {
			fs[k] = store.Sample{T: base + int64(k)*15000, V: float64(k)}
		}
		series[i] = store.SeriesIn{Labels: []labels.Label{{Name: "__name__", Value: "up"}, {Name: "instance", Value: fmt.Sprintf("host-%04d:9100", i)}, {Name: "job", Value: "node"}}, Samples: fs}
	}
	var (
		h     maphash.Hash
		l     hourLocks
		hours []seriesHour
	)
	h.SetSeed(maphash.MakeSeed())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		hours = appendSeriesHours(hours[:0], series, &h)
		if err := l.lock(ctx, hours); err != nil {
			b.Fatal(err)
		}
		l.unlock(hours)
	}
	b.ReportMetric(float64(b.N*DefaultBatchSamples)/b.Elapsed().Seconds(), "samples/s")
}
