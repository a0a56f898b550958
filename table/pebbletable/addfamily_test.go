package pebbletable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

func getRow(t *testing.T, tb table.Table, family, row string) []table.Cell {
	t.Helper()
	rows, err := tb.Get(context.Background(), family, [][]byte{[]byte(row)})
	if err != nil {
		t.Fatal(err)
	}
	return rows[0].Cells
}

// cellsString is "family:qualifier=value ..." of cells.
func cellsString(cells []table.Cell) string {
	var s []string
	for _, c := range cells {
		s = append(s, fmt.Sprintf("%s:%s=%s", c.Family, c.Qualifier, c.Value))
	}
	return strings.Join(s, " ")
}

func catalogEntry(t *testing.T, db *DB, name string) string {
	t.Helper()
	v, closer, err := db.pdb.Get(appendCatalogKey(nil, name))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return string(v)
}

// TestAddFamilyReopen: added families keep their key bytes and their cells
// across a reopen, and the existing family keeps its byte.
func TestAddFamilyReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "d", Families: []table.FamilySpec{{Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	c := func(fam, q string) table.Cell {
		return table.Cell{Row: []byte("row"), Family: fam, Qualifier: []byte(q), Timestamp: now, Value: []byte(fam + q)}
	}
	if err := tb.Put(ctx, []table.Cell{c("t", "1")}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []table.FamilySpec{{Name: "r", TTL: time.Hour, Compression: "SNAPPY"}, {Name: "a"}} {
		if err := db.AddFamily(ctx, "d", f); err != nil {
			t.Fatalf("AddFamily(%s): %v", f.Name, err)
		}
	}
	if err := tb.Put(ctx, []table.Cell{c("r", "2"), c("a", "3"), c("r", "1")}); err != nil {
		t.Fatal(err)
	}
	const want = "a:3=a3 r:1=r1 r:2=r2 t:1=t1"
	if got := cellsString(getRow(t, tb, "", "row")); got != want {
		t.Fatalf("Get: %s, want %s", got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, dir, Options{SweepInterval: -1})
	if got := catalogEntry(t, db, "d"); !strings.Contains(got, `"name":"t","index":0`) ||
		!strings.Contains(got, `"name":"r","index":1`) || !strings.Contains(got, `"name":"a","index":2`) {
		t.Errorf("catalog entry %s: want t, r and a at key bytes 0, 1 and 2", got)
	}
	tb, err = db.Table(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if got := cellsString(getRow(t, tb, "", "row")); got != want {
		t.Errorf("Get after reopening: %s, want %s", got, want)
	}
	if got := cellsString(getRow(t, tb, "r", "row")); got != "r:1=r1 r:2=r2" {
		t.Errorf("Get of family r after reopening: %s", got)
	}
	spec, err := db.Describe(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Families) != 3 || spec.Families[0].Name != "a" || spec.Families[1].Name != "r" || spec.Families[2].Name != "t" ||
		spec.Families[1].TTL != time.Hour || spec.Families[1].Compression != "SNAPPY" {
		t.Errorf("Describe after reopening: %+v", spec.Families)
	}
	if err := db.AddFamily(ctx, "d", table.FamilySpec{Name: "r"}); !errors.Is(err, table.ErrFamilyExists) {
		t.Errorf("AddFamily of r after reopening: %v, want ErrFamilyExists", err)
	}
}

// TestOldCatalog: a catalog entry written before families could be added
// (no key byte index) reads as it did, families at their sorted position,
// and gets explicit indices with its next change.
func TestOldCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "old", Families: []table.FamilySpec{{Name: "b", TTL: time.Hour}, {Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	stale := now - 2*time.Hour.Milliseconds()
	cells := []table.Cell{
		{Row: []byte("row"), Family: "a", Qualifier: []byte("1"), Timestamp: stale, Value: []byte("a1")},
		{Row: []byte("row"), Family: "b", Qualifier: []byte("1"), Timestamp: now, Value: []byte("b1")},
		{Row: []byte("row"), Family: "b", Qualifier: []byte("2"), Timestamp: stale, Value: []byte("expired")},
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	// What the version before AddFamily wrote for this table, byte for byte.
	id := tb.(*tbl).id
	old := fmt.Sprintf(`{"id":%d,"families":[{"name":"a"},{"name":"b","ttl_ms":3600000}]}`, id)
	if err := db.pdb.Set(appendCatalogKey(nil, "old"), []byte(old), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dir, Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	tb, err = db.Table(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if got := cellsString(getRow(t, tb, "", "row")); got != "a:1=a1 b:1=b1" {
		t.Fatalf("Get from an old catalog entry: %s", got)
	}
	if err := db.AddFamily(ctx, "old", table.FamilySpec{Name: "ab"}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Put(ctx, []table.Cell{{Row: []byte("row"), Family: "ab", Qualifier: []byte("1"), Timestamp: now, Value: []byte("ab1")}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, dir, Options{SweepInterval: -1})
	want := fmt.Sprintf(`{"id":%d,"families":[{"name":"a","index":0},{"name":"b","index":1,"ttl_ms":3600000},{"name":"ab","index":2}]}`, id)
	if got := catalogEntry(t, db, "old"); got != want {
		t.Errorf("catalog entry after AddFamily:\n%s\nwant\n%s", got, want)
	}
	tb, err = db.Table(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if got := cellsString(getRow(t, tb, "", "row")); got != "a:1=a1 ab:1=ab1 b:1=b1" {
		t.Errorf("Get after AddFamily and reopening: %s", got)
	}
}

func TestCatalogInvalidIndex(t *testing.T) {
	for _, families := range []string{
		`[{"name":"a","index":0},{"name":"b","index":0}]`,
		`[{"name":"a","index":256}]`,
		`[{"name":"a"},{"name":"b","index":0}]`,
		`[{"name":"a","index":1},{"name":"a","index":0}]`,
	} {
		dir := t.TempDir()
		db, err := Open(dir, Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.pdb.Set(appendCatalogKey(nil, "x"), []byte(`{"id":0,"families":`+families+`}`), nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if db, err := Open(dir, Options{SweepInterval: -1}); err == nil {
			db.Close()
			t.Errorf("Open with families %s: no error", families)
		}
	}
}

// TestAddFamilyTTLAndSweep: an added family's TTL hides and sweeps its
// cells only; AlterFamily of it moves its horizon.
func TestAddFamilyTTLAndSweep(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	db := openTest(t, t.TempDir(), Options{Now: clk.Now, SweepInterval: -1})
	tb, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "d", Families: []table.FamilySpec{{Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	if db.sweepable() != nil {
		t.Fatal("a table without TTL is sweepable")
	}
	if err := db.AddFamily(ctx, "d", table.FamilySpec{Name: "r", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var cells []table.Cell
	for _, r := range []string{"a", "b"} {
		for _, f := range []string{"t", "r"} {
			cells = append(cells, table.Cell{Row: []byte(r), Family: f, Qualifier: []byte("q"), Timestamp: table.LatestTimestamp, Value: []byte(f)})
		}
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	if got := cellsString(getRow(t, tb, "", "a")); got != "r:q=r t:q=t" {
		t.Fatalf("Get: %s", got)
	}
	clk.Advance(time.Hour + time.Millisecond)
	if got := cellsString(getRow(t, tb, "", "a")); got != "t:q=t" {
		t.Fatalf("Get after r's TTL: %s", got)
	}
	if n, err := db.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("Sweep: deleted %d, %v; want 2", n, err)
	}
	if got := rawCells(t, tb.(*tbl)); got != 2 {
		t.Errorf("after the sweep: %d cells stored, want 2", got)
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour + time.Millisecond)
	if err := db.AlterFamily(ctx, "d", table.FamilySpec{Name: "r", TTL: 3 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := cellsString(getRow(t, tb, "", "a")); got != "r:q=r t:q=t" {
		t.Errorf("Get after a longer TTL for r: %s", got)
	}
}

func TestAddFamilyInvalid(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	if err := db.CreateTable(ctx, table.TableSpec{Name: "d", Families: []table.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []table.FamilySpec{{}, {Name: "x", TTL: -1}, {Name: "x", MaxVersions: -1}} {
		if err := db.AddFamily(ctx, "d", f); err == nil || errors.Is(err, table.ErrFamilyExists) {
			t.Errorf("AddFamily(%+v): %v, want an invalid spec error", f, err)
		}
	}
	// One byte per family: 256 at most.
	for i := 1; i < maxFamilies; i++ {
		if err := db.AddFamily(ctx, "d", table.FamilySpec{Name: fmt.Sprint(i)}); err != nil {
			t.Fatalf("AddFamily of family %d: %v", i+1, err)
		}
	}
	if err := db.AddFamily(ctx, "d", table.FamilySpec{Name: "one too many"}); err == nil {
		t.Errorf("AddFamily of family %d: no error", maxFamilies+1)
	}
	tb, err := db.Table(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Put(ctx, []table.Cell{{Row: []byte("r"), Family: "255", Qualifier: []byte("q"), Timestamp: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Delete(ctx, []table.Cell{{Row: []byte("r"), Family: "255"}}); err != nil {
		t.Fatal(err)
	}
	if got := getRow(t, tb, "", "r"); len(got) != 0 {
		t.Errorf("after deleting family 255: %s", cellsString(got))
	}
}

// TestAddFamilyConcurrent runs writes, reads of all families and sweeps
// while families are added (run it with -race): every cell written is read
// back in its family, rows in (family, qualifier) order.
func TestAddFamilyConcurrent(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	tb, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "d", Families: []table.FamilySpec{{Name: "z", TTL: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	const families = 12
	var added atomic.Int32 // families f00.. added so far
	var stop atomic.Bool
	var wg sync.WaitGroup
	var written atomic.Int64
	for w := range 3 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				fams := []string{"z"}
				for f := range int(added.Load()) {
					fams = append(fams, fmt.Sprintf("f%02d", f))
				}
				var cells []table.Cell
				for _, f := range fams {
					cells = append(cells, table.Cell{Row: fmt.Appendf(nil, "w%d/%04d", w, i%500), Family: f,
						Qualifier: []byte{byte(w)}, Timestamp: table.LatestTimestamp, Value: []byte(f)})
				}
				if err := tb.Put(ctx, cells); err != nil {
					t.Error(err)
					return
				}
				written.Add(int64(len(cells)))
			}
		})
	}
	checkRow := func(r table.Row) {
		for i, c := range r.Cells {
			if string(c.Value) != c.Family {
				t.Errorf("row %q: cell of family %s holds %q", r.Key, c.Family, c.Value)
			}
			if i > 0 && c.Family < r.Cells[i-1].Family {
				t.Errorf("row %q: family %s after %s", r.Key, c.Family, r.Cells[i-1].Family)
			}
		}
	}
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				for _, opts := range []table.ScanOptions{{}, {FirstCellOnly: true}} {
					sc := tb.Scan(ctx, opts)
					for sc.Next() {
						checkRow(sc.At())
						if opts.FirstCellOnly && len(sc.At().Cells) != 1 {
							t.Errorf("FirstCellOnly: %d cells", len(sc.At().Cells))
						}
					}
					if err := errors.Join(sc.Err(), sc.Close()); err != nil {
						t.Error(err)
						return
					}
				}
				rows, err := tb.Get(ctx, "", [][]byte{[]byte("w0/0001"), []byte("w1/0002")})
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range rows {
					checkRow(r)
				}
				if _, err := db.Sweep(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for f := range families {
		time.Sleep(2 * time.Millisecond)
		if err := db.AddFamily(ctx, "d", table.FamilySpec{Name: fmt.Sprintf("f%02d", f), TTL: time.Duration(f+1) * time.Hour}); err != nil {
			t.Fatal(err)
		}
		added.Add(1)
	}
	for written.Load() < 2000 && !t.Failed() {
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	// The last row each writer wrote with every family holds all of them.
	rows := 0
	sc := tb.Scan(ctx, table.ScanOptions{})
	defer sc.Close()
	for sc.Next() {
		checkRow(sc.At())
		rows++
	}
	if err := sc.Err(); err != nil || rows == 0 {
		t.Fatalf("final scan: %d rows, %v", rows, err)
	}
	spec, err := db.Describe(ctx, "d")
	if err != nil || len(spec.Families) != families+1 {
		t.Fatalf("Describe: %+v, %v", spec, err)
	}
}
