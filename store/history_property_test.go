package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec/histgen"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/tablefault"
)

// historyProp is the state of one run of the history property test: the
// store, its clock and the reference series (refSeries, the last write of
// each timestamp).
type historyProp struct {
	t      *testing.T
	rng    *rand.Rand
	s      *Store
	clock  *testClock
	window [2]int64 // six hours, the last one open
	series []*refSeries
	grid   map[*refSeries][2]int64 // a series' scrape offset and interval
	// noWrite are series that only WriteHistory writes, so that it finds
	// rows empty, or holding only its own chunks, more often.
	noWrite map[*refSeries]bool
	// keepStored makes entries keep the stored value of every timestamp
	// stored (for calls that run while a compactor deletes raw cells).
	keepStored bool
}

// TestWriteHistoryProperty writes random series (floats with staleness
// markers, NaN payloads and -0; integer and float histograms with every
// edge histgen draws) partly with Write (raw cells, some rows compacted at
// once, some by compactor passes, some not) and partly with WriteHistory
// (whole hours, ranges cut inside hours, a series split across two calls
// or given twice in one call, calls repeated, ranges overlapping earlier
// ones with the same or other values, the open hour), and compares Select
// and SelectChunks of random queries with the reference after every round,
// and after a final compactor pass.
func TestWriteHistoryProperty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		testWriteHistoryProperty(t, db, prefix, backendRounds(t, 10, 4))
	})
}

// backendRounds is the rounds of a random test on the backend t runs on:
// HBase calls are dearer.
func backendRounds(t *testing.T, pebble, hbase int) int {
	if strings.HasSuffix(t.Name(), "/hbase") {
		return hbase
	}
	return pebble
}

// historyRun starts a random run of a history test: its seed logged, and
// WriteHistory's rows per step drawn for the run.
func historyRun(t *testing.T, stream uint64) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, stream))
	n := historyGroupRows
	t.Cleanup(func() { historyGroupRows = n })
	historyGroupRows = []int{2, 50, 4096}[rng.IntN(3)]
	t.Logf("rows per step %d", historyGroupRows)
	return rng
}

// historyHours is the span of the property test's window.
const historyHours = 6

func testWriteHistoryProperty(t *testing.T, db table.DB, prefix string, rounds int) {
	rng := historyRun(t, 3)
	prefetch := []int{-1, 3000, 0}[rng.IntN(3)]
	t.Logf("prefetch budget %d", prefetch)
	s := openStore(t, db, Config{TablePrefix: prefix, ReadBatchSeries: 3, ReadBatchRows: 5, ReadPrefetchBytes: prefetch,
		Layout: rowkey.Layout{SaltBuckets: 4}})
	// Half the runs read early even when the marks are in (earlyread.go).
	s.read.alwaysEarly = rng.IntN(2) == 0
	t.Logf("always early: %v", s.read.alwaysEarly)
	p := newHistoryProp(t, rng, s)
	for round := range rounds {
		for _, step := range rng.Perm(4) {
			switch step {
			case 0:
				p.write()
			case 1:
				p.history()
			case 2:
				if rng.IntN(2) == 0 {
					compactRandomHours(t, rng, s, p.series)
				}
			case 3:
				if rng.IntN(2) == 0 {
					p.pass()
				}
			}
		}
		p.check(10)
		t.Logf("round %d: %+v", round, s.HistoryStats())
	}
	// Every hour closed, and compacted.
	p.clock.advance(2 * time.Hour)
	p.pass()
	p.check(40)
}

// newHistoryProp makes the series of a run on s, its window and clock.
func newHistoryProp(t *testing.T, rng *rand.Rand, s *Store) *historyProp {
	base := time.Now().Add(-72*time.Hour).UnixMilli() / hour * hour
	p := &historyProp{t: t, rng: rng, s: s, window: [2]int64{base, base + historyHours*hour},
		grid: map[*refSeries][2]int64{}, noWrite: map[*refSeries]bool{}}
	p.clock = historyClock(s, time.UnixMilli(p.window[1]-hour+20*time.Minute.Milliseconds()))
	seen := map[string]bool{}
	for range 30 {
		ls := randSeries(rng)
		key := withoutEmpty(ls).String()
		if seen[key] {
			continue
		}
		seen[key] = true
		r := &refSeries{in: ls, lset: withoutEmpty(ls), samples: map[int64]refPoint{}, decimal: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			r.gen = histgen.New(rng, true)
		}
		step := []int64{15_000, 60_000, 10_000}[rng.IntN(3)]
		p.grid[r] = [2]int64{rng.Int64N(step), step}
		p.noWrite[r] = rng.IntN(2) == 0
		p.series = append(p.series, r)
	}
	return p
}

