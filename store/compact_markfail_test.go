package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// failDeleteTable fails the first CheckAndDeleteBatch, as a timeout or a
// lost lease would, without deleting anything.
type failDeleteTable struct {
	table.Table
	failed bool
}

func (t *failDeleteTable) CheckAndDeleteBatch(ctx context.Context, dels []table.CondDelete) ([]bool, error) {
	if !t.failed {
		t.failed = true
		return nil, errors.New("injected: deletion failed")
	}
	return t.Table.CheckAndDeleteBatch(ctx, dels)
}

// TestCompactMarksKeptAfterFailedDeletes: a bucket-hour of two metrics.
// Metric a is folded, its deletions wait in the queue; metric b's first
// batch fills the queue past maxPendingDeletes and the flush fails. The
// bucket-hour fails, and metric a's marks must stay with b's: the
// deletions of a's raw cells went with the failed flush. (They were once
// deleted at the end of the pass: FamilyRaw kept a's raw cells with no
// mark, for good, the compactor never coming back and `check` reporting
// them unmarked.)
func TestCompactMarksKeptAfterFailedDeletes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s, clock := clockedStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 1}})
		first := (time.Now().Add(-48*time.Hour).UnixMilli() / hour) * hour
		for _, name := range []string{"metric_a", "metric_b"} {
			var batch []SeriesIn
			for i := range 60 {
				var smp []Sample
				for j := range 240 {
					smp = append(smp, Sample{T: first + int64(j)*15_000, V: float64(j)})
				}
				batch = append(batch, SeriesIn{Labels: lbls("__name__", name, "i", fmt.Sprint(i)), Samples: smp})
			}
			if err := s.Write(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		clock.advance(DefaultCompactQuiet + time.Minute)
		ft := &failDeleteTable{Table: s.data}
		c, err := newCompactor(s.layout, ft, s.todo.t, CompactorConfig{Rate: -1, now: clock.now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Pass(ctx)
		t.Logf("pass: %+v, %v", st, err)
		if !ft.failed {
			t.Fatal("the flush did not run")
		}
		rawRows, unmarked, err := checkMarks(ctx, db, prefix, s.layout, false, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		// Reads still find every sample: metric a's chunks were written.
		got := collect(t, s.Select(ctx, Query{Start: first, End: first + hour,
			Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "metric_a")}}))
		t.Logf("metric_a reads %d series lines, %d bytes", strings.Count(got, "\n"), len(got))
		if len(unmarked) > 0 {
			t.Fatalf("after a pass whose deletions failed, %d raw rows and bucket-hours with raw cells but no mark: %v (the pass deleted %d marks)", rawRows, unmarked, st.MarksDeleted)
		}
	})
}
