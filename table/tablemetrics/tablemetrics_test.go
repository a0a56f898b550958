package tablemetrics_test

import (
	"context"
	"errors"
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

// TestNewCalls: the conditional batch, the version deletes and the catalog
// calls are timed and their errors counted like the others.
func TestNewCalls(t *testing.T) {
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
	c := table.Cell{Row: []byte("r"), Family: "f", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")}
	if _, err := tbl.CheckAndPutBatch(ctx, []table.CondPut{{Row: c.Row, Family: "f", Qualifier: c.Qualifier, Put: []table.Cell{c}}}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.DeleteVersions(ctx, []table.Cell{c}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.DeleteVersions(ctx, []table.Cell{{Row: c.Row, Family: "nosuch", Qualifier: c.Qualifier, Timestamp: 1}}); err == nil {
		t.Fatal("DeleteVersions in an absent family: no error")
	}
	if _, err := wrapped.Describe(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if err := wrapped.AlterFamily(ctx, "m", table.FamilySpec{Name: "f", MaxVersions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := wrapped.AddFamily(ctx, "m", table.FamilySpec{Name: "g"}); err != nil {
		t.Fatal(err)
	}
	if err := wrapped.AddFamily(ctx, "m", table.FamilySpec{Name: "g"}); !errors.Is(err, table.ErrFamilyExists) {
		t.Fatalf("AddFamily of a family the table has: %v, want ErrFamilyExists", err)
	}
	if _, err := wrapped.Describe(ctx, "absent"); err == nil {
		t.Fatal("Describe of an absent table: no error")
	}
	for _, want := range []struct {
		op, table     string
		calls, errors float64
	}{
		{"check_and_put_batch", "m", 1, 0},
		{"delete_versions", "m", 2, 1},
		{"describe", "m", 1, 0},
		{"describe", "absent", 1, 1},
		{"alter_family", "m", 1, 0},
		{"add_family", "m", 2, 1},
	} {
		calls, errs := opCounts(t, reg, want.op, want.table)
		if calls != want.calls || errs != want.errors {
			t.Errorf("op %s on %s: %v calls, %v errors; want %v, %v", want.op, want.table, calls, errs, want.calls, want.errors)
		}
	}
}

// opCounts returns how many calls of op on tbl were timed and how many
// failed.
func opCounts(t *testing.T, reg *prometheus.Registry, op, tbl string) (calls, errs float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] != op || labels["table"] != tbl {
				continue
			}
			switch mf.GetName() {
			case "promhbase_storage_call_duration_seconds":
				calls = float64(m.GetHistogram().GetSampleCount())
			case "promhbase_storage_call_errors_total":
				errs = m.GetCounter().GetValue()
			}
		}
	}
	return calls, errs
}
