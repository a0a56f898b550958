package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/store"
)

// checkStore reads the store back and requires exactly the source's series
// and samples (negative timestamps left out): a sample written twice, lost,
// or changed fails it.
func checkStore(t *testing.T, st *store.Store, f *fakeSource) {
	t.Helper()
	want := map[string]string{}
	for i, u := range f.units {
		for s := range f.series {
			in := f.want(u, i, s)
			in, _ = check(in, testLimits, &drops{})
			// Units in time order: a series they share is their samples
			// one after the other (floats or histograms, never both).
			want[labelsString(in.Labels)] += samplesString(in.Samples, in.Histograms)
		}
	}
	ss := st.Select(context.Background(), store.Query{Start: math.MinInt64 / 2, End: math.MaxInt64 / 2,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "fake_metric")}})
	defer ss.Close()
	got := 0
	for ss.Next() {
		s := ss.At()
		var ls []labels.Label
		s.Labels.Range(func(l labels.Label) { ls = append(ls, l) })
		key := labelsString(ls)
		w, ok := want[key]
		if !ok {
			t.Errorf("store has series %s that the source has not", key)
			continue
		}
		got++
		if g := samplesString(s.Samples, s.Histograms); g != w {
			t.Errorf("series %s: store holds\n%.300s\nsource\n%.300s", key, g, w)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Errorf("store has %d of the source's %d series", got, len(want))
	}
}

var testLimits = seriesrules.Limits{MaxLabels: store.DefaultMaxLabels, MaxLabelNameLength: store.DefaultMaxLabelNameLength, MaxLabelValueLength: store.DefaultMaxLabelValueLength}

func labelsString(ls []labels.Label) string { return seriesString(store.SeriesIn{Labels: ls}) }

func samplesString(fs []store.Sample, hs []store.HistogramSample) string {
	var b strings.Builder
	for _, s := range fs {
		fmt.Fprintf(&b, "%d=%x ", s.T, math.Float64bits(s.V))
	}
	for _, h := range hs {
		fmt.Fprintf(&b, "%d=%s ", h.T, h.H.String())
	}
	return b.String()
}

func runCfg(f *fakeSource, tg target, w Writer) Config {
	return Config{Source: f, Writer: w, Reader: tg.st, State: tg.state, Selection: "test",
		Workers: 2, BatchSamples: 1000, Limits: testLimits, Backoff: time.Millisecond, Attempts: 2}
}

func TestRunImportsAndVerifies(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tg target) {
		f := newFakeSource(3, 5, 15*time.Second)
		f.piece = 300 // pieces cut at hours: the batcher sees several per series
		f.negative = true
		cfg := runCfg(f, tg, tg.st)
		cfg.Verify = true
		sum, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Units != 3 || sum.Imported != 3 || sum.Skipped != 0 || sum.Verified != 3 || len(sum.Mismatches) != 0 {
			t.Errorf("summary %+v", sum)
		}
		if sum.Series != 15 || sum.Samples != 3*4*480 || sum.Histograms != 3*480 {
			t.Errorf("series %d samples %d histograms %d, want 15, %d, %d", sum.Series, sum.Samples, sum.Histograms, 3*4*480, 3*480)
		}
		if len(sum.Dropped) != 1 || sum.Dropped[0].Reason != ReasonTimeRange || sum.Dropped[0].Samples != 9 {
			t.Errorf("dropped %+v, want 9 samples before 1970", sum.Dropped)
		}
		// Hours long closed: every sample in chunk cells.
		if hs := tg.st.HistoryStats(); hs != (store.HistoryStats{Chunked: sum.Samples + sum.Histograms}) {
			t.Errorf("store wrote %+v, want all %d samples chunked", hs, sum.Samples+sum.Histograms)
		}
		checkStore(t, tg.st, f)
	})
}

// TestRunCountsSeriesOnce: a source that comes back to a series (an
// OpenTSDB unit yields one piece per series and hour) has each series
// counted once.
func TestRunCountsSeriesOnce(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(2, 5, 15*time.Second)
	f.piece = 240 // an hour a piece: each series comes twice per unit
	f.interleave = true
	sum, err := Run(context.Background(), runCfg(f, tg, tg.st))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Series != 10 || sum.Samples != 2*4*480 || sum.Histograms != 2*480 {
		t.Errorf("series %d samples %d histograms %d, want 10, %d, %d", sum.Series, sum.Samples, sum.Histograms, 2*4*480, 2*480)
	}
	checkStore(t, tg.st, f)
}

