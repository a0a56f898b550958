package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/table"
)

// stallTable holds a compactor's first conditional write of one kind, its
// chunk puts (CheckAndPutBatch) or, with deletes set, its deletions
// (CheckAndDeleteBatch), as a process that stalls just as it sends it
// would, until released; then it makes the call whatever the compactor's
// context says by then, as bytes already on their way do.
type stallTable struct {
	table.Table
	deletes          bool
	once             sync.Once
	stalled, release chan struct{}
	applied          []bool // the held call's outcome
	err              error
}

func newStallTable(t table.Table, deletes bool) *stallTable {
	return &stallTable{Table: t, deletes: deletes, stalled: make(chan struct{}), release: make(chan struct{})}
}

// hold reports whether this call is the one held, once it is released.
func (t *stallTable) hold() bool {
	held := false
	t.once.Do(func() { held = true })
	if held {
		close(t.stalled)
		<-t.release
	}
	return held
}

func (t *stallTable) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	if t.deletes || !t.hold() {
		return t.Table.CheckAndPutBatch(ctx, puts)
	}
	t.applied, t.err = t.Table.CheckAndPutBatch(context.Background(), puts)
	return t.applied, t.err
}

func (t *stallTable) CheckAndDeleteBatch(ctx context.Context, dels []table.CondDelete) ([]bool, error) {
	if !t.deletes || !t.hold() {
		return t.Table.CheckAndDeleteBatch(ctx, dels)
	}
	t.applied, t.err = t.Table.CheckAndDeleteBatch(context.Background(), dels)
	return t.applied, t.err
}

// fenceCase is the stage of the fencing tests: one series-hour two days
// old, written but for its 101st sample, which comes late.
type fenceCase struct {
	s       *Store
	clock   *testClock
	cfg     CompactorConfig
	first   int64 // the hour's first millisecond
	ls      []labels.Label
	samples []Sample
	late    Sample
}

func newFenceCase(t *testing.T, db table.DB, prefix string, lateV float64) *fenceCase {
	s, clock := clockedStore(t, db, Config{TablePrefix: prefix})
	f := &fenceCase{s: s, clock: clock,
		cfg:   CompactorConfig{Grace: 10 * time.Minute, Lease: 4 * time.Second, Quiet: MarkRefresh + time.Second, BatchRows: 3, Rate: -1, now: clock.now},
		first: (time.Now().Add(-48*time.Hour).UnixMilli() / hour) * hour,
		ls:    lbls("__name__", "fenced", "job", "x"),
	}
	for i := range 240 {
		if i != 100 {
			f.samples = append(f.samples, Sample{T: f.first + int64(i)*15_000, V: float64(i) * 1.5})
		}
	}
	f.late = Sample{T: f.first + 100*15_000, V: lateV}
	f.write(t, f.samples...)
	f.clock.advance(f.cfg.Quiet + time.Second)
	return f
}

func (f *fenceCase) write(t *testing.T, samples ...Sample) {
	t.Helper()
	if err := f.s.Write(context.Background(), []SeriesIn{{Labels: f.ls, Samples: samples}}); err != nil {
		t.Fatal(err)
	}
}

func (f *fenceCase) read(t *testing.T) string {
	return collect(t, f.s.Select(context.Background(), Query{Start: f.first, End: f.first + hour,
		Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "fenced")}}))
}

// checkAll checks that the hour reads every sample, the late one too.
func (f *fenceCase) checkAll(t *testing.T, when string) {
	t.Helper()
	want := collected([]SeriesIn{{Labels: f.ls, Samples: append(slices.Clone(f.samples[:100]), append([]Sample{f.late}, f.samples[100:]...)...)}})
	if got := f.read(t); got != want {
		t.Fatalf("%s the hour reads:\n%.1000s\nwant:\n%.1000s", when, got, want)
	}
}

// passResult is how a compactor's pass ended.
type passResult struct {
	st  PassStats
	err error
	log strings.Builder
}

