package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// TestDeleteExpiredRemovesOldHours is issue 12's finding on the embedded
// store's retention: DeleteExpired must remove, physically, the hours wholly
// before the horizon and keep the rest. Expired cells are hidden from reads
// at once whatever happens, so the test looks through a longer retention
// afterwards: a cell that was only hidden comes back, a deleted one does
// not. The first reopening shows that the test can tell the two apart.
func TestDeleteExpiredRemovesOldHours(t *testing.T) {
	ctx := context.Background()
	db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	old := []int64{now.Add(-6 * time.Hour).UnixMilli(), now.Add(-5 * time.Hour).UnixMilli()}
	fresh := now.Add(-30 * time.Minute).UnixMilli()
	open := func(retention time.Duration) *Store {
		s, err := Open(ctx, db, Config{TablePrefix: "ret_", Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(3 * time.Hour)
	var batch []SeriesIn
	for i, name := range []string{"m_a", "m_b", "m_c"} {
		batch = append(batch, SeriesIn{
			Labels:  []labels.Label{{Name: "__name__", Value: name}, {Name: "job", Value: "j"}},
			Samples: []Sample{{T: old[0], V: float64(i)}, {T: old[1], V: float64(i)}, {T: fresh, V: float64(i)}},
		})
	}
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	count := func(s *Store) (oldN, freshN int) {
		ss := s.Select(ctx, Query{Start: 0, End: now.UnixMilli(), Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "j")}})
		defer ss.Close()
		for ss.Next() {
			for _, smp := range ss.At().Samples {
				if smp.T == fresh {
					freshN++
				} else {
					oldN++
				}
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		return oldN, freshN
	}
	if o, f := count(s); o != 0 || f != 3 {
		t.Fatalf("with 3h retention: %d old and %d fresh samples read, want 0 and 3", o, f)
	}
	if o, _ := count(open(0)); o != 6 {
		t.Fatalf("forever, before any deletion: %d old samples read, want the 6 hidden ones back", o)
	}
	s = open(3 * time.Hour)
	if err := s.DeleteExpired(ctx, now); err != nil {
		t.Fatal(err)
	}
	if o, f := count(open(0)); o != 0 || f != 3 {
		t.Errorf("forever, after DeleteExpired: %d old and %d fresh samples read, want 0 and 3", o, f)
	}
}

// TestDeleteExpiredUnsupportedWithoutRangeDeletes: a table without range
// deletions (HBase) leaves retention to its TTL.
func TestDeleteExpiredUnsupportedWithoutRangeDeletes(t *testing.T) {
	s := &Store{cfg: Config{Retention: time.Hour}, data: discardTable{}}
	if err := s.DeleteExpired(context.Background(), time.Now()); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("DeleteExpired on a table without DeleteRows: %v, want ErrUnsupported", err)
	}
}