// failAfter passes the first n writes to w, then fails every write.
type failAfter struct {
	w     Writer
	n     atomic.Int64
	units sync.Map // unit label values written
}

func (fa *failAfter) WriteHistory(ctx context.Context, b []store.SeriesIn) error {
	if fa.n.Add(-1) < 0 {
		return errors.New("injected storage fault")
	}
	for _, s := range b {
		for _, l := range s.Labels {
			if l.Name == "unit" {
				fa.units.Store(l.Value, true)
			}
		}
	}
	return fa.w.WriteHistory(ctx, b)
}

func TestRunResumesAfterFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tg target) {
		f := newFakeSource(6, 4, 30*time.Second)
		// Units of 4 series x 240 samples in batches of at most 500.
		cfg := runCfg(f, tg, nil)
		cfg.BatchSamples = 500
		first := &failAfter{w: tg.st}
		first.n.Store(5)
		cfg.Writer = first
		cfg.Workers = 1 // two writes a unit: units 0 and 1 done, the first half of 2
		sum, err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "injected storage fault") {
			t.Fatalf("first run: err %v, want the injected fault", err)
		}
		if sum.Imported != 2 || sum.Failed != 1 {
			t.Fatalf("first run imported %d units, failed %d; want 2 and 1", sum.Imported, sum.Failed)
		}
		done := sum.Imported
		cfg.Workers = 2

		second := &failAfter{w: tg.st}
		second.n.Store(math.MaxInt64)
		cfg.Writer = second
		cfg.Verify = true
		sum, err = Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Skipped != done || sum.Imported != 6-done || sum.Verified != 6 {
			t.Errorf("second run: %+v, want %d skipped and %d imported", sum, done, 6-done)
		}
		// Units done are not written again.
		written := 0
		second.units.Range(func(any, any) bool { written++; return true })
		if written != 6-done {
			t.Errorf("second run wrote series of %d units, want %d", written, 6-done)
		}
		checkStore(t, tg.st, f)
	})
}

func TestRunForce(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(2, 3, time.Minute)
	cfg := runCfg(f, tg, tg.st)
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), cfg)
	if err != nil || sum.Skipped != 2 || sum.Imported != 0 {
		t.Fatalf("rerun: %+v %v, want both units skipped", sum, err)
	}
	// Another selection is another import.
	cfg.Selection = "other"
	if sum, err = Run(context.Background(), cfg); err != nil || sum.Imported != 2 {
		t.Fatalf("other selection: %+v %v, want both units imported", sum, err)
	}
	cfg.Selection = "test"
	cfg.Force = true
	if sum, err = Run(context.Background(), cfg); err != nil || sum.Imported != 2 || sum.Skipped != 0 {
		t.Fatalf("--force: %+v %v, want both units imported", sum, err)
	}
	checkStore(t, tg.st, f)
}

// lossy drops the last sample of series 0 of unit u01 and reports success.
type lossy struct{ w Writer }

func (l lossy) WriteHistory(ctx context.Context, b []store.SeriesIn) error {
	out := make([]store.SeriesIn, 0, len(b))
	for _, s := range b {
		if labelsString(s.Labels) == `{__name__="fake_metric", series="0", unit="u01"}` && len(s.Samples) > 0 &&
			s.Samples[len(s.Samples)-1].T == base+4*hourMillis-int64(time.Minute/time.Millisecond) {
			s.Samples = s.Samples[:len(s.Samples)-1]
		}
		out = append(out, s)
	}
	return l.w.WriteHistory(ctx, out)
}