// startStalled starts a pass of compactor A on st, which holds one of its
// calls, and waits until it is held; xorOnly is A's float-chunks setting.
func (f *fenceCase) startStalled(t *testing.T, st *stallTable, xorOnly bool) <-chan *passResult {
	res := &passResult{}
	cfg := f.cfg
	cfg.Logger = slog.New(slog.NewTextHandler(&res.log, nil))
	a, err := newCompactor(f.s.layout, st, f.s.todo.t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.plan.xorOnly = xorOnly
	done := make(chan *passResult, 1)
	go func() { res.st, res.err = a.Pass(context.Background()); done <- res }()
	<-st.stalled
	return done
}

// checkRefused releases A's held call and checks that it was refused, and
// that A's pass failed one bucket-hour for it, deleting nothing.
func checkRefused(t *testing.T, st *stallTable, done <-chan *passResult) {
	t.Helper()
	close(st.release)
	res := <-done
	if st.err != nil || len(st.applied) != 1 || st.applied[0] {
		t.Fatalf("A's stale call: applied %v, %v; want refused", st.applied, st.err)
	}
	if res.err != nil || res.st.Errors != 1 || res.st.RawCellsDeleted != 0 || res.st.MarksDeleted != 0 || !strings.Contains(res.log.String(), errFenced.Error()) {
		t.Errorf("A's pass: %+v, %v, logged %q; want one failed bucket-hour, for errFenced, and nothing deleted", res.st, res.err, res.log.String())
	}
}

// TestCompactStaleHolderFenced: compactor A reads an hour row and stalls
// just as it writes the row's chunk; a late sample lands inside the
// chunk's time range; A's lease runs out and compactor B folds the row,
// late sample and all, deleting its raw cells; then A's write arrives. It
// would put a chunk of the same qualifier and timestamp without the late
// sample over B's, and the sample would be gone: it must be refused, and
// A's pass must fail without deleting anything.
func TestCompactStaleHolderFenced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		f := newFenceCase(t, db, prefix, 12345.25)
		st := newStallTable(f.s.data, false)
		aDone := f.startStalled(t, st, false)
		f.write(t, f.late)
		f.clock.advance(f.cfg.Quiet + f.cfg.Lease + time.Second) // A's lease is over, the late mark quiet
		b, err := newCompactor(f.s.layout, f.s.data, f.s.todo.t, f.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if stB, err := b.Pass(ctx); err != nil || stB.SeriesHours != 1 || stB.RawCellsDeleted != 240 {
			t.Fatalf("B's pass: %+v, %v; want the row folded, its 240 raw cells deleted", stB, err)
		}
		f.checkAll(t, "after B's fold")
		checkRefused(t, st, aDone)
		f.checkAll(t, "after A's stale write")
		// Nothing is left to do: B folded it all, A deleted nothing.
		f.clock.advance(f.cfg.Quiet + f.cfg.Lease)
		if stC, err := b.Pass(ctx); err != nil || stC.SeriesHours != 0 || stC.Pending != 0 {
			t.Fatalf("a pass after both: %+v, %v", stC, err)
		}
		f.checkAll(t, "after a last pass")
	})
}

