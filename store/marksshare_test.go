package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// TestMarksShared checks that queries asking for marks while a read of
// them is under way share the next read, never the one under way, and that
// each gets the marks of its own metrics and hours only; that a waiting
// query whose context ends gets its error without ending the read of the
// others; and that a query alone reads at once.
func TestMarksShared(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 4}})
		h0 := time.Now().Add(-6*time.Hour).UnixMilli() / hour * hour
		// Raw cells, hence marks: metric a in hour 0, b in hour 1, c in
		// hours 1 and 2.
		for _, w := range []struct {
			metric string
			hour   int64
		}{{"a", 0}, {"b", 1}, {"c", 1}, {"c", 2}} {
			if err := s.Write(ctx, []SeriesIn{{Labels: lbls("__name__", w.metric, "s", "x"), Samples: []Sample{{T: h0 + w.hour*hour + 1000, V: 1}}}}); err != nil {
				t.Fatal(err)
			}
		}
		uids := metricUIDs(t, s, "a", "b", "c")
		hourOf := func(i int64) uint32 { return uint32((h0 + i*hour) / 1000) }

		// The first read is held in the hook until released; the queries
		// asking meanwhile must wait for the second.
		var (
			mu      sync.Mutex
			reads   int
			entered = make(chan struct{})
			release = make(chan struct{})
		)
		s.read.beforeMarks = func() {
			mu.Lock()
			reads++
			first := reads == 1
			mu.Unlock()
			if first {
				close(entered)
				<-release
			}
		}
		ask := func(ctx context.Context, ms []string, from, to int64) *marksRead {
			set := map[uint64]bool{}
			for _, m := range ms {
				set[uids[m]] = true
			}
			return s.startMarks(ctx, set, hourOf(from), hourOf(to))
		}
		firstDone := make(chan *marksRead)
		go func() { firstDone <- ask(ctx, []string{"a", "b"}, 0, 0) }()
		<-entered
		second := ask(ctx, []string{"b"}, 0, 1)
		third := ask(ctx, []string{"c", "a"}, 2, 2)
		gone, cancel := context.WithCancel(ctx)
		fourth := ask(gone, []string{"c"}, 0, 2)
		for _, m := range []*marksRead{second, third, fourth} {
			if m.ready() {
				t.Fatal("a query asking during a read got marks before the read it must wait for")
			}
		}
		cancel()
		if _, _, err := fourth.wait(gone); !errors.Is(err, context.Canceled) {
			t.Errorf("a waiting query whose context ended: %v, want its context's error", err)
		}
		close(release)

		got := func(m *marksRead) string {
			t.Helper()
			raw, _, err := m.wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for rh := range raw {
				for name, id := range uids {
					if id == rh.metric {
						out = append(out, fmt.Sprintf("%s@%d", name, (int64(rh.hour)*1000-h0)/hour))
					}
				}
			}
			slices.Sort(out)
			return fmt.Sprint(out)
		}
		for _, c := range []struct {
			m    *marksRead
			want string
		}{
			{<-firstDone, "[a@0]"},
			{second, "[b@1]"},
			{third, "[c@2]"},
		} {
			if g := got(c.m); g != c.want {
				t.Errorf("marks %s, want %s", g, c.want)
			}
		}
		if reads != 2 {
			t.Errorf("%d reads of marks, want 2: one under way, one for the three that asked meanwhile", reads)
		}
		if r, q := s.read.marks.reads.Load(), s.read.marks.queries.Load(); r != 2 || q != 4 {
			t.Errorf("counted %d reads for %d queries, want 2 for 4", r, q)
		}

		// Alone, a query reads at once, in its own goroutine when it does
		// not read early.
		s.read.beforeMarks = nil
		m := ask(ctx, []string{"c"}, 1, 2)
		if g := got(m); g != "[c@1 c@2]" {
			t.Errorf("marks %s, want [c@1 c@2]", g)
		}
		// The read ends (reading false) just after it hands the marks over.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			sh := &s.read.marks
			sh.mu.Lock()
			busy := sh.reading || len(sh.waiting) > 0
			sh.mu.Unlock()
			if !busy {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no query waits, yet a read of marks stays under way")
			}
		}
	})
}

// metricUIDs are the UIDs of the metrics names, which must exist.
func metricUIDs(t *testing.T, s *Store, names ...string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, n := range names {
		p, err := s.planQuery(context.Background(), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", n)})
		if err != nil || p == nil {
			t.Fatalf("metric %s: plan %v, %v", n, p, err)
		}
		for id := range p.metricSet() {
			out[n] = id
		}
	}
	return out
}
