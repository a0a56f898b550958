package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// TestReadsTakeRawFamilyWhereMarked checks that reads take FamilyRaw
// exactly for the marked hours: a series with a compacted hour and a
// marked hour of late raw cells reads whole (phase one's two scans, phase
// two's split multi-get); once the mark is gone (as the compactor removes
// it after folding), FamilyRaw is not read at all, which is the point; a
// raw cell in FamilyData (kept, or written by an earlier version) is always
// read.
func TestReadsTakeRawFamilyWhereMarked(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		for _, prefetch := range []int{-1, 0} {
			t.Run(fmt.Sprintf("prefetch=%d", prefetch), func(t *testing.T) {
				testRawFamilyReads(t, db, fmt.Sprintf("%sp%d", prefix, prefetch+1), prefetch)
			})
		}
	})
}

func testRawFamilyReads(t *testing.T, db table.DB, prefix string, prefetch int) {
	ctx := context.Background()
	s, clock := clockedStore(t, db, Config{TablePrefix: prefix, ReadBatchRows: 3, ReadPrefetchBytes: prefetch, Layout: rowkey.Layout{SaltBuckets: 4}})
	h0 := (time.Now().Add(-6*time.Hour).UnixMilli())/hour*hour + 1000
	series := func(name string) []labels.Label { return lbls("__name__", "m", "s", name) }
	hourSamples := func(start int64, v float64) []Sample {
		var out []Sample
		for i := range 10 {
			out = append(out, Sample{T: start + int64(i)*60000, V: v + float64(i)})
		}
		return out
	}
	write := func(name string, start int64, v float64) {
		t.Helper()
		if err := s.Write(ctx, []SeriesIn{{Labels: series(name), Samples: hourSamples(start, v)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Hours h0 and h0+1h of series a and b, compacted.
	for _, name := range []string{"a", "b"} {
		write(name, h0, 0)
		write(name, h0+hour, 100)
	}
	clock.advance(30 * time.Minute)
	c := clockedCompactor(t, s, clock)
	if _, err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	assertCompacted(t, s)
	// Late samples for hour h0+1h of series a (raw cells and a mark), and
	// a new series c there: one series reads a chunk-only hour and a
	// marked hour.
	late := h0 + hour + 30*1000
	if err := s.Write(ctx, []SeriesIn{
		{Labels: series("a"), Samples: []Sample{{T: late, V: -1}}},
		{Labels: series("c"), Samples: []Sample{{T: late, V: -2}}},
	}); err != nil {
		t.Fatal(err)
	}
	q := Query{Start: h0, End: h0 + 2*hour, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}}
	got := collect(t, s.Select(ctx, q))
	for _, want := range []string{pt(late, -1), pt(late, -2), pt(h0+hour+9*60000, 109), pt(h0+9*60000, 9)} {
		if !strings.Contains(got, want) {
			t.Errorf("read lacks %s:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 3 {
		t.Errorf("read %d series, want 3:\n%s", n, got)
	}
	// Without the mark, FamilyRaw is not read: the late samples and
	// series c are gone from reads (the compactor deletes a mark only after
	// folding its cells).
	marks, err := scanPage(ctx, s.todo.t, table.ScanOptions{Family: familyCompact}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var del []table.Cell
	for _, r := range marks {
		del = append(del, r.Cells...)
	}
	if len(del) == 0 {
		t.Fatal("no mark for the late samples")
	}
	if err := s.todo.t.DeleteVersions(ctx, del); err != nil {
		t.Fatal(err)
	}
	// Marks of another metric in the same hour (every bucket) are not
	// the query's.
	var others []SeriesIn
	for i := range 16 {
		others = append(others, SeriesIn{Labels: lbls("__name__", "other", "i", fmt.Sprint(i)), Samples: []Sample{{T: late, V: 1}}})
	}
	if err := s.Write(ctx, others); err != nil {
		t.Fatal(err)
	}
	got = collect(t, s.Select(ctx, q))
	if strings.Contains(got, `s="c"`) || strings.Contains(got, pt(late, -1)) {
		t.Errorf("unmarked FamilyRaw cells were read:\n%s", got)
	}
	if n := strings.Count(got, "\n"); n != 2 {
		t.Errorf("read %d series without the mark, want 2:\n%s", n, got)
	}
	// A raw cell in FamilyData needs no mark.
	rows, err := scanPage(ctx, s.data, table.ScanOptions{Family: FamilyRaw}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var put []table.Cell
	for _, r := range rows {
		for _, c := range r.Cells {
			c.Family = FamilyData
			put = append(put, c)
		}
	}
	if err := s.data.Put(ctx, put); err != nil {
		t.Fatal(err)
	}
	got = collect(t, s.Select(ctx, q))
	if !strings.Contains(got, pt(late, -1)) || !strings.Contains(got, `s="c"`) {
		t.Errorf("raw cells in FamilyData were not read:\n%s", got)
	}
}

// pt is a sample as collect writes it.
func pt(t int64, v float64) string { return fmt.Sprintf(" %d:%x", t, math.Float64bits(v)) }

// compactCounter is a table that counts Compact calls.
type compactCounter struct {
	table.Table
	n int
}

func (c *compactCounter) Compact(context.Context) error { c.n++; return nil }

// familyCompactCounter is a table that counts CompactFamily calls.
type familyCompactCounter struct {
	table.Table
	families []string
}

func (c *familyCompactCounter) CompactFamily(_ context.Context, family string) error {
	c.families = append(c.families, family)
	return nil
}

// TestCompactorSweepsRawFamily checks that a pass which folded raw cells
// has FamilyRaw compacted (reads of hours marked again by late samples step
// over the deleted cells until then), at most once per RawSweepEvery, never
// after a pass that deleted none, and never when switched off.
func TestCompactorSweepsRawFamily(t *testing.T) {
	ctx := context.Background()
	for _, every := range []time.Duration{DefaultRawSweepEvery, -1} {
		db, prefix := openPebble(t)
		s, clock := clockedStore(t, db, Config{TablePrefix: prefix})
		start := time.Now().Add(-5*time.Hour).UnixMilli()/hour*hour + 1000
		write := func(t0 int64) {
			t.Helper()
			if err := s.Write(ctx, []SeriesIn{{Labels: lbls("__name__", "m", "a", "b"), Samples: []Sample{{T: t0, V: 1}, {T: t0 + 1000, V: 2}}}}); err != nil {
				t.Fatal(err)
			}
		}
		write(start)
		clock.advance(30 * time.Minute)
		data := &familyCompactCounter{Table: s.data}
		c, err := newCompactor(s.layout, data, s.todo.t, CompactorConfig{Rate: -1, now: clock.now, RawSweepEvery: every})
		if err != nil {
			t.Fatal(err)
		}
		pass := func(wantDeleted bool, wantSweeps int) {
			t.Helper()
			st, err := c.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if (st.RawCellsDeleted > 0) != wantDeleted {
				t.Fatalf("pass deleted %d raw cells, want some: %v", st.RawCellsDeleted, wantDeleted)
			}
			if every < 0 {
				wantSweeps = 0
			}
			if len(data.families) != wantSweeps || slices.ContainsFunc(data.families, func(f string) bool { return f != FamilyRaw }) {
				t.Fatalf("RawSweepEvery %v: families compacted %v, want %s %d times", every, data.families, FamilyRaw, wantSweeps)
			}
		}
		pass(true, 1)  // the first fold sweeps at once
		pass(false, 1) // nothing deleted
		// A late sample folded within the interval waits for it.
		write(start + hour)
		clock.advance(30 * time.Minute)
		pass(true, 1)
		clock.advance(DefaultRawSweepEvery)
		pass(false, 2) // the deletions of the last pass, swept now
		pass(false, 2)
	}
}

// TestCompactorTidiesCompactionTable checks that a pass which deleted marks
// and left no closed hour pending has the compaction table rewritten (reads
// scan its marks), that a later pass which deleted none does not, and that
// a compactor's first pass tidies even when it deleted nothing (an earlier
// process may have stopped before tidying what it deleted).
func TestCompactorTidiesCompactionTable(t *testing.T) {
	ctx := context.Background()
	db, prefix := openPebble(t)
	s, clock := clockedStore(t, db, Config{TablePrefix: prefix})
	start := time.Now().Add(-3*time.Hour).UnixMilli()/hour*hour + 1000
	if err := s.Write(ctx, []SeriesIn{{Labels: lbls("__name__", "m", "a", "b"), Samples: []Sample{{T: start, V: 1}}}}); err != nil {
		t.Fatal(err)
	}
	clock.advance(30 * time.Minute)
	todo := &compactCounter{Table: s.todo.t}
	c, err := newCompactor(s.layout, s.data, todo, CompactorConfig{Rate: -1, now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	passes := func(c *Compactor, wants ...int) {
		t.Helper()
		for i, want := range wants {
			st, err := c.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if todo.n != want {
				t.Errorf("pass %d (%d marks deleted): %d tidyings in all, want %d", i, st.MarksDeleted, todo.n, want)
			}
		}
	}
	passes(c, 1, 1)
	restarted, err := newCompactor(s.layout, s.data, todo, CompactorConfig{Rate: -1, now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	passes(restarted, 2, 2)
}
