package store

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
)

// scanCountingDB counts the scans of its UID table.
type scanCountingDB struct {
	table.DB
	uidScans atomic.Int64
}

func (d *scanCountingDB) Table(ctx context.Context, name string) (table.Table, error) {
	t, err := d.DB.Table(ctx, name)
	if err != nil || !strings.HasSuffix(name, UIDTableSuffix) {
		return t, err
	}
	return scanCountingTable{t, &d.uidScans}, nil
}

type scanCountingTable struct {
	table.Table
	n *atomic.Int64
}

func (t scanCountingTable) Scan(ctx context.Context, opts table.ScanOptions) table.Scanner {
	t.n.Add(1)
	return t.Table.Scan(ctx, opts)
}

// TestNamelessQueriesDoNotScanUIDTable is the regression test of finding 7
// of issue 12: a query without an equality matcher on __name__ scanned the
// whole UID table, every time. Now the metric names are listed once, and a
// metric assigned afterwards, by this process or another, is seen by the
// next query.
func TestNamelessQueriesDoNotScanUIDTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		cdb := &scanCountingDB{DB: db}
		s := openStore(t, cdb, Config{TablePrefix: prefix})
		other := openStore(t, db, Config{TablePrefix: prefix}) // another adapter
		ts := int64(1_760_000_000_000)
		write := func(st *Store, name string) {
			t.Helper()
			if err := st.Write(ctx, []SeriesIn{{Labels: lbls("__name__", name, "job", "j"), Samples: []Sample{{T: ts, V: 1}}}}); err != nil {
				t.Fatal(err)
			}
		}
		query := func(ms ...*labels.Matcher) string {
			t.Helper()
			return collect(t, s.Select(ctx, Query{Start: ts - hour, End: ts + hour, Matchers: ms, SeriesOnly: true}))
		}
		write(s, "a_one")
		write(s, "b_two")
		before := cdb.uidScans.Load()
		for range 10 {
			if got := query(mustMatcher(t, labels.MatchRegexp, "__name__", ".+_.+")); got != "{__name__=\"a_one\", job=\"j\"}\n{__name__=\"b_two\", job=\"j\"}\n" {
				t.Fatalf("got %q", got)
			}
			query(mustMatcher(t, labels.MatchEqual, "job", "j"))
		}
		if n := cdb.uidScans.Load() - before; n > 1 {
			t.Fatalf("20 queries without a metric name scanned the UID table %d times, want at most once", n)
		}
		// A metric this process writes, and one another adapter writes, are
		// seen at once, still without a scan.
		write(s, "c_three")
		write(other, "d_four")
		scans := cdb.uidScans.Load()
		want := "{__name__=\"a_one\", job=\"j\"}\n{__name__=\"b_two\", job=\"j\"}\n{__name__=\"c_three\", job=\"j\"}\n{__name__=\"d_four\", job=\"j\"}\n"
		if got := query(mustMatcher(t, labels.MatchNotEqual, "__name__", "")); got != want {
			t.Fatalf("after new metrics: got\n%s\nwant\n%s", got, want)
		}
		if n := cdb.uidScans.Load() - scans; n != 0 {
			t.Fatalf("new metrics cost %d UID table scans", n)
		}
	})
}

// TestNameCachePending: a counted UID whose reverse mapping is not there yet
// (an assignment in flight) is looked for again, until pendingFor.
func TestNameCachePending(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{})
	nc := newNameCache(s.uids)
	now := time.Unix(1_760_000_000, 0)
	nc.now = func() time.Time { return now }
	if _, err := nc.get(ctx); err != nil {
		t.Fatal(err)
	}
	// Counter moved, mapping not written yet.
	if _, err := s.uid.Increment(ctx, []byte{0}, "id", []byte("metrics"), 1); err != nil {
		t.Fatal(err)
	}
	snap, err := nc.get(ctx)
	if err != nil || len(snap.metrics) != 1 || len(nc.pending[0]) != 1 {
		t.Fatalf("metrics %v, pending %v, err %v; want only the empty name and UID 1 pending", snap.metrics, nc.pending[0], err)
	}
	// The reverse mapping lands: seen by the next use.
	if err := s.uid.Put(ctx, []table.Cell{{Row: []byte{0, 0, 1}, Family: "name", Qualifier: []byte("metrics"), Timestamp: table.LatestTimestamp, Value: []byte("late")}}); err != nil {
		t.Fatal(err)
	}
	if snap, err = nc.get(ctx); err != nil || len(snap.metrics) != 2 || snap.metrics[1].name != "late" || len(nc.pending[0]) != 0 {
		t.Fatalf("metrics %v, pending %v, err %v", snap.metrics, nc.pending[0], err)
	}
	// A leaked UID is given up after pendingFor.
	if _, err := s.uid.Increment(ctx, []byte{0}, "id", []byte("metrics"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.get(ctx); err != nil || len(nc.pending[0]) != 1 {
		t.Fatalf("pending %v, err %v", nc.pending[0], err)
	}
	now = now.Add(pendingFor + time.Second)
	if _, err := nc.get(ctx); err != nil || len(nc.pending[0]) != 0 {
		t.Fatalf("pending %v after %v, err %v", nc.pending[0], pendingFor, err)
	}
}
