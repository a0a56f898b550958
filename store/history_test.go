package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/cellcodec/histgen"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// historyClock puts a store's WriteHistory and marks on a test clock set
// at now.
func historyClock(s *Store, now time.Time) *testClock {
	c := &testClock{}
	c.advance(time.Until(now))
	s.now = c.now
	s.todo.now = c.now
	return c
}

// rowCells reads one hour row's cells.
func rowCells(t testing.TB, s *Store, key []byte) []table.Cell {
	t.Helper()
	rows, err := s.data.Get(context.Background(), "", [][]byte{key})
	if err != nil {
		t.Fatal(err)
	}
	// The fence is the compactor's, a new random value each fold: no part
	// of what the row holds.
	return slices.DeleteFunc(rows[0].Cells, func(c table.Cell) bool { return c.Family == FamilyFence })
}

// cellsString formats cells without their row, to compare two rows.
func cellsString(cells []table.Cell) string {
	var b strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&b, "%s:%x@%d=%x\n", c.Family, c.Qualifier, c.Timestamp, c.Value)
	}
	return b.String()
}

// marksOf returns the compaction marks of a metric, as "hour/bucket".
func marksOf(t testing.TB, s *Store, metric string) []string {
	t.Helper()
	uid, ok := s.uids.Cached(labels2uid.Metric, metric)
	if !ok {
		t.Fatalf("metric %s has no UID", metric)
	}
	rows, err := scanPage(context.Background(), s.todo.t, table.ScanOptions{Family: familyCompact}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		hour, salt, _ := parseTodoKey(r.Key)
		for _, c := range r.Cells {
			if kind, m, ok := parseMark(c.Qualifier, s.layout.MetricWidth); ok && kind == markPrefix && m == uid {
				out = append(out, fmt.Sprintf("%d/%d", hour, salt))
			}
		}
	}
	return out
}

// scrapes draws n samples 15 s apart from start: a counter with staleness
// markers, NaN payloads and -0 among them.
func scrapes(rng *rand.Rand, start int64, n int) []Sample {
	out := make([]Sample, n)
	v := 0.0
	for i := range out {
		v += float64(rng.IntN(10))
		out[i] = Sample{T: start + int64(i)*15_000 + int64(rng.IntN(200)), V: v}
		if rng.IntN(20) == 0 {
			out[i].V = math.Float64frombits(propFloats[rng.IntN(len(propFloats))])
		}
	}
	return out
}