func TestVerifyFindsMismatch(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(3, 3, time.Minute)
	cfg := runCfg(f, tg, lossy{tg.st})
	cfg.Verify = true
	sum, err := Run(context.Background(), cfg)
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err %v, want ErrVerify", err)
	}
	if len(sum.Mismatches) != 1 || sum.Mismatches[0].Unit != "u01" || sum.Mismatches[0].Differ != 1 {
		t.Fatalf("mismatches %+v, want one in u01", sum.Mismatches)
	}
	m := sum.Mismatches[0]
	if m.Source.Samples != m.Store.Samples+1 || !strings.Contains(m.String(), `series="0"`) {
		t.Errorf("mismatch %s", m.String())
	}
	var out bytes.Buffer
	sum.Print(&out)
	if !strings.Contains(out.String(), "1 DIFFER") {
		t.Errorf("summary does not say it:\n%s", out.String())
	}

	// A series in the unit's range that the source lacks is found too,
	// and a verify-only rerun (every unit done) still verifies.
	extra := store.SeriesIn{Labels: []labels.Label{{Name: "__name__", Value: "fake_metric"}, {Name: "series", Value: "9"}},
		Samples: []store.Sample{{T: base + 10, V: 1}}}
	if err := tg.st.Write(context.Background(), []store.SeriesIn{extra}); err != nil {
		t.Fatal(err)
	}
	cfg.Writer = tg.st
	sum, err = Run(context.Background(), cfg)
	if !errors.Is(err, ErrVerify) || sum.Skipped != 3 || len(sum.Mismatches) != 2 {
		t.Fatalf("rerun: %v %+v", err, sum)
	}
	if m := sum.Mismatches[0]; m.Unit != "u00" || !strings.Contains(m.String(), "in the store only") {
		t.Errorf("mismatch of u00: %s", m.String())
	}
}

func TestRunDropsRefusedSeries(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(1, 6, time.Minute)
	f.extra = func(_, s int) []labels.Label {
		switch s {
		case 2: // too many labels for the limits: dropped before batching
			var ls []labels.Label
			for i := range testLimits.MaxLabels {
				ls = append(ls, labels.Label{Name: fmt.Sprintf("x%03d", i), Value: "v"})
			}
			return ls
		case 4: // too long for the store; the importer was told no limit
			return []labels.Label{{Name: "zz", Value: strings.Repeat("v", store.DefaultMaxLabelValueLength+1)}}
		}
		return nil
	}
	cfg := runCfg(f, tg, tg.st)
	cfg.Limits.MaxLabelValueLength = 0
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int64{}
	for _, d := range sum.Dropped {
		reasons[d.Reason] = d.Series
	}
	if len(reasons) != 2 || reasons["too_many_labels"] != 1 || reasons[ReasonRefused] != 1 {
		t.Errorf("dropped %+v", sum.Dropped)
	}
	if sum.Series != 5 {
		t.Errorf("%d series imported, want 5 (the refused one counted as read)", sum.Series)
	}
}

// TestRunDropsRefusedHistogram: a histogram sample the store refuses (its
// count disagrees with its buckets, as only a corrupt block would hold)
// drops its series' piece, counted as refused_by_store with the store's
// reason; the other series of the batch are imported.
func TestRunDropsRefusedHistogram(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(1, 4, time.Minute)
	bad := base + 30*time.Minute.Milliseconds()
	f.badHistogram = func(_ int, t int64) bool { return t == bad }
	sum, err := Run(context.Background(), runCfg(f, tg, tg.st))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Dropped) != 1 {
		t.Fatalf("dropped %+v, want one reason", sum.Dropped)
	}
	d := sum.Dropped[0]
	if d.Reason != ReasonRefused || d.Series != 1 || d.Samples != 120 || !strings.Contains(d.Example, "histogram") {
		t.Errorf("dropped %+v, want the histogram series' 120 samples refused by the store", d)
	}
	// The three float series, 120 samples each, are written.
	if hs := tg.st.HistoryStats(); hs != (store.HistoryStats{Chunked: 3 * 120}) {
		t.Errorf("store wrote %+v, want the float series' %d samples", hs, 3*120)
	}
}

// gate holds every write until two are in flight at once, and records the
// largest batch.
type gate struct {
	w        Writer
	inFlight atomic.Int64
	most     atomic.Int64
	largest  atomic.Int64
	both     chan struct{}
	once     sync.Once
	hours    sync.Map // series-hour -> write number
	calls    atomic.Int64
}

func (g *gate) WriteHistory(ctx context.Context, b []store.SeriesIn) error {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			break
		}
	}
	if n >= 2 {
		g.once.Do(func() { close(g.both) })
	}
	select {
	case <-g.both:
	case <-time.After(time.Minute):
		return errors.New("no second write came while the first was in flight")
	}
	call := g.calls.Add(1)
	size := 0
	for _, s := range b {
		size += len(s.Samples) + len(s.Histograms)
		for _, smp := range s.Samples {
			key := fmt.Sprintf("%s@%d", labelsString(s.Labels), smp.T/hourMillis)
			if prev, loaded := g.hours.LoadOrStore(key, call); loaded && prev.(int64) != call {
				return fmt.Errorf("series-hour %s split between writes %d and %d", key, prev, call)
			}
		}
	}
	for {
		m := g.largest.Load()
		if int64(size) <= m || g.largest.CompareAndSwap(m, int64(size)) {
			break
		}
	}
	return g.w.WriteHistory(ctx, b)
}

