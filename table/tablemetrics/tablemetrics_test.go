package tablemetrics_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
	"github.com/prom-hbase/prom-hbase/table/tablemetrics"
	"github.com/prom-hbase/prom-hbase/table/tabletest"
)

// The wrapper must keep the whole table contract.
func TestConformance(t *testing.T) {
	tabletest.Run(t, func(t testing.TB) table.DB {
		db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return tablemetrics.Wrap(db, tablemetrics.NewMetrics(nil))
	})
}

func TestCountsCallsAndErrors(t *testing.T) {
	ctx := context.Background()
	db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := prometheus.NewRegistry()
	wrapped := tablemetrics.Wrap(db, tablemetrics.NewMetrics(reg))
	tbl, err := table.EnsureTable(ctx, wrapped, table.TableSpec{Name: "m", Families: []table.FamilySpec{{Name: "f"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := tbl.Put(ctx, []table.Cell{{Row: []byte{byte(i)}, Family: "f", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tbl.Get(ctx, "f", [][]byte{{0}}); err != nil {
		t.Fatal(err)
	}
	s := tbl.Scan(cancelled, table.ScanOptions{})
	for s.Next() {
	}
	if s.Close() == nil && s.Err() == nil {
		t.Fatal("scan on a cancelled context reported no error")
	}

	if got := testutil.CollectAndCount(reg, "promhbase_storage_call_duration_seconds"); got < 3 {
		t.Fatalf("duration series = %d, want put, get, scan (and create_table)", got)
	}
	if got := errorCount(t, reg, "scan"); got != 1 {
		t.Fatalf("scan errors = %v, want 1", got)
	}
	if got := errorCount(t, reg, "put"); got != 0 {
		t.Fatalf("put errors = %v, want 0", got)
	}
}

func errorCount(t *testing.T, reg *prometheus.Registry, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "promhbase_storage_call_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no error counter for op %q", op)
	return 0
}