// write writes random samples with Write, as testProperty does.
func (p *historyProp) write() {
	rng := p.rng
	var batch []SeriesIn
	for _, r := range p.series {
		if rng.IntN(3) > 0 || p.noWrite[r] {
			continue
		}
		in := SeriesIn{Labels: r.in}
		seen := map[int64]bool{}
		for range rng.IntN(40) {
			ts := p.window[0] + rng.Int64N(p.window[1]-p.window[0])
			if seen[ts] {
				continue
			}
			seen[ts] = true
			if r.gen != nil && rng.IntN(2) == 0 {
				g := r.gen.Next(ts)
				in.Histograms = append(in.Histograms, HistogramSample{T: ts, H: g.H, FH: g.FH})
				continue
			}
			in.Samples = append(in.Samples, Sample{T: ts, V: math.Float64frombits(randValue(rng, r.decimal))})
		}
		if len(in.Samples)+len(in.Histograms) > 0 {
			batch = append(batch, in)
		}
	}
	if err := p.s.Write(context.Background(), batch); err != nil {
		p.t.Fatal(err)
	}
	for _, in := range batch {
		p.apply(in)
	}
}

// apply records an entry written, by Write or WriteHistory, in the
// reference: at one timestamp a histogram wins over a float, and the later
// sample of a slice wins.
func (p *historyProp) apply(in SeriesIn) {
	r := p.find(in.Labels)
	for _, smp := range in.Samples {
		r.samples[smp.T] = floatPoint(smp)
	}
	for _, hs := range in.Histograms {
		r.samples[hs.T] = histPoint(hs)
	}
}

func (p *historyProp) find(ls []labels.Label) *refSeries {
	for _, r := range p.series {
		if labels.Equal(labels.New(r.in...), labels.New(ls...)) {
			return r
		}
	}
	p.t.Fatalf("unknown series %v", ls)
	return nil
}

// history makes one or more WriteHistory calls (historyCalls).
func (p *historyProp) history() {
	for _, c := range p.historyCalls() {
		if err := p.s.WriteHistory(context.Background(), c); err != nil {
			p.t.Fatal(err)
		}
		for _, in := range c {
			p.apply(in)
		}
	}
}

// historyCalls draws the batches of WriteHistory calls: entries of random
// series over whole hours or ranges, some split across two calls or given
// twice in one, the first call sometimes repeated after the second.
func (p *historyProp) historyCalls() [][]SeriesIn {
	rng := p.rng
	var calls [2][]SeriesIn
	for _, r := range p.series {
		if rng.IntN(2) == 0 {
			continue
		}
		in := p.entry(r)
		if len(in.Samples)+len(in.Histograms) == 0 {
			continue
		}
		switch rng.IntN(6) {
		case 0, 1: // split, often inside an hour
			cut := p.window[0] + rng.Int64N(p.window[1]-p.window[0])
			a, b := splitAt(in, cut)
			for i, part := range []SeriesIn{a, b} {
				if len(part.Samples)+len(part.Histograms) > 0 { // Write's rules refuse empty series
					calls[i] = append(calls[i], part)
				}
			}
		case 2: // twice in one call, overlapping, the later one other values
			calls[0] = append(calls[0], in)
			if again := p.entry(r); len(again.Samples)+len(again.Histograms) > 0 {
				calls[0] = append(calls[0], again)
			}
		default:
			calls[0] = append(calls[0], in)
		}
	}
	out := [][]SeriesIn{calls[0], calls[1]}
	if rng.IntN(4) == 0 {
		out = append(out, calls[0]) // repeated after the second
	}
	return out
}

// splitAt cuts an entry at time cut.
func splitAt(in SeriesIn, cut int64) (a, b SeriesIn) {
	a, b = SeriesIn{Labels: in.Labels}, SeriesIn{Labels: in.Labels}
	for _, smp := range in.Samples {
		if smp.T < cut {
			a.Samples = append(a.Samples, smp)
		} else {
			b.Samples = append(b.Samples, smp)
		}
	}
	for _, hs := range in.Histograms {
		if hs.T < cut {
			a.Histograms = append(a.Histograms, hs)
		} else {
			b.Histograms = append(b.Histograms, hs)
		}
	}
	return a, b
}

