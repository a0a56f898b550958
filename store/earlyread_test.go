package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// TestEarlyReadMissesNoFold stages the race the early read must survive
// (earlyread.go): a query reads an hour's FamilyData rows before the
// compactor writes the hour's chunks, and reads the hour's marks after the
// compactor deleted them. With the compactor waiting its mark delay, the
// marks come back too late for the early read to be kept, and the query
// reads the hour again: every sample is there. The control, a compactor
// that deletes the marks at once and a reader that trusts any early read,
// shows that the staging does produce the race: the hour is missing.
func TestEarlyReadMissesNoFold(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		for _, tc := range []struct {
			name          string
			delay, window time.Duration
			wantAll       bool
		}{
			{"compactor waits", 300 * time.Millisecond, 150 * time.Millisecond, true},
			{"control: no wait, any early read kept", 0, time.Hour, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := fmt.Sprintf("%s%t-", prefix, tc.wantAll)
				prefetches := []int{-1, 0} // keys only, then rows kept
				if !tc.wantAll {
					prefetches = prefetches[1:]
				}
				for _, prefetch := range prefetches {
					t.Run(fmt.Sprintf("prefetch=%d", prefetch), func(t *testing.T) {
						testEarlyReadRace(t, db, fmt.Sprintf("%sp%d", p, prefetch+1), prefetch, tc.delay, tc.window, tc.wantAll)
					})
				}
			})
		}
	})
}

func testEarlyReadRace(t *testing.T, db table.DB, prefix string, prefetch int, delay, window time.Duration, wantAll bool) {
	ctx := context.Background()
	s, clock := clockedStore(t, db, Config{TablePrefix: prefix, ReadPrefetchBytes: prefetch, Layout: rowkey.Layout{SaltBuckets: 4}})
	s.read.markWindow = window
	h0 := time.Now().Add(-6*time.Hour).UnixMilli() / hour * hour
	var in []SeriesIn
	for i := range 8 {
		var samples []Sample
		for j := range 10 {
			samples = append(samples, Sample{T: h0 + int64(j)*60000, V: float64(i*100 + j)})
		}
		in = append(in, SeriesIn{Labels: lbls("__name__", "m", "i", fmt.Sprint(i)), Samples: samples})
	}
	if err := s.Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	clock.advance(30 * time.Minute) // the marks are quiet
	c := clockedCompactor(t, s, clock)
	c.markDelay = delay

	// The fold runs after every task's early read and before the marks are
	// read. A task whose early read came after the fold would read the
	// chunks, and the control would not see the race.
	q := Query{Start: h0, End: h0 + hour - 1, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}}
	tasks := earlyTasks(t, s, q)
	early := make(chan struct{}, tasks)
	s.read.afterEarlyRead = func() {
		select {
		case early <- struct{}{}:
		default: // more early reads than counted: the fold waits for none of them
		}
	}
	var passErr error
	s.read.beforeMarks = func() {
		for i := range tasks {
			select {
			case <-early:
			case <-time.After(10 * time.Second):
				passErr = fmt.Errorf("%d of %d early reads", i, tasks)
				return
			}
		}
		_, passErr = c.Pass(ctx)
	}
	retries := s.read.earlyRereads.Load()
	got := collect(t, s.Select(ctx, q))
	s.read.afterEarlyRead, s.read.beforeMarks = nil, nil
	if passErr != nil {
		t.Fatal(passErr)
	}
	assertCompacted(t, s)
	n := strings.Count(got, "\n")
	if !wantAll {
		if n != 0 {
			t.Fatalf("control: the staged race did not happen, %d series read:\n%s", n, got)
		}
		return
	}
	if n != len(in) {
		t.Fatalf("read %d series, want %d:\n%s", n, len(in), got)
	}
	for _, want := range []string{pt(h0, 0), pt(h0+9*60000, 709)} {
		if !strings.Contains(got, want) {
			t.Errorf("read lacks %s:\n%s", want, got)
		}
	}
	if r := s.read.earlyRereads.Load() - retries; r == 0 {
		t.Error("the early read was kept although the marks came back after the fold")
	}
	// The same query again, nothing racing: every sample, from the chunks.
	if again := collect(t, s.Select(ctx, q)); again != got {
		t.Errorf("read again:\n%s\nfirst read:\n%s", again, got)
	}
}

