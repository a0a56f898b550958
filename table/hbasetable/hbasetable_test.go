package hbasetable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/tabletest"
)

func TestConformance(t *testing.T) {
	zk := hbasetest.ZK(t)
	var (
		once sync.Once
		db   *DB
		err  error
	)
	t.Cleanup(func() {
		if db != nil {
			db.Close()
		}
	})
	tabletest.Run(t, func(tb testing.TB) table.DB {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			db, err = Open(ctx, Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot(), RPCTimeout: 20 * time.Second})
		})
		if err != nil {
			tb.Fatalf("Open: %v", err)
		}
		return db
	})
}

// TestPutsShareMultis: concurrent Puts through one DB share Multis by
// default, each in Multis of its own with DisableWriteCoalescing, and every
// cell lands either way.
func TestPutsShareMultis(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableWriteCoalescing=%v", off), func(t *testing.T) {
			zk := hbasetest.ZK(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			db, err := Open(ctx, Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot(), RPCTimeout: 20 * time.Second, DisableWriteCoalescing: off})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() }) // after the table is dropped
			tb := saltedTable(t, ctx, db)
			const writers, puts, cells = 8, 10, 64
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for p := range puts {
						batch := make([]table.Cell, cells)
						for i := range batch {
							s := w*cells + i
							batch[i] = table.Cell{Row: []byte{byte(s % 16), byte(s >> 8), byte(s)}, Family: "t",
								Qualifier: []byte{byte(p)}, Timestamp: 1000, Value: []byte(fmt.Sprint(w, p, i))}
						}
						if err := tb.Put(ctx, batch); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			n := 0
			sc := tb.Scan(ctx, table.ScanOptions{})
			for sc.Next() {
				n += len(sc.At().Cells)
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			sc.Close()
			if n != writers*puts*cells {
				t.Fatalf("%d cells read back, want %d", n, writers*puts*cells)
			}
			st := db.Client().Stats()
			multis := uint64(0)
			for _, k := range st.CallsPerMulti {
				multis += k
			}
			t.Logf("%d Multis carried %d calls", multis, st.CallsInMultis)
			if shared := st.CallsInMultis > multis; shared == off {
				t.Errorf("%d Multis carried %d calls (disabled: %v)", multis, st.CallsInMultis, off)
			}
		})
	}
}