// entry draws a history entry of r on its scrape grid: whole hours or a
// range, with gaps, runs of floats and histograms, values already stored
// (unchanged) or new, and now and then two samples at one timestamp or one
// off the grid.
func (p *historyProp) entry(r *refSeries) SeriesIn {
	rng := p.rng
	var from, to int64
	if rng.IntN(2) == 0 {
		h := rng.Int64N(historyHours)
		from, to = p.window[0]+h*hour, p.window[0]+(h+1+rng.Int64N(min(3, historyHours-h)))*hour
	} else {
		from = p.window[0] + rng.Int64N(p.window[1]-p.window[0])
		to = min(p.window[1], from+rng.Int64N(2*hour))
	}
	off, step := p.grid[r][0], p.grid[r][1]
	in := SeriesIn{Labels: r.in}
	hist := false
	for ts := p.window[0] + off + (from-p.window[0]+step-1)/step*step; ts < to; ts += step {
		if rng.IntN(10) == 0 {
			continue // a gap
		}
		if r.gen != nil && rng.IntN(15) == 0 {
			hist = !hist
		}
		times := []int64{ts}
		switch rng.IntN(30) {
		case 0:
			times = append(times, ts) // twice: the later wins
		case 1:
			if ts+1 < to {
				times = append(times, ts+1) // off the grid
			}
		}
		for _, t := range times {
			old, stored := r.samples[t]
			keep := stored && (p.keepStored || rng.IntN(2) == 0)
			switch {
			case keep && old.f != nil:
				in.Samples = append(in.Samples, *old.f)
			case keep && old.h != nil:
				in.Histograms = append(in.Histograms, *old.h)
			case hist:
				g := r.gen.Next(t)
				in.Histograms = append(in.Histograms, HistogramSample{T: t, H: g.H, FH: g.FH})
			default:
				in.Samples = append(in.Samples, Sample{T: t, V: math.Float64frombits(randValue(rng, r.decimal))})
			}
		}
		if _, stored := r.samples[ts]; r.gen != nil && len(times) == 1 && !(stored && p.keepStored) && rng.IntN(40) == 0 {
			// A float and a histogram at one time.
			g := r.gen.Next(ts)
			in.Samples = append(in.Samples, Sample{T: ts, V: 1})
			in.Histograms = append(in.Histograms, HistogramSample{T: ts, H: g.H, FH: g.FH})
		}
	}
	return in
}

// pass runs a compactor pass once the marks are quiet; now and then with
// WriteHistory calls between its storage calls. Those keep every value
// stored: a value changed between the compactor's read of a raw cell and
// its delete may be lost (DESIGN.md section 5, "Known limit"), for
// WriteHistory as for Write.
func (p *historyProp) pass() {
	cfg := CompactorConfig{Quiet: MarkRefresh + time.Second, Rate: -1, BatchRows: 7, now: p.clock.now}
	f := &faults{}
	if p.rng.IntN(2) == 0 {
		f.hook = func(int) {
			if p.rng.IntN(8) == 0 {
				p.keepStored = true
				p.history()
				p.keepStored = false
			}
		}
	}
	c, err := newCompactor(p.s.layout, faultTable{p.s.data, f}, faultTable{p.s.todo.t, f}, cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	p.clock.advance(cfg.Quiet + time.Second)
	if _, err := c.Pass(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}

// check compares random queries, as samples and as chunks, with the
// reference.
func (p *historyProp) check(queries int) {
	t, rng := p.t, p.rng
	t.Helper()
	ctx := context.Background()
	for i := range queries {
		var ms []*labels.Matcher
		for range 1 + rng.IntN(2) {
			ms = append(ms, randMatcher(t, rng))
		}
		start := p.window[0] - hour/2 + rng.Int64N(p.window[1]-p.window[0]+hour)
		end := start + rng.Int64N(3*hour)
		if i == 0 {
			start, end = p.window[0], p.window[1]
			ms = []*labels.Matcher{mustMatcher(t, labels.MatchRegexp, "__name__", ".+")}
		}
		q := Query{Start: start, End: end, Matchers: ms}
		if got, want := maskHints(collectChunksString(t, p.s.SelectChunks(ctx, q), false)), reference(p.series, q, true); got != want {
			t.Fatalf("chunks of query %v [%d, %d]: %s", ms, start, end, lineDiff(got, want))
		}
		if got, want := collect(t, p.s.Select(ctx, q)), reference(p.series, q, false); got != want {
			t.Fatalf("query %v [%d, %d]: %s", ms, start, end, lineDiff(got, want))
		}
	}
}

// lineDiff describes where two results differ: the first series line that
// does, and in it the first sample.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl == wl {
			continue
		}
		gf, wf := strings.Fields(gl), strings.Fields(wl)
		for j := range max(len(gf), len(wf)) {
			if j >= len(gf) || j >= len(wf) || gf[j] != wf[j] {
				at := func(f []string) string {
					if j < len(f) {
						return f[j]
					}
					return "(end)"
				}
				return fmt.Sprintf("line %d (%d samples, want %d) differs at field %d:\ngot  %s\nwant %s\ngot line:  %.300s\nwant line: %.300s",
					i, len(gf), len(wf), j, at(gf), at(wf), gl, wl)
			}
		}
	}
	return "same"
}

