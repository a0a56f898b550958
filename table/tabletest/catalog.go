package tabletest

import (
	"errors"
	"sync"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

func testCatalog(t *testing.T, s *suite) {
	db := s.newDB(t)
	ctx := t.Context()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	name := s.tableName(t)
	if _, err := db.Table(ctx, name); !errors.Is(err, table.ErrTableNotFound) {
		t.Fatalf("Table(%q) before creation: got %v, want ErrTableNotFound", name, err)
	}
	spec := table.TableSpec{
		Name: name,
		Families: []table.FamilySpec{
			{Name: "x", MaxVersions: 1, BloomFilter: "ROW", DataBlockEncoding: "FAST_DIFF", Compression: "NONE"},
			{Name: "y"},
		},
		SplitKeys: [][]byte{[]byte("m")},
	}
	if err := db.CreateTable(ctx, spec); err != nil {
		t.Fatalf("CreateTable(%q): %v", name, err)
	}
	if err := db.CreateTable(ctx, spec); !errors.Is(err, table.ErrTableExists) {
		t.Fatalf("CreateTable(%q) again: got %v, want ErrTableExists", name, err)
	}
	tb, err := db.Table(ctx, name)
	if err != nil {
		t.Fatalf("Table(%q): %v", name, err)
	}
	// Both families are usable, on both sides of the split key.
	put(t, tb, cell("a", "x", "q", 1000, "1"), cell("z", "y", "q", 1000, "2"))
	tb2, err := table.EnsureTable(ctx, db, spec)
	if err != nil {
		t.Fatalf("EnsureTable(%q) of an existing table: %v", name, err)
	}
	checkRows(t, "Get through a second handle", get(t, tb2, "", []byte("a"), []byte("z")),
		rowsOf(cell("a", "x", "q", 1000, "1"), cell("z", "y", "q", 1000, "2")))
	if err := tb.Put(ctx, []table.Cell{cell("a", "nosuchfamily", "q", 1000, "1")}); err == nil {
		t.Errorf("Put to a family the table does not have: no error")
	}

	// EnsureTable creates what is absent.
	spec2 := table.TableSpec{Name: s.tableName(t), Families: []table.FamilySpec{{Name: "f"}}}
	tb3, err := table.EnsureTable(ctx, db, spec2)
	if err != nil {
		t.Fatalf("EnsureTable(%q) of an absent table: %v", spec2.Name, err)
	}
	put(t, tb3, cell("r", "f", "q", 1000, "v"))
	checkRows(t, "Get from a table EnsureTable created", get(t, tb3, "", []byte("r")), rowsOf(cell("r", "f", "q", 1000, "v")))
}

func testEnsureTableRace(t *testing.T, s *suite) {
	db := s.newDB(t)
	spec := table.TableSpec{Name: s.tableName(t), Families: []table.FamilySpec{{Name: "f"}}}
	const n = 8
	tables := make([]table.Table, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { tables[i], errs[i] = table.EnsureTable(t.Context(), db, spec) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("EnsureTable racer %d: %v", i, err)
		}
	}
	// All racers got the same table: what one writes, every other reads.
	put(t, tables[0], cell("r", "f", "q", 1000, "v"))
	for i, tb := range tables {
		checkRows(t, "Get through racer's handle "+string(rune('0'+i)), get(t, tb, "", []byte("r")), rowsOf(cell("r", "f", "q", 1000, "v")))
	}
}