// earlyTasks is how many phase-one tasks of q (one group) read early: those
// with FamilyData ranges, cut as findSeries cuts them (Pebble: one per core,
// up to one per salt bucket; HBase: one per region). Each must fit in
// ScanConcurrency, or one would wait for a slot that only the marks free.
func earlyTasks(t *testing.T, s *Store, q Query) int {
	t.Helper()
	ctx := context.Background()
	p, err := s.planQuery(ctx, q.Matchers)
	if err != nil || p == nil || len(p.groups) != 1 {
		t.Fatalf("plan: %v, %+v: want one group", err, p)
	}
	startHour, endHour, _ := rowkey.HourRange(q.Start, q.End)
	tasks, err := s.scanTasks(ctx, p, p.groups[0], startHour, endHour)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		if len(task.data) > 0 {
			n++
		}
	}
	if n == 0 || n > s.cfg.ScanConcurrency {
		t.Fatalf("%d tasks read early, want 1 to %d", n, s.cfg.ScanConcurrency)
	}
	return n
}

// TestCompactorDeletesMarksAfterDelay checks the compactor's side of the
// early read: the marks of a fold are deleted no sooner than markDelay after
// its last chunk write was acknowledged, and at the end of the same pass.
func TestCompactorDeletesMarksAfterDelay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s, clock := clockedStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 2}})
		h0 := time.Now().Add(-6*time.Hour).UnixMilli() / hour * hour
		for h := range 3 {
			if err := s.Write(ctx, []SeriesIn{
				{Labels: lbls("__name__", "m", "i", "a"), Samples: []Sample{{T: h0 + int64(h)*hour, V: 1}}},
				{Labels: lbls("__name__", "m", "i", "b"), Samples: []Sample{{T: h0 + int64(h)*hour, V: 2}}},
			}); err != nil {
				t.Fatal(err)
			}
		}
		clock.advance(30 * time.Minute)
		var (
			mu                sync.Mutex
			lastPut, firstDel time.Time
		)
		data := &timedTable{Table: s.data, put: func(at time.Time, _ []table.Cell) {
			mu.Lock()
			defer mu.Unlock()
			lastPut = at
		}, del: func(time.Time, []table.Cell) {}}
		todo := &timedTable{Table: s.todo.t, put: func(time.Time, []table.Cell) {}, del: func(at time.Time, cells []table.Cell) {
			mu.Lock()
			defer mu.Unlock()
			if firstDel.IsZero() && slices.ContainsFunc(cells, func(c table.Cell) bool { return c.Qualifier[0] == markPrefix }) {
				firstDel = at
			}
		}}
		c, err := newCompactor(s.layout, data, todo, CompactorConfig{Rate: -1, now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		c.markDelay = 200 * time.Millisecond
		st, err := c.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.MarksDeleted == 0 || st.SeriesHours != 6 {
			t.Fatalf("pass: %+v, want 6 series-hours and their marks deleted", st)
		}
		assertCompacted(t, s)
		if firstDel.IsZero() || lastPut.IsZero() {
			t.Fatalf("no chunk write (%v) or no mark delete (%v) seen", lastPut, firstDel)
		}
		if gap := firstDel.Sub(lastPut); gap < c.markDelay {
			t.Errorf("first mark deleted %v after the last chunk write was acknowledged, want at least %v", gap, c.markDelay)
		}
	})
}

// timedTable reports when a Put was acknowledged and when a DeleteVersions
// was sent, and of which cells.
type timedTable struct {
	table.Table
	put, del func(time.Time, []table.Cell)
}

func (t *timedTable) Put(ctx context.Context, cells []table.Cell) error {
	err := t.Table.Put(ctx, cells)
	t.put(time.Now(), cells)
	return err
}

func (t *timedTable) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	written, err := t.Table.CheckAndPutBatch(ctx, puts)
	for _, p := range puts {
		t.put(time.Now(), p.Put)
	}
	return written, err
}

func (t *timedTable) DeleteVersions(ctx context.Context, cells []table.Cell) error {
	t.del(time.Now(), cells)
	return t.Table.DeleteVersions(ctx, cells)
}

func (t *timedTable) CheckAndDeleteBatch(ctx context.Context, dels []table.CondDelete) ([]bool, error) {
	for _, d := range dels {
		t.del(time.Now(), d.Delete)
	}
	return t.Table.CheckAndDeleteBatch(ctx, dels)
}

// TestEarlyReadAcrossRecentHours reads a range with marked hours on both
// sides of the early read's age limit (late samples in a compacted old
// hour, raw cells in recent ones) and compacted hours: every sample comes
// back exactly once, with keys only and with rows kept.
func TestEarlyReadAcrossRecentHours(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		for _, prefetch := range []int{-1, 0} {
			t.Run(fmt.Sprintf("prefetch=%d", prefetch), func(t *testing.T) {
				testEarlyReadAcross(t, db, fmt.Sprintf("%sp%d", prefix, prefetch+1), prefetch)
			})
		}
	})
}

