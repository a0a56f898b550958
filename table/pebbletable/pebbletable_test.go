package pebbletable

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/tabletest"
)

func openTest(t testing.TB, dir string, opts Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	// One database for all tests, as a long-lived deployment would have.
	db := openTest(t, t.TempDir(), Options{})
	tabletest.Run(t, func(testing.TB) table.DB { return db })
}

func TestConformanceOwnDB(t *testing.T) {
	tabletest.Run(t, func(t testing.TB) table.DB { return openTest(t, t.TempDir(), Options{}) })
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := Open(dir, Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	spec := table.TableSpec{Name: "t1", Families: []table.FamilySpec{{Name: "z"}, {Name: "a", TTL: time.Hour}}}
	tb, err := table.EnsureTable(ctx, db, spec)
	if err != nil {
		t.Fatal(err)
	}
	tb2, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "t2", Families: []table.FamilySpec{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	cells := []table.Cell{
		{Row: []byte("r"), Family: "a", Qualifier: []byte("q"), Timestamp: now, Value: []byte("1")},
		{Row: []byte("r"), Family: "z", Qualifier: []byte("q"), Timestamp: now, Value: []byte("2")},
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	if err := tb2.Put(ctx, cells[:1]); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Put(ctx, cells); !errors.Is(err, errClosed) {
		t.Errorf("Put after Close: %v, want errClosed", err)
	}

	db = openTest(t, dir, Options{SweepInterval: -1})
	if err := db.CreateTable(ctx, spec); !errors.Is(err, table.ErrTableExists) {
		t.Errorf("CreateTable of a table created before reopening: %v", err)
	}
	tb, err = db.Table(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tb.Get(ctx, "", [][]byte{[]byte("r")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows[0].Cells) != 2 || string(rows[0].Cells[0].Value) != "1" || string(rows[0].Cells[1].Value) != "2" {
		t.Errorf("after reopening: %+v", rows)
	}
	// A table created after reopening gets a fresh id and does not see t1's or t2's cells.
	tb3, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "t3", Families: []table.FamilySpec{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	sc := tb3.Scan(ctx, table.ScanOptions{})
	if sc.Next() {
		t.Errorf("new table sees rows: %q", sc.At().Key)
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if tb3.(*tbl).id == tb.(*tbl).id || tb3.(*tbl).id == 1 {
		t.Errorf("table id %d reused", tb3.(*tbl).id)
	}
}

// clock is a settable clock for retention tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// rawCells counts the cells physically present in a table.
func rawCells(t *testing.T, tb *tbl) int {
	t.Helper()
	it, err := tb.db.pdb.NewIter(&pebble.IterOptions{LowerBound: tb.prefix, UpperBound: tb.end})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	db := openTest(t, t.TempDir(), Options{Now: clk.Now, SweepInterval: -1})
	tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "t", Families: []table.FamilySpec{{Name: "f"}, {Name: "t", TTL: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	tb := tt.(*tbl)
	var cells []table.Cell
	for _, r := range []string{"a", "b", "c"} {
		cells = append(cells,
			table.Cell{Row: []byte(r), Family: "t", Qualifier: []byte("x"), Timestamp: table.LatestTimestamp, Value: []byte("t")},
			table.Cell{Row: []byte(r), Family: "f", Qualifier: []byte("x"), Timestamp: table.LatestTimestamp, Value: []byte("f")})
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep of fresh cells: deleted %d, %v", n, err)
	}
	clk.Advance(time.Hour - time.Millisecond)
	if n, err := db.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep before the TTL is up: deleted %d, %v", n, err)
	}
	clk.Advance(2 * time.Millisecond)
	// Expired cells are invisible before any sweep.
	rows, err := tb.Get(ctx, "", [][]byte{[]byte("a")})
	if err != nil || len(rows[0].Cells) != 1 || rows[0].Cells[0].Family != "f" {
		t.Fatalf("Get after the TTL: %+v, %v", rows, err)
	}
	if got := rawCells(t, tb); got != 6 {
		t.Fatalf("before the sweep: %d cells stored, want 6", got)
	}
	// A cell written afresh after expiry survives the sweep.
	if err := tb.Put(ctx, cells[:1]); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("Sweep: deleted %d, %v; want 2", n, err)
	}
	if got := rawCells(t, tb); got != 4 {
		t.Errorf("after the sweep: %d cells stored, want 4", got)
	}
	rows, err = tb.Get(ctx, "t", [][]byte{[]byte("a"), []byte("b")})
	if err != nil || len(rows[0].Cells) != 1 || len(rows[1].Cells) != 0 {
		t.Errorf("Get after the sweep: %+v, %v", rows, err)
	}
}

func TestSweeper(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	db := openTest(t, t.TempDir(), Options{Now: clk.Now, SweepInterval: 10 * time.Millisecond})
	tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "t", Families: []table.FamilySpec{{Name: "t", TTL: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	tb := tt.(*tbl)
	if err := tb.Put(ctx, []table.Cell{{Row: []byte("r"), Family: "t", Qualifier: []byte("q"), Timestamp: table.LatestTimestamp}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	// The background sweeper gets there eventually; the test's own deadline bounds the wait.
	for rawCells(t, tb) != 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSplitKeysIgnored(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), Options{})
	spec := table.TableSpec{
		Name:      "split",
		Families:  []table.FamilySpec{{Name: "f"}},
		SplitKeys: [][]byte{{0x00}, []byte("m"), {0xff, 0xff}},
	}
	if err := db.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tb, err := db.Table(ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]byte{{0x00}, []byte("a"), []byte("m"), []byte("z"), {0xff, 0xff, 0x01}}
	var cells []table.Cell
	for _, r := range rows {
		cells = append(cells, table.Cell{Row: r, Family: "f", Qualifier: []byte("q"), Timestamp: 1})
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []table.ScanOptions{{Start: []byte("z"), Stop: []byte("a")}, {Start: []byte("m"), Stop: []byte("m")}} {
		sc := tb.Scan(ctx, opts)
		if sc.Next() || sc.Err() != nil {
			t.Errorf("scan of the empty range [%q, %q): row %q, %v", opts.Start, opts.Stop, sc.At().Key, sc.Err())
		}
		_ = sc.Close()
	}
	sc := tb.Scan(ctx, table.ScanOptions{})
	defer sc.Close()
	n := 0
	for sc.Next() {
		if string(sc.At().Key) != string(rows[n]) {
			t.Errorf("row %d: %q, want %q", n, sc.At().Key, rows[n])
		}
		n++
	}
	if sc.Err() != nil || n != len(rows) {
		t.Errorf("scan: %d rows, %v", n, sc.Err())
	}
}

func TestCreateTableInvalid(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	for _, spec := range []table.TableSpec{
		{Name: "", Families: []table.FamilySpec{{Name: "f"}}},
		{Name: "nofamily"},
		{Name: "emptyfamily", Families: []table.FamilySpec{{Name: ""}}},
		{Name: "twice", Families: []table.FamilySpec{{Name: "f"}, {Name: "f"}}},
	} {
		if err := db.CreateTable(ctx, spec); err == nil {
			t.Errorf("CreateTable(%+v): no error", spec)
		}
	}
}