// saltedTable creates a table of family t in 4 regions, split on the
// first byte, dropped at the end of the test.
func saltedTable(t *testing.T, ctx context.Context, db *DB) table.Table {
	t.Helper()
	name := fmt.Sprintf("hbasetable_shared_%d", time.Now().UnixNano())
	var splits [][]byte
	for b := 4; b < 16; b += 4 {
		splits = append(splits, []byte{byte(b)})
	}
	if err := db.CreateTable(ctx, table.TableSpec{Name: name, Families: []table.FamilySpec{{Name: "t"}}, SplitKeys: splits}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := db.Client().DisableTable(ctx, name); err != nil {
			t.Logf("disable %s: %v", name, err)
			return
		}
		if err := db.Client().DeleteTable(ctx, name); err != nil {
			t.Logf("delete %s: %v", name, err)
		}
	})
	tb, err := db.Table(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestAddFamily adds a family with the data family's HBase attributes to a
// table holding data: the descriptor has both families as asked, the old
// cell stays, the new family takes cells, and a second add of it is
// ErrFamilyExists.
func TestAddFamily(t *testing.T) {
	ctx, db := openTestDB(t)
	tb := saltedTable(t, ctx, db)
	name := tb.(*Table).name
	ts := time.Now().UnixMilli()
	old := table.Cell{Row: []byte{1, 'a'}, Family: "t", Qualifier: []byte("q"), Timestamp: ts, Value: []byte("before")}
	if err := tb.Put(ctx, []table.Cell{old}); err != nil {
		t.Fatal(err)
	}
	added := table.FamilySpec{Name: "r", TTL: 48 * time.Hour, Compression: "SNAPPY", DataBlockEncoding: "ROW_INDEX_V1",
		BloomFilter: "ROW", NewVersionBehavior: true}
	if err := db.AddFamily(ctx, name, added); err != nil {
		t.Fatal(err)
	}
	spec, err := db.Describe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Families) != 2 || spec.Families[0].Name != "r" || spec.Families[1].Name != "t" {
		t.Fatalf("Describe: %+v, want families r and t", spec.Families)
	}
	want := added
	want.MaxVersions = 1 // what family() asks for when the spec leaves it 0
	if got := spec.Families[0]; got != want {
		t.Errorf("Describe: family %+v, want %+v", got, want)
	}
	if got := spec.Families[1]; got.TTL != 0 || got.Compression == "SNAPPY" || got.NewVersionBehavior {
		t.Errorf("Describe: family t %+v changed", got)
	}
	// Cells in both families, in rows of several regions.
	cells := []table.Cell{
		{Row: []byte{1, 'a'}, Family: "r", Qualifier: []byte("x"), Timestamp: ts, Value: []byte("after")},
		{Row: []byte{9, 'b'}, Family: "r", Qualifier: []byte("y"), Timestamp: ts, Value: []byte("r only")},
		{Row: []byte{9, 'b'}, Family: "t", Qualifier: []byte("z"), Timestamp: ts, Value: []byte("and t")},
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	rows, err := tb.Get(ctx, "", [][]byte{{1, 'a'}, {9, 'b'}})
	if err != nil {
		t.Fatal(err)
	}
	got := func(r table.Row) string {
		var s []string
		for _, c := range r.Cells {
			s = append(s, fmt.Sprintf("%s:%s=%s", c.Family, c.Qualifier, c.Value))
		}
		return strings.Join(s, " ")
	}
	if got(rows[0]) != "r:x=after t:q=before" || got(rows[1]) != "r:y=r only t:z=and t" {
		t.Errorf("Get after AddFamily: %q, %q", got(rows[0]), got(rows[1]))
	}
	if err := db.AddFamily(ctx, name, added); !errors.Is(err, table.ErrFamilyExists) {
		t.Errorf("second AddFamily: %v, want ErrFamilyExists", err)
	}
	if err := db.AddFamily(ctx, name+"_absent", added); !errors.Is(err, table.ErrTableNotFound) {
		t.Errorf("AddFamily to an absent table: %v, want ErrTableNotFound", err)
	}
}

// TestCompact deletes cells, compacts the table and reads it back: what
// was kept stays, and the table serves at once.
func TestCompact(t *testing.T) {
	ctx, db := openTestDB(t)
	tb := saltedTable(t, ctx, db)
	ts := time.Now().UnixMilli()
	keep := table.Cell{Row: []byte{1, 'a'}, Family: "t", Qualifier: []byte("keep"), Timestamp: ts, Value: []byte("v")}
	gone := table.Cell{Row: []byte{1, 'a'}, Family: "t", Qualifier: []byte("gone"), Timestamp: ts, Value: []byte("v")}
	if err := tb.Put(ctx, []table.Cell{keep, gone}); err != nil {
		t.Fatal(err)
	}
	if err := tb.DeleteVersions(ctx, []table.Cell{gone}); err != nil {
		t.Fatal(err)
	}
	if err := tb.(table.Compacter).Compact(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := tb.Get(ctx, "", [][]byte{keep.Row})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Qualifier) != "keep" {
		t.Fatalf("after Compact the row holds %+v, want the kept cell alone", rows[0].Cells)
	}
}

// TestCompactFamily deletes every cell of one family and compacts that
// family: its files are rewritten into one (HBase writes a file even when
// no cell survives, to keep the store's sequence id), the other family's
// file stays as it was, and reads are unchanged.
func TestCompactFamily(t *testing.T) {
	ctx, db := openTestDB(t)
	name := fmt.Sprintf("hbasetable_compactfamily_%d", time.Now().UnixNano())
	fams := []table.FamilySpec{{Name: "t", NewVersionBehavior: true}, {Name: "r", NewVersionBehavior: true}}
	if err := db.CreateTable(ctx, table.TableSpec{Name: name, Families: fams}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := db.Client().DisableTable(ctx, name); err == nil {
			_ = db.Client().DeleteTable(ctx, name)
		}
	})
	tb, err := db.Table(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UnixMilli()
	var dead []table.Cell
	for i := range 100 {
		dead = append(dead, table.Cell{Row: []byte{'a', byte(i)}, Family: "r", Qualifier: []byte("q"), Timestamp: ts, Value: []byte("raw")})
	}
	keep := table.Cell{Row: []byte{'a', 0}, Family: "t", Qualifier: []byte("q"), Timestamp: ts, Value: []byte("chunk")}
	if err := tb.Put(ctx, append([]table.Cell{keep}, dead...)); err != nil {
		t.Fatal(err)
	}
	if err := db.Client().FlushTable(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := tb.DeleteVersions(ctx, dead); err != nil {
		t.Fatal(err)
	}
	files := func(family string) []string {
		t.Helper()
		f, err := db.Client().StoreFiles(ctx, name, family)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	rBefore, tBefore := files("r"), files("t")
	if len(rBefore) != 1 || len(tBefore) != 1 {
		t.Fatalf("store files after a flush: r %v, t %v; want one each", rBefore, tBefore)
	}
	if err := tb.(table.FamilyCompacter).CompactFamily(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	// CompactFamily flushed the delete markers into a second file of r and
	// queued the compaction: wait until one new file replaces both.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if f := files("r"); len(f) == 1 && f[0] != rBefore[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("family r has store files %v a minute after CompactFamily, want one new file in place of %v", files("r"), rBefore)
		}
	}
	if f := files("t"); !slices.Equal(f, tBefore) {
		t.Errorf("family t has store files %v after compacting family r, want its %v untouched", f, tBefore)
	}
	rows, err := tb.Get(ctx, "", [][]byte{keep.Row, dead[1].Row})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Value) != "chunk" || len(rows[1].Cells) != 0 {
		t.Fatalf("after CompactFamily: %+v, %+v; want the t cell alone, then nothing", rows[0].Cells, rows[1].Cells)
	}
}

// openTestDB opens the test HBase (skipping without one) for two minutes;
// it is closed after the test's other cleanups (tables dropped).
func openTestDB(t *testing.T) (context.Context, *DB) {
	t.Helper()
	zk := hbasetest.ZK(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	db, err := Open(ctx, Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot(), RPCTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return ctx, db
}

// TestInMemoryCompactionFamily: a family with in-memory compaction BASIC
// is created, and altered to, with the MSLAB off (its immutable segments
// indexed by arrays, not MSLAB chunks) and basicPipelineSegments; back to
// NONE, the MSLAB is on again and the pipeline setting gone. A BASIC
// family without them (an older adapter's) is described as such, and an
// alter brings them. The table serves throughout.
func TestInMemoryCompactionFamily(t *testing.T) {
	ctx, db := openTestDB(t)
	name := fmt.Sprintf("hbasetable_imc_%d", time.Now().UnixNano())
	spec := table.TableSpec{Name: name, Families: []table.FamilySpec{
		{Name: "r", BloomFilter: "ROW", NewVersionBehavior: true, InMemoryCompaction: "BASIC"},
		{Name: "t", BloomFilter: "ROW", NewVersionBehavior: true},
	}}
	if err := db.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tb, err := db.Table(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step, want string, noMSLAB bool, segments int, described string) {
		t.Helper()
		fams, err := db.c.TableFamilies(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			switch {
			case f.Name == "r" && (f.InMemoryCompaction != want || f.NoMSLAB != noMSLAB || f.PipelineSegments != segments):
				t.Errorf("%s: family r IN_MEMORY_COMPACTION %q, MSLAB off %v, pipeline segments %d; want %q, %v, %d",
					step, f.InMemoryCompaction, f.NoMSLAB, f.PipelineSegments, want, noMSLAB, segments)
			case f.Name == "t" && (f.InMemoryCompaction != "" || f.NoMSLAB || f.PipelineSegments != 0):
				t.Errorf("%s: family t IN_MEMORY_COMPACTION %q, MSLAB off %v, pipeline segments %d; want none", step, f.InMemoryCompaction, f.NoMSLAB, f.PipelineSegments)
			}
		}
		desc, err := db.Describe(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := desc.Families[0].InMemoryCompaction; desc.Families[0].Name != "r" || got != described {
			t.Errorf("%s: Describe: family %s InMemoryCompaction %q, want r %q", step, desc.Families[0].Name, got, described)
		}
		ts := time.Now().UnixMilli()
		c := table.Cell{Row: []byte(step), Family: "r", Qualifier: []byte("q"), Timestamp: ts, Value: []byte(want)}
		if err := tb.Put(ctx, []table.Cell{c}); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		rows, err := tb.Get(ctx, "r", [][]byte{c.Row})
		if err != nil || len(rows) != 1 || len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Value) != want {
			t.Fatalf("%s: Get %+v, %v", step, rows, err)
		}
	}
	check("created", "BASIC", true, basicPipelineSegments, "BASIC")
	spec.Families[0].InMemoryCompaction = "NONE"
	if err := db.AlterFamily(ctx, name, spec.Families[0]); err != nil {
		t.Fatal(err)
	}
	check("altered to NONE", "NONE", false, 0, "NONE")
	// As the adapter of 2026-11-27 made it: MSLAB off, HBase's pipeline.
	old := family(spec.Families[0])
	old.InMemoryCompaction, old.NoMSLAB = "BASIC", true
	if err := db.c.ModifyFamily(ctx, name, old); err != nil {
		t.Fatal(err)
	}
	check("BASIC without the pipeline setting", "BASIC", true, 0, "BASIC (pipeline segments the region server's)")
	spec.Families[0].InMemoryCompaction = "BASIC"
	if err := db.AlterFamily(ctx, name, spec.Families[0]); err != nil {
		t.Fatal(err)
	}
	check("altered back to BASIC", "BASIC", true, basicPipelineSegments, "BASIC")
}

func TestMemstoreSetting(t *testing.T) {
	for _, c := range []struct {
		f    hrpc.Family
		want string
	}{
		{hrpc.Family{}, ""},
		{hrpc.Family{InMemoryCompaction: "NONE"}, "NONE"},
		{hrpc.Family{InMemoryCompaction: "EAGER"}, "EAGER"},
		{hrpc.Family{InMemoryCompaction: "BASIC", NoMSLAB: true, PipelineSegments: basicPipelineSegments}, "BASIC"},
		{hrpc.Family{InMemoryCompaction: "BASIC", NoMSLAB: true}, "BASIC (pipeline segments the region server's)"},
		{hrpc.Family{InMemoryCompaction: "BASIC", PipelineSegments: 3}, "BASIC (MSLAB on, pipeline segments 3)"},
	} {
		if got := memstoreSetting(c.f); got != c.want {
			t.Errorf("memstoreSetting(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
}
