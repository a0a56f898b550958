package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
)

// stallTable holds a compactor's first write of chunk cells, as a process
// that stalls just as it sends them would, until released; then it makes
// the write whatever the compactor's context says by then, as bytes already
// on their way do.
type stallTable struct {
	table.Table
	once             sync.Once
	stalled, release chan struct{}
	written          []bool // the held write's outcome
	err              error
}

func (t *stallTable) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	held := false
	t.once.Do(func() { held = true })
	if !held {
		return t.Table.CheckAndPutBatch(ctx, puts)
	}
	close(t.stalled)
	<-t.release
	t.written, t.err = t.Table.CheckAndPutBatch(context.Background(), puts)
	return t.written, t.err
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
		s, clock := clockedStore(t, db, Config{TablePrefix: prefix})
		cfg := CompactorConfig{Grace: 10 * time.Minute, Lease: 4 * time.Second, Quiet: MarkRefresh + time.Second, BatchRows: 3, Rate: -1, now: clock.now}
		first := (time.Now().Add(-48*time.Hour).UnixMilli() / hour) * hour
		ls := lbls("__name__", "fenced", "job", "x")
		var samples []Sample
		for i := range 240 {
			if i != 100 {
				samples = append(samples, Sample{T: first + int64(i)*15_000, V: float64(i) * 1.5})
			}
		}
		if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: samples}}); err != nil {
			t.Fatal(err)
		}
		clock.advance(cfg.Quiet + time.Second)

		st := &stallTable{Table: s.data, stalled: make(chan struct{}), release: make(chan struct{})}
		var logA strings.Builder
		cfgA := cfg
		cfgA.Logger = slog.New(slog.NewTextHandler(&logA, nil))
		a, err := newCompactor(s.layout, st, s.todo.t, cfgA)
		if err != nil {
			t.Fatal(err)
		}
		type passResult struct {
			st  PassStats
			err error
		}
		aDone := make(chan passResult, 1)
		go func() { st, err := a.Pass(ctx); aDone <- passResult{st, err} }()
		<-st.stalled
		late := Sample{T: first + 100*15_000, V: 12345.25}
		if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: []Sample{late}}}); err != nil {
			t.Fatal(err)
		}
		clock.advance(cfg.Quiet + cfg.Lease + time.Second) // A's lease is over, the late mark quiet
		b, err := newCompactor(s.layout, s.data, s.todo.t, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if stB, err := b.Pass(ctx); err != nil || stB.SeriesHours != 1 || stB.RawCellsDeleted != 240 {
			t.Fatalf("B's pass: %+v, %v; want the row folded, its 240 raw cells deleted", stB, err)
		}
		read := func() string {
			return collect(t, s.Select(ctx, Query{Start: first, End: first + hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "fenced")}}))
		}
		want := read()
		lateStr := fmt.Sprintf("%d:%s", late.T, pointString(late.V))
		if !strings.Contains(want, lateStr) {
			t.Fatalf("after B's fold the late sample is missing:\n%s", want)
		}

		close(st.release)
		resA := <-aDone
		if st.err != nil || len(st.written) != 1 || st.written[0] {
			t.Fatalf("A's stale write: written %v, %v; want refused", st.written, st.err)
		}
		if resA.err != nil || resA.st.Errors != 1 || resA.st.RawCellsDeleted != 0 || resA.st.MarksDeleted != 0 || !strings.Contains(logA.String(), errFenced.Error()) {
			t.Errorf("A's pass: %+v, %v, logged %q; want one failed bucket-hour, for errFenced, and nothing deleted", resA.st, resA.err, logA.String())
		}
		if got := read(); got != want {
			t.Fatalf("after A's stale write:\n%s\nwant what B left:\n%s", got, want)
		}
		// Nothing is left to do: B folded it all, A deleted nothing.
		clock.advance(cfg.Quiet + cfg.Lease)
		if stC, err := b.Pass(ctx); err != nil || stC.SeriesHours != 0 || stC.Pending != 0 {
			t.Fatalf("a pass after both: %+v, %v", stC, err)
		}
		if got := read(); got != want {
			t.Fatalf("after a last pass:\n%s\nwant:\n%s", got, want)
		}
	})
}