// killTable lets a store's calls through until the kill-th Get or Put of
// the data table: that one fails, a Put after landing its first partial
// cells, and so does every later call, as if the process had died.
type killTable struct {
	table.Table
	kill, partial int
	calls         int
}

func (t *killTable) enter() (dead bool) {
	t.calls++
	return t.calls >= t.kill
}

func (t *killTable) Get(ctx context.Context, family string, keys [][]byte) ([]table.Row, error) {
	if t.enter() {
		return nil, errKilled
	}
	return t.Table.Get(ctx, family, keys)
}

func (t *killTable) Put(ctx context.Context, cells []table.Cell) error {
	if !t.enter() {
		return t.Table.Put(ctx, cells)
	}
	if t.calls == t.kill && t.partial > 0 {
		if err := t.Table.Put(ctx, cells[:min(t.partial, len(cells))]); err != nil {
			return err
		}
	}
	return errKilled
}

// TestWriteHistoryKilled: WriteHistory calls killed at a random get or put
// (some of the put's cells landed), or failing at random storage calls
// (applied or not, the reply lost), then run again in full, read as if
// each had run once; as does a call repeated after success.
func TestWriteHistoryKilled(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		testWriteHistoryKilled(t, db, prefix, backendRounds(t, 12, 4))
	})
}

func testWriteHistoryKilled(t *testing.T, db table.DB, prefix string, rounds int) {
	rng := historyRun(t, 4)
	seed := rng.Uint64()
	cfg := Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 4}}
	p := newHistoryProp(t, rng, openStore(t, db, cfg))
	fdb := tablefault.Wrap(db, tablefault.Config{Seed: seed})
	faulty := openStore(t, fdb, cfg)
	faulty.now, faulty.todo.now = p.clock.now, p.clock.now
	ctx := context.Background()
	data := p.s.data
	killed := 0
	for round := range rounds {
		p.write()
		for _, call := range p.historyCalls() {
			switch rng.IntN(3) {
			case 0:
				kt := &killTable{Table: data, kill: 1 + rng.IntN(3), partial: rng.IntN(200)}
				p.s.data = kt
				err := p.s.WriteHistory(ctx, call)
				p.s.data = data
				if err == nil && kt.calls >= kt.kill {
					t.Fatalf("killed at call %d of %d: no error", kt.kill, kt.calls)
				}
				if err != nil && !errors.Is(err, errKilled) {
					t.Fatal(err)
				}
				if err != nil {
					killed++
				}
			case 1:
				fdb.SetRate(0.1)
				for i := 0; ; i++ {
					err := faulty.WriteHistory(ctx, call)
					if err == nil {
						break
					}
					if !errors.Is(err, tablefault.ErrInjected) || i == 1000 {
						t.Fatal(err)
					}
				}
				fdb.SetRate(0)
			}
			if err := p.s.WriteHistory(ctx, call); err != nil { // the rerun, or a repeat
				t.Fatal(err)
			}
			for _, in := range call {
				p.apply(in)
			}
			p.check(3)
		}
		t.Logf("round %d: %+v; calls killed %d, faults injected %d", round, p.s.HistoryStats(), killed, fdb.Injected())
	}
	p.clock.advance(2 * time.Hour)
	p.pass()
	p.check(20)
}