func TestRunParallelBoundedBatches(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(4, 10, 15*time.Second)
	f.piece = 100 // pieces smaller than an hour: the batcher joins them
	g := &gate{w: tg.st, both: make(chan struct{})}
	cfg := runCfg(f, tg, g)
	cfg.Workers = 3
	cfg.BatchSamples = 700 // two hours of a series: never split
	cfg.Attempts = 1
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if g.most.Load() < 2 || g.most.Load() > 3 {
		t.Errorf("at most %d writes at once, want 2 or 3 with 3 workers", g.most.Load())
	}
	if g.largest.Load() > 700 {
		t.Errorf("a write of %d samples, more than the batch size", g.largest.Load())
	}
	checkStore(t, tg.st, f)
}

func TestProgressTerminal(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(3, 2, time.Minute)
	var out bytes.Buffer
	cfg := runCfg(f, tg, tg.st)
	cfg.Progress = &out
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.HasPrefix(s, "\rimport: units ") || !strings.HasSuffix(s, "\n") || !strings.Contains(s, "\x1b[K") {
		t.Fatalf("terminal output %q", s)
	}
	last := s[strings.LastIndex(s, "\r"):]
	if !strings.Contains(last, "units 3/3") || !strings.Contains(last, "series 6") || !strings.Contains(last, "samples 720") {
		t.Errorf("last line %q", last)
	}
}

// logWaiter is a slog handler that signals each progress record.
type logWaiter struct {
	slog.Handler
	progress chan struct{}
}

func (l *logWaiter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "import progress" {
		select {
		case l.progress <- struct{}{}:
		default:
		}
	}
	return l.Handler.Handle(ctx, r)
}

// waitLog holds the first write until a periodic progress line was logged.
type waitLog struct {
	w    Writer
	log  *logWaiter
	once sync.Once
}

func (w *waitLog) WriteHistory(ctx context.Context, b []store.SeriesIn) (err error) {
	w.once.Do(func() {
		select {
		case <-w.log.progress:
		case <-time.After(time.Minute):
			err = errors.New("no progress line while the import ran")
		}
	})
	if err != nil {
		return err
	}
	return w.w.WriteHistory(ctx, b)
}

func TestProgressLog(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(2, 2, time.Minute)
	var out bytes.Buffer
	lw := &logWaiter{Handler: slog.NewTextHandler(&out, nil), progress: make(chan struct{}, 1)}
	cfg := runCfg(f, tg, nil)
	cfg.Writer = &waitLog{w: tg.st, log: lw}
	cfg.Logger = slog.New(lw)
	cfg.LogEvery = 10 * time.Millisecond
	cfg.Attempts = 1
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want a line while running and one at the end:\n%s", out.String())
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "units_done=2") || !strings.Contains(last, "samples=480") || !strings.Contains(last, "series=4") {
		t.Errorf("last line %s", last)
	}
	if strings.ContainsAny(out.String(), "\r\x1b") {
		t.Errorf("terminal codes in the log:\n%q", out.String())
	}
}

// droppingSource reports what it left out, as the OpenTSDB source does.
type droppingSource struct{ *fakeSource }

func (droppingSource) Dropped() []Dropped {
	return []Dropped{{Reason: "annotation", Samples: 3, Example: "an annotation"}}
}

func TestSummaryHasSourceDrops(t *testing.T) {
	tg := pebbleTarget(t)
	f := newFakeSource(1, 2, time.Minute)
	f.negative = true
	cfg := runCfg(f, tg, tg.st)
	cfg.Source = droppingSource{f}
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Dropped) != 2 || sum.Dropped[0].Reason != "annotation" || sum.Dropped[1].Reason != ReasonTimeRange {
		t.Errorf("dropped %+v, want the source's and the importer's", sum.Dropped)
	}
	var out bytes.Buffer
	sum.Print(&out)
	if !strings.Contains(out.String(), "dropped (annotation): 0 series whole, 3 samples in all; first: an annotation") {
		t.Errorf("summary:\n%s", out.String())
	}
}