// TestWriteHistoryAsCompactor: closed hours written by WriteHistory are
// byte for byte the chunk cells that Write and a compaction make of the
// same samples, carry no compaction mark, and read back exactly; the open
// hour goes as raw cells with a mark.
func TestWriteHistoryAsCompactor(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 4}})
		base := time.Now().Add(-72*time.Hour).UnixMilli() / hour * hour
		historyClock(s, time.UnixMilli(base+3*hour+20*time.Minute.Milliseconds()))
		rng := rand.New(rand.NewPCG(1, 2))
		floats := scrapes(rng, base, 4*240) // the last hour is open
		gen := histgen.New(rng, true)
		var hists []HistogramSample
		for i := range 3 * 240 {
			g := gen.Next(base + int64(i)*15_000)
			hists = append(hists, HistogramSample{T: g.T, H: g.H, FH: g.FH})
		}
		hist := []SeriesIn{
			{Labels: lbls("__name__", "imported", "job", "f"), Samples: floats},
			{Labels: lbls("__name__", "imported", "job", "h"), Histograms: hists},
		}
		live := []SeriesIn{
			{Labels: lbls("__name__", "live", "job", "f"), Samples: floats},
			{Labels: lbls("__name__", "live", "job", "h"), Histograms: hists},
		}
		if err := s.WriteHistory(ctx, hist); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, live); err != nil {
			t.Fatal(err)
		}
		for i := range hist {
			for h := base - hour; h < base+3*hour; h += hour {
				got := rowCells(t, s, seriesRowKey(t, s, hist[i].Labels, h))
				liveKey := seriesRowKey(t, s, live[i].Labels, h)
				compactRowNow(t, s, liveKey, h)
				want := rowCells(t, s, liveKey)
				if len(want) == 0 && len(got) == 0 {
					continue
				}
				for _, c := range got {
					if !cellcodec.IsChunkQualifier(c.Qualifier) && len(c.Value) == cellcodec.RawValueLen {
						t.Errorf("%v hour %d: raw float cell %x in a closed hour", hist[i].Labels, h, c.Qualifier)
					}
				}
				if g, w := cellsString(got), cellsString(want); g != w {
					t.Errorf("%v hour %d: cells\n%s\nwant, as compacted\n%s", hist[i].Labels, h, g, w)
				}
			}
		}
		open := base + 3*hour
		openCells := rowCells(t, s, seriesRowKey(t, s, hist[0].Labels, open))
		if len(openCells) != 240 || cellcodec.IsChunkQualifier(openCells[0].Qualifier) {
			t.Errorf("open hour: %d cells, want 240 raw cells", len(openCells))
		}
		marks := marksOf(t, s, "imported")
		if len(marks) != 1 || !strings.HasPrefix(marks[0], fmt.Sprintf("%d/", open/1000)) {
			t.Errorf("marks of the imported metric: %v, want one, of the open hour %d", marks, open/1000)
		}
		q := Query{Start: base - 2*hour, End: base + 5*hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "imported")}}
		if got, want := collect(t, s.Select(ctx, q)), collected(hist); got != want {
			t.Errorf("read back:\n%s\nwant\n%s", got, want)
		}
		st := s.HistoryStats()
		if st.Chunked+st.Raw != int64(len(floats)+len(hists)) || st.Raw < 240 || st.Unchanged != 0 || st.Expired != 0 {
			t.Errorf("stats %+v", st)
		}
		// Repeated: nothing is written again.
		if err := s.WriteHistory(ctx, hist); err != nil {
			t.Fatal(err)
		}
		st2 := s.HistoryStats()
		if st2.Chunked != st.Chunked || st2.Unchanged != st.Unchanged+st.Chunked+(st.Raw-240) {
			t.Errorf("repeated: stats %+v after %+v", st2, st)
		}
	})
}