func testEarlyReadAcross(t *testing.T, db table.DB, prefix string, prefetch int) {
	ctx := context.Background()
	s := openStore(t, db, Config{TablePrefix: prefix, ReadPrefetchBytes: prefetch, Layout: rowkey.Layout{SaltBuckets: 4}})
	s.read.alwaysEarly = true
	clock := &testClock{}
	s.todo.now = clock.now
	now := time.Now().UnixMilli()
	old := now/hour*hour - 6*hour
	recent := (now - 90*60*1000) / hour * hour // younger than earlyReadMinAge
	want := 0
	write := func(hours []int64, offset int64) {
		t.Helper()
		var in []SeriesIn
		for i := range 3 {
			var samples []Sample
			for _, h := range hours {
				for j := range int64(4) {
					samples = append(samples, Sample{T: h + offset + j*60000, V: float64(i*1000) + float64(j)})
				}
			}
			in = append(in, SeriesIn{Labels: lbls("__name__", "m", "i", fmt.Sprint(i)), Samples: samples})
			want += len(samples)
		}
		if err := s.Write(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	write([]int64{old, old + hour, old + 2*hour}, 0)
	clock.advance(30 * time.Minute)
	c := clockedCompactor(t, s, clock)
	if _, err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	assertCompacted(t, s)
	// Late samples in a compacted old hour, raw cells in a recent one.
	write([]int64{old + hour, recent}, 30*1000)
	q := Query{Start: old, End: now, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}}
	for view, got := range map[string]string{
		"samples": collect(t, s.Select(ctx, q)),
		"chunks":  collectChunksString(t, s.SelectChunks(ctx, q), false),
	} {
		if n := strings.Count(got, ":"); n != want {
			t.Errorf("%s: read %d samples, want %d:\n%s", view, n, want, got)
		}
		if n := strings.Count(got, "\n"); n != 3 {
			t.Errorf("%s: read %d series, want 3:\n%s", view, n, got)
		}
	}
}

// TestEarlyReadOffWhileOldHoursMarked: a query whose marks cover an older
// hour (the compactor lagging) read that hour twice, early and again of
// every family; the next queries go in order, until one finds the older
// hours unmarked, after which reads are early again. Every read is whole.
func TestEarlyReadOffWhileOldHoursMarked(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s, clock := clockedStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 2}})
		h0 := time.Now().Add(-6*time.Hour).UnixMilli() / hour * hour
		var in []SeriesIn
		for i := range 4 {
			in = append(in, SeriesIn{Labels: lbls("__name__", "m", "i", fmt.Sprint(i)), Samples: []Sample{{T: h0, V: 1}, {T: h0 + hour, V: 2}}})
		}
		if err := s.Write(ctx, in); err != nil {
			t.Fatal(err)
		}
		// The marks are held back until a task's early read is done, or for
		// a while when the query goes in order (and reads none early).
		var early atomic.Int64
		signal := make(chan struct{}, 16)
		s.read.afterEarlyRead = func() { early.Add(1); signal <- struct{}{} }
		s.read.beforeMarks = func() {
			select {
			case <-signal:
			case <-time.After(200 * time.Millisecond):
			}
		}
		q := Query{Start: h0, End: h0 + 2*hour - 1, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}}
		read := func(wantEarly int64) {
			t.Helper()
			before := early.Load()
			if got := collect(t, s.Select(ctx, q)); strings.Count(got, ":") != 2*len(in) {
				t.Fatalf("read %d samples, want %d:\n%s", strings.Count(got, ":"), 2*len(in), got)
			}
			if got := early.Load() - before; (got > 0) != (wantEarly > 0) {
				t.Errorf("%d early reads, want %d", got, wantEarly)
			}
			for len(signal) > 0 {
				<-signal
			}
		}
		read(1) // marked raw hours, not yet known: early, then read again
		if !s.read.oldMarked.Load() {
			t.Fatal("the marks of the older hours were not noted")
		}
		read(0) // in order
		clock.advance(30 * time.Minute)
		if _, err := clockedCompactor(t, s, clock).Pass(ctx); err != nil {
			t.Fatal(err)
		}
		assertCompacted(t, s)
		read(0) // in order still: this one finds no mark
		read(1) // early again
		s.read.afterEarlyRead, s.read.beforeMarks = nil, nil
	})
}