// rowEncodings lists the encodings of the chunk cells of every data row,
// in order.
func rowEncodings(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	sc := s.data.Scan(context.Background(), table.ScanOptions{})
	defer sc.Close()
	for sc.Next() {
		for _, c := range sc.At().Cells {
			if cellcodec.IsChunkQualifier(c.Qualifier) && !cellcodec.IsFenceQualifier(c.Qualifier) {
				out = append(out, fmt.Sprintf("%#x", c.Qualifier[1]))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompactStaleDeletesFenced: an hour folded into a dense cell; a late
// sample inside it; compactor A, set to write XOR chunks only (an operator
// switching --storage.float-chunks across a fleet), folds the row into a
// packed XOR cell of the same time range and stalls just as it deletes the
// dense cell and the late raw cell; A's lease runs out, and compactor B
// (dense cells allowed) folds the row again into a dense cell, of the same
// qualifier and timestamp as the one A is deleting, and deletes A's XOR
// cell and the raw cell. A's held deletion of that version would now
// delete B's dense cell, and with it every sample of the series-hour: it
// must be refused, and A's pass must fail.
func TestCompactStaleDeletesFenced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		f := newFenceCase(t, db, prefix, 150)
		b, err := newCompactor(f.s.layout, f.s.data, f.s.todo.t, f.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := b.Pass(ctx); err != nil || st.SeriesHours != 1 {
			t.Fatalf("first fold: %+v, %v", st, err)
		}
		dense, packed := fmt.Sprintf("%#x", byte(cellcodec.EncDenseFloat)), fmt.Sprintf("%#x", byte(cellcodec.EncPackedXOR))
		if got := rowEncodings(t, f.s); !slices.Equal(got, []string{dense}) {
			t.Fatalf("after the first fold the row holds chunk cells %v, want one dense cell", got)
		}
		f.write(t, f.late)
		f.clock.advance(f.cfg.Quiet + time.Second)

		st := newStallTable(f.s.data, true)
		aDone := f.startStalled(t, st, true)
		if got := rowEncodings(t, f.s); !slices.Equal(got, []string{packed, dense}) {
			t.Fatalf("with A's deletions held the row holds chunk cells %v, want A's packed XOR cell beside the dense one", got)
		}
		f.clock.advance(f.cfg.Quiet + f.cfg.Lease + time.Second) // A's lease is over
		if stB, err := b.Pass(ctx); err != nil || stB.SeriesHours != 1 || stB.RawCellsDeleted != 1 {
			t.Fatalf("B's pass: %+v, %v; want the row folded, its late raw cell deleted", stB, err)
		}
		if got := rowEncodings(t, f.s); !slices.Equal(got, []string{dense}) {
			t.Fatalf("after B's fold the row holds chunk cells %v, want one dense cell", got)
		}
		f.checkAll(t, "after B's fold")
		checkRefused(t, st, aDone)
		f.checkAll(t, "after A's stale deletion")
	})
}

// lostAnswerTable applies every conditional put batch twice and answers
// with the second attempt's outcome, as the client does when the first
// attempt's answer is lost and it retries: the retry finds its condition
// changed by the first attempt, and reports the puts refused.
type lostAnswerTable struct {
	table.Table
	retried int
}

func (t *lostAnswerTable) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	if _, err := t.Table.CheckAndPutBatch(ctx, puts); err != nil {
		return nil, err
	}
	t.retried++
	return t.Table.CheckAndPutBatch(ctx, puts)
}

// TestCompactOwnRetryNotFenced: a compactor whose chunk put was applied by
// an attempt whose answer was lost, and refused on the retry, finds its own
// cells in place and goes on as written, deleting the raw cells it folded
// (not a failed bucket-hour logged as a takeover). And where the row holds
// other cells than its put, a refusal is still a fence: the compactor of
// TestCompactStaleHolderFenced.
func TestCompactOwnRetryNotFenced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		f := newFenceCase(t, db, prefix, 0)
		lt := &lostAnswerTable{Table: f.s.data}
		var log strings.Builder
		cfg := f.cfg
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
		a, err := newCompactor(f.s.layout, lt, f.s.todo.t, cfg)
		if err != nil {
			t.Fatal(err)
		}
		st, err := a.Pass(context.Background())
		if err != nil || st.Errors != 0 || st.SeriesHours != 1 || st.RawCellsDeleted != len(f.samples) || lt.retried == 0 {
			t.Fatalf("pass: %+v, %v, %d retried batches, logged %q; want the row folded and its %d raw cells deleted",
				st, err, lt.retried, log.String(), len(f.samples))
		}
		want := collected([]SeriesIn{{Labels: f.ls, Samples: f.samples}})
		if got := f.read(t); got != want {
			t.Fatalf("after the pass the hour reads:\n%.1000s\nwant:\n%.1000s", got, want)
		}
		if got := rowEncodings(t, f.s); len(got) != 1 {
			t.Fatalf("the row holds chunk cells %v, want one", got)
		}
	})
}