// TestWriteHistoryInput: what WriteHistory refuses, what it drops, and
// which sample wins at one timestamp.
func TestWriteHistoryInput(t *testing.T) {
	ctx := context.Background()
	db, _ := openPebble(t)
	s := openStore(t, db, Config{Retention: 30 * 24 * time.Hour})
	now := time.Now()
	historyClock(s, now)
	base := now.Add(-48*time.Hour).UnixMilli() / hour * hour
	ok := SeriesIn{Labels: lbls("__name__", "m", "job", "ok"), Samples: []Sample{{T: base, V: 1}}}
	for name, bad := range map[string]SeriesIn{
		"unsorted floats": {Labels: lbls("__name__", "m"), Samples: []Sample{{T: base + 2, V: 1}, {T: base + 1, V: 2}}},
		"unsorted histograms": {Labels: lbls("__name__", "m"), Histograms: []HistogramSample{
			{T: base + 2, H: histgen.New(rand.New(rand.NewPCG(1, 1)), false).Next(0).H}, {T: base + 1, H: histgen.New(rand.New(rand.NewPCG(1, 1)), false).Next(0).H}}},
		"no name":      {Labels: lbls("job", "x"), Samples: []Sample{{T: base, V: 1}}},
		"out of range": {Labels: lbls("__name__", "m"), Samples: []Sample{{T: -1, V: 1}}},
	} {
		err := s.WriteHistory(ctx, []SeriesIn{ok, bad})
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	q := Query{Start: 0, End: math.MaxInt64 / 2, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "m")}}
	if got := collect(t, s.Select(ctx, q)); got != "" {
		t.Fatalf("refused calls wrote:\n%s", got)
	}
	h := histgen.New(rand.New(rand.NewPCG(1, 1)), false).Next(base + 7)
	expired := now.Add(-31 * 24 * time.Hour).UnixMilli()
	err := s.WriteHistory(ctx, []SeriesIn{{
		Labels: lbls("__name__", "m", "job", "dup"),
		Samples: []Sample{{T: expired, V: 9}, {T: expired + 1, V: 9}, {T: base + 5, V: 1}, {T: base + 5, V: 2},
			{T: base + 7, V: 3}, {T: base + 8, V: 4}},
		Histograms: []HistogramSample{{T: base + 7, H: h.H, FH: h.FH}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("{__name__=\"m\", job=\"dup\"} %d:%x %s %d:%x\n", base+5, math.Float64bits(2),
		histString(HistogramSample{T: base + 7, H: h.H, FH: h.FH}), base+8, math.Float64bits(4))
	if got := collect(t, s.Select(ctx, q)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if st := s.HistoryStats(); st.Expired != 2 || st.Chunked != 3 {
		t.Errorf("stats %+v, want 2 expired and 3 chunked", st)
	}
}

// TestWriteHistoryBeside: history written into rows that hold raw cells,
// chunks, or chunks of an earlier call; the last write wins, nothing is
// doubled or lost, and only rows that needed it are marked.
func TestWriteHistoryBeside(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		base := time.Now().Add(-72*time.Hour).UnixMilli() / hour * hour
		historyClock(s, time.UnixMilli(base+10*hour))
		ls := lbls("__name__", "beside", "job", "x")
		at := func(i int) int64 { return base + int64(i)*15_000 }
		series := func(vals map[int]float64, from, to int) SeriesIn {
			in := SeriesIn{Labels: ls}
			for i := from; i < to; i++ {
				in.Samples = append(in.Samples, Sample{T: at(i), V: vals[i]})
			}
			return in
		}
		vals := map[int]float64{}
		for i := range 240 {
			vals[i] = float64(i)
		}
		// Hour 0: first half by remote write (raw cells), then the whole
		// hour by history, a few values differing.
		if err := s.Write(ctx, []SeriesIn{series(vals, 0, 120)}); err != nil {
			t.Fatal(err)
		}
		vals[3], vals[200] = -3, -200
		if err := s.WriteHistory(ctx, []SeriesIn{series(vals, 0, 240)}); err != nil {
			t.Fatal(err)
		}
		// The hour split across two calls: adjacent chunks, no mark.
		for i := 240; i < 480; i++ {
			vals[i] = float64(i)
		}
		if err := s.WriteHistory(ctx, []SeriesIn{series(vals, 240, 300)}); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteHistory(ctx, []SeriesIn{series(vals, 300, 480)}); err != nil {
			t.Fatal(err)
		}
		cells := rowCells(t, s, seriesRowKey(t, s, ls, base+hour))
		for _, c := range cells {
			if !cellcodec.IsChunkQualifier(c.Qualifier) {
				t.Errorf("split hour: raw cell %x", c.Qualifier)
			}
		}
		// Overlapping the split hour with other values: raw cells.
		vals[250], vals[470] = 0.5, math.Copysign(0, -1)
		if err := s.WriteHistory(ctx, []SeriesIn{series(vals, 245, 475)}); err != nil {
			t.Fatal(err)
		}
		want := func() string {
			var b strings.Builder
			b.WriteString(withoutEmpty(ls).String())
			for i := range 480 {
				fmt.Fprintf(&b, " %d:%x", at(i), math.Float64bits(vals[i]))
			}
			return b.String() + "\n"
		}()
		q := Query{Start: base - hour, End: base + 3*hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "beside")}}
		check := func(what string) {
			t.Helper()
			if got := collect(t, s.Select(ctx, q)); got != want {
				t.Fatalf("%s: got\n%s\nwant\n%s", what, got, want)
			}
			if got := collectChunksString(t, s.SelectChunks(ctx, q), false); got != want {
				t.Fatalf("%s: chunks\n%s\nwant\n%s", what, got, want)
			}
		}
		check("written")
		if m := marksOf(t, s, "beside"); len(m) != 2 {
			t.Errorf("marks %v, want hour 0 (remote write) and hour 1 (changed samples)", m)
		}
		st := s.HistoryStats()
		// Hour 0: 1 changed and 120 new beside raw cells, 119 unchanged;
		// hour 1: 240 in chunks, then 2 changed, 228 unchanged.
		if st.Raw != 121+2 || st.Unchanged != 119+228 || st.Chunked != 240 {
			t.Errorf("stats %+v", st)
		}
		c, err := s.NewCompactor(CompactorConfig{Quiet: MarkRefresh + time.Second, Rate: -1, now: func() time.Time { return s.now().Add(time.Hour) }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		check("compacted")
		for h := base; h < base+2*hour; h += hour {
			for _, c := range rowCells(t, s, seriesRowKey(t, s, ls, h)) {
				if enc := chunkenc.Encoding(c.Qualifier[1]); !cellcodec.IsChunkQualifier(c.Qualifier) || (enc != chunkenc.EncXOR && enc != cellcodec.EncPackedXOR && enc != cellcodec.EncDenseFloat) {
					t.Errorf("hour %d after a pass: cell %x", h, c.Qualifier)
				}
			}
		}
		if m := marksOf(t, s, "beside"); len(m) != 0 {
			t.Errorf("marks %v after a pass", m)
		}
	})
}

// TestWriteHistoryUIDExhaustion: as with Write, the series that need a UID
// the space no longer has are refused and the rest is written, the series
// after a refused one under its own labels.
func TestWriteHistoryUIDExhaustion(t *testing.T) {
	ctx := context.Background()
	db, _ := openPebble(t)
	s := openStore(t, db, Config{Layout: rowkey.Layout{MetricWidth: 3, TagKWidth: 3, TagVWidth: 1, SaltBuckets: 2}})
	base := time.Now().Add(-48*time.Hour).UnixMilli() / hour * hour
	var fill []SeriesIn
	for i := range 254 {
		fill = append(fill, SeriesIn{Labels: lbls("__name__", "up", "pod", fmt.Sprint("p", i)), Samples: []Sample{{T: base, V: 1}}})
	}
	if err := s.WriteHistory(ctx, fill); err != nil {
		t.Fatal(err)
	}
	batch := []SeriesIn{
		{Labels: lbls("__name__", "up", "pod", "new-a"), Samples: []Sample{{T: base, V: 3}}},
		{Labels: lbls("__name__", "up", "pod", "new-b"), Samples: []Sample{{T: base, V: 4}, {T: base + 1, V: 5}}},
		{Labels: lbls("__name__", "up", "pod", "p1"), Samples: []Sample{{T: base + 1, V: 2}}},
		{Labels: lbls("__name__", "up", "pod", "new-c"), Samples: []Sample{{T: base, V: 6}}},
	}
	err := s.WriteHistory(ctx, batch)
	var refused *RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, ErrInvalidInput) || refused.Series != 2 {
		t.Fatalf("err = %v, want a RefusedError of 2 series", err)
	}
	got := collect(t, s.Select(ctx, Query{Start: base, End: base + 1, Matchers: []*labels.Matcher{
		mustMatcher(t, labels.MatchRegexp, "pod", "p1|new-.*"),
	}}))
	// One UID was left: exactly one of the new series got it (which one
	// depends on the order the batch's new strings are assigned in), and
	// reads back with its own samples, before p1 ("new-" sorts first).
	p1 := fmt.Sprintf("{__name__=\"up\", pod=\"p1\"} %d:%x %d:%x\n", base, math.Float64bits(1), base+1, math.Float64bits(2))
	var wants []string
	for _, in := range []SeriesIn{batch[0], batch[1], batch[3]} {
		var b strings.Builder
		fmt.Fprintf(&b, "{__name__=\"up\", pod=%q}", in.Labels[1].Value)
		for _, smp := range in.Samples {
			fmt.Fprintf(&b, " %d:%x", smp.T, math.Float64bits(smp.V))
		}
		wants = append(wants, b.String()+"\n"+p1)
	}
	if !slices.Contains(wants, got) {
		t.Errorf("read back:\n%s\nwant p1 and exactly one new series with its samples, one of:\n%s", got, strings.Join(wants, "\n"))
	}
}
