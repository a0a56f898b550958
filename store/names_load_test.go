package store

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/table"
)

// hookScanDB runs hook once, before the first scan of the UID table's id
// family (the name cache's load, after it read the counters).
type hookScanDB struct {
	table.DB
	once sync.Once
	hook func()
}

func (d *hookScanDB) Table(ctx context.Context, name string) (table.Table, error) {
	t, err := d.DB.Table(ctx, name)
	if err != nil || !strings.HasSuffix(name, UIDTableSuffix) {
		return t, err
	}
	return hookScanTable{t, d}, nil
}

type hookScanTable struct {
	table.Table
	d *hookScanDB
}

func (t hookScanTable) Scan(ctx context.Context, opts table.ScanOptions) table.Scanner {
	if opts.Family == labels2uid.FamilyID && t.d.hook != nil {
		t.d.once.Do(t.d.hook)
	}
	return t.Table.Scan(ctx, opts)
}

// TestNameCacheMetricAssignedDuringLoad: a metric assigned (by another
// adapter) between the name cache's read of the counters and its scan of
// the forward rows is added by the scan, and must not be added again by
// the next update, which fetches the UIDs above the counters the load
// read. It once was: the cache listed it twice, and a query without a
// metric name returned its series twice.
func TestNameCacheMetricAssignedDuringLoad(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	ts := int64(1_760_000_000_000)
	write := func(st *Store, name string) {
		t.Helper()
		if err := st.Write(ctx, []SeriesIn{{Labels: lbls("__name__", name, "job", "j"), Samples: []Sample{{T: ts, V: 1}}}}); err != nil {
			t.Fatal(err)
		}
	}
	other := openStore(t, db, Config{}) // another adapter
	write(other, "a_one")
	hdb := &hookScanDB{DB: db}
	s := openStore(t, hdb, Config{})
	hdb.hook = func() { write(other, "b_two") }
	query := func() string {
		t.Helper()
		return collect(t, s.Select(ctx, Query{Start: ts - hour, End: ts + hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "job", "j")}}))
	}
	first := query()
	second := query()
	snap, err := s.readState().names.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range snap.metrics {
		seen[m.name]++
	}
	if seen["b_two"] != 1 || first != second {
		t.Fatalf("name cache %v (b_two listed %d times)\nfirst query:\n%s\nsecond query:\n%s", snap.metrics, seen["b_two"], first, second)
	}
}
