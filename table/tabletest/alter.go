package tabletest

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// checkDescribed compares a Describe answer with the spec the table has:
// same families, TTL and versions (0 meaning the default of 1), and each
// attribute a backend may ignore either as given or empty (an attribute the
// spec leaves empty may come back as the backend's default).
func checkDescribed(t *testing.T, got table.TableSpec, want []table.FamilySpec) {
	t.Helper()
	if len(got.Families) != len(want) {
		t.Fatalf("Describe: %d families %+v, want %d", len(got.Families), got.Families, len(want))
	}
	for _, w := range want {
		i := slices.IndexFunc(got.Families, func(f table.FamilySpec) bool { return f.Name == w.Name })
		if i < 0 {
			t.Errorf("Describe: no family %q in %+v", w.Name, got.Families)
			continue
		}
		g := got.Families[i]
		optional := func(got, want string) bool { return got == "" || want == "" || strings.EqualFold(got, want) }
		ok := g.TTL == w.TTL && max(g.MaxVersions, 1) == max(w.MaxVersions, 1) &&
			optional(g.BloomFilter, w.BloomFilter) && optional(g.DataBlockEncoding, w.DataBlockEncoding) &&
			optional(g.Compression, w.Compression) && optional(g.InMemoryCompaction, w.InMemoryCompaction) &&
			(!g.InMemory || w.InMemory) &&
			(!g.NewVersionBehavior || w.NewVersionBehavior)
		if !ok {
			t.Errorf("Describe: family %+v, want %+v", g, w)
		}
	}
}

func testDescribe(t *testing.T, s *suite) {
	spec := table.TableSpec{
		Name: s.tableName(t),
		Families: []table.FamilySpec{
			{Name: "d", MaxVersions: 1, TTL: 48 * time.Hour, BloomFilter: "ROW", DataBlockEncoding: "FAST_DIFF", Compression: "NONE", NewVersionBehavior: true},
			{Name: "u", InMemory: true, BloomFilter: "ROWCOL"},
			{Name: "v", MaxVersions: 3, InMemoryCompaction: "BASIC"},
		},
		SplitKeys: [][]byte{[]byte("m")},
	}
	db, _ := s.createTable(t, spec)
	ctx := t.Context()
	got, err := db.Describe(ctx, spec.Name)
	if err != nil {
		t.Fatalf("Describe(%q): %v", spec.Name, err)
	}
	if got.Name != spec.Name || len(got.SplitKeys) != 0 {
		t.Errorf("Describe(%q): name %q, %d split keys", spec.Name, got.Name, len(got.SplitKeys))
	}
	checkDescribed(t, got, spec.Families)
	absent := s.tableName(t)
	if _, err := db.Describe(ctx, absent); !errors.Is(err, table.ErrTableNotFound) {
		t.Errorf("Describe(%q) of an absent table: %v, want ErrTableNotFound", absent, err)
	}
}

func testAlterFamily(t *testing.T, s *suite) {
	families := []table.FamilySpec{
		{Name: "d", BloomFilter: "ROW", DataBlockEncoding: "FAST_DIFF", NewVersionBehavior: true},
		{Name: "k"},
	}
	spec := table.TableSpec{Name: s.tableName(t), Families: families}
	db, tb := s.createTable(t, spec)
	ctx := t.Context()
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	fresh := recentTS()
	cells := []table.Cell{
		cell("r", "d", "old", old, "two hours old"),
		cell("r", "d", "fresh", fresh, "a minute old"),
		cell("r", "k", "old", old, "kept forever"),
	}
	put(t, tb, cells...)
	checkRows(t, "before AlterFamily", get(t, tb, "", []byte("r")), rowsOf(cells[1], cells[0], cells[2]))

	// A TTL of one hour on family d: the two-hour-old cell goes at once,
	// through this handle and a new one; the rest stays.
	altered := families[0]
	altered.TTL = time.Hour
	altered.MaxVersions = 2
	altered.InMemoryCompaction = "BASIC"
	if err := db.AlterFamily(ctx, spec.Name, altered); err != nil {
		t.Fatalf("AlterFamily: %v", err)
	}
	got, err := db.Describe(ctx, spec.Name)
	if err != nil {
		t.Fatalf("Describe after AlterFamily: %v", err)
	}
	checkDescribed(t, got, []table.FamilySpec{altered, families[1]})
	want := rowsOf(cells[1], cells[2])
	checkRows(t, "Get after a shorter TTL", get(t, tb, "", []byte("r")), want)
	checkRows(t, "Scan after a shorter TTL", scan(t, tb, table.ScanOptions{}), want)
	tb2, err := db.Table(ctx, spec.Name)
	if err != nil {
		t.Fatalf("Table after AlterFamily: %v", err)
	}
	checkRows(t, "Get through a new handle after a shorter TTL", get(t, tb2, "", []byte("r")), want)
	put(t, tb, cell("r2", "d", "q", fresh, "written after"))
	checkRows(t, "Get of a cell written after AlterFamily", get(t, tb, "", []byte("r2")), rowsOf(cell("r2", "d", "q", fresh, "written after")))

	if err := db.AlterFamily(ctx, spec.Name, table.FamilySpec{Name: "nosuchfamily"}); err == nil {
		t.Errorf("AlterFamily of a family the table does not have: no error")
	}
	if err := db.AlterFamily(ctx, s.tableName(t), altered); !errors.Is(err, table.ErrTableNotFound) {
		t.Errorf("AlterFamily of an absent table: %v, want ErrTableNotFound", err)
	}
}

func testAddFamily(t *testing.T, s *suite) {
	// Family t first, then r added: r sorts before t, so a backend that
	// numbers families must not renumber t, and must still return a row's
	// cells in (family, qualifier) order.
	spec := table.TableSpec{Name: s.tableName(t), Families: []table.FamilySpec{{Name: "t", BloomFilter: "ROW"}}}
	db, tb := s.createTable(t, spec)
	ctx := t.Context()
	old := time.Now().Add(-72 * time.Hour).UnixMilli()
	ts := recentTS()
	before := []table.Cell{
		cell("r1", "t", "q1", ts, "t before"),
		cell("r2", "t", "a", ts, "t only"),
		cell("r4", "t", "old", old, "t keeps old cells"),
	}
	put(t, tb, before...)

	added := table.FamilySpec{Name: "r", TTL: 48 * time.Hour, BloomFilter: "ROW", NewVersionBehavior: true}
	if err := db.AddFamily(ctx, spec.Name, added); err != nil {
		t.Fatalf("AddFamily: %v", err)
	}
	got, err := db.Describe(ctx, spec.Name)
	if err != nil {
		t.Fatalf("Describe after AddFamily: %v", err)
	}
	checkDescribed(t, got, []table.FamilySpec{added, spec.Families[0]})
	checkRows(t, "Get of the cells written before AddFamily", get(t, tb, "", []byte("r1"), []byte("r2"), []byte("r4")),
		rowsOf(before...))

	// The handle opened before AddFamily writes to the new family.
	put(t, tb,
		cell("r1", "r", "q2", ts, "r two"),
		cell("r1", "r", "q0", ts, "r zero"),
		cell("r3", "r", "x", ts, "r only"),
		cell("r4", "r", "old", old, "expired by r's TTL"),
		cell("r5", "r", "z", ts, "r then t"),
		cell("r5", "t", "a", ts, "t after r"),
	)
	r1 := []table.Cell{cell("r1", "r", "q0", ts, "r zero"), cell("r1", "r", "q2", ts, "r two"), cell("r1", "t", "q1", ts, "t before")}
	all := rowsOf(r1[0], r1[1], r1[2],
		before[1],
		cell("r3", "r", "x", ts, "r only"),
		before[2],
		cell("r5", "r", "z", ts, "r then t"), cell("r5", "t", "a", ts, "t after r"))
	checkRows(t, "Get of both families", get(t, tb, "", []byte("r1")), rowsOf(r1...))
	checkRows(t, "Scan of both families", scan(t, tb, table.ScanOptions{}), all)
	checkRows(t, "Scan of family r", scan(t, tb, table.ScanOptions{Family: "r"}),
		project(all, func(_ int, c table.Cell) bool { return c.Family == "r" }))
	checkRows(t, "Scan of family t", scan(t, tb, table.ScanOptions{Family: "t"}),
		project(all, func(_ int, c table.Cell) bool { return c.Family == "t" }))
	checkRows(t, "FirstCellOnly scan", scan(t, tb, table.ScanOptions{FirstCellOnly: true, KeyOnly: true}),
		keyOnly(project(all, func(i int, _ table.Cell) bool { return i == 0 })))
	tb2, err := db.Table(ctx, spec.Name)
	if err != nil {
		t.Fatalf("Table after AddFamily: %v", err)
	}
	checkRows(t, "Scan through a new handle", scan(t, tb2, table.ScanOptions{}), all)

	// Deleting family r of a row leaves t's cells.
	if err := tb.Delete(ctx, []table.Cell{{Row: []byte("r1"), Family: "r"}}); err != nil {
		t.Fatalf("Delete of family r: %v", err)
	}
	checkRows(t, "Get after deleting family r of the row", get(t, tb, "", []byte("r1")), rowsOf(r1[2]))

	for _, f := range []table.FamilySpec{added, spec.Families[0]} {
		if err := db.AddFamily(ctx, spec.Name, f); !errors.Is(err, table.ErrFamilyExists) {
			t.Errorf("AddFamily(%q) of a family the table has: %v, want ErrFamilyExists", f.Name, err)
		}
	}
	if err := db.AddFamily(ctx, s.tableName(t), added); !errors.Is(err, table.ErrTableNotFound) {
		t.Errorf("AddFamily to an absent table: %v, want ErrTableNotFound", err)
	}

	// Racing adds of one family: one adds it, the others find it there
	// (or add it too); none fails otherwise.
	const racers = 3
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = db.AddFamily(ctx, spec.Name, table.FamilySpec{Name: "s"}) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, table.ErrFamilyExists):
			t.Errorf("racing AddFamily %d: %v, want nil or ErrFamilyExists", i, err)
		}
	}
	if won == 0 {
		t.Errorf("racing AddFamily: none added the family: %v", errs)
	}
	put(t, tb, cell("r6", "s", "q", ts, "s"))
	checkRows(t, "Get of family s", get(t, tb, "s", []byte("r6")), rowsOf(cell("r6", "s", "q", ts, "s")))
	if got, err = db.Describe(ctx, spec.Name); err != nil {
		t.Fatalf("Describe after the race: %v", err)
	}
	checkDescribed(t, got, []table.FamilySpec{added, {Name: "s"}, spec.Families[0]})
}
