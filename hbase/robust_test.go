package hbase

import (
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// checkAllRows scans the table and wants exactly rows 0..n-1, once each.
func checkAllRows(t *testing.T, c *Client, table string, n int) {
	t.Helper()
	sc := c.Scan(testCtx(t), table, &hrpc.Scan{}, ScanOptions{RowsPerCall: 500})
	defer sc.Close()
	i := 0
	for sc.Next() {
		if got := string(sc.At().Key); got != rowKey(i) {
			t.Fatalf("row %d is %q", i, got)
		}
		i++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("%d rows, want %d", i, n)
	}
}

// TestWritesAcrossSplitAndMove writes batches while a region splits and
// another closes and reopens (what a move does): every batch must succeed
// and every row land once.
func TestWritesAcrossSplitAndMove(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, "row002000")
	ctx := testCtx(t)
	const batches, perBatch = 16, 250
	admin := make(chan error, 1)
	for b := 0; b < batches; b++ {
		switch b {
		case 4:
			// Split the first region in the middle while writes go on.
			go func() { admin <- c.SplitRegion(ctx, table, []byte(rowKey(1000))) }()
		case 10:
			if err := <-admin; err != nil {
				t.Fatalf("split: %v", err)
			}
			// Close and reopen the region holding the rows being written.
			go func() { admin <- c.ReopenRegion(ctx, table, []byte(rowKey(2600))) }()
		}
		var muts []*hrpc.Mutation
		for i := b * perBatch; i < (b+1)*perBatch; i++ {
			muts = append(muts, put(rowKey(i), "f", "q", fmt.Sprint(i)))
		}
		if err := c.MutateBatch(ctx, table, muts); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
	}
	if err := <-admin; err != nil {
		t.Fatalf("reopen: %v", err)
	}
	regions, err := c.Regions(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(regions) != 3 {
		t.Fatalf("%d regions after one split of two, want 3: %v", len(regions), regions)
	}
	checkAllRows(t, c, table, batches*perBatch)
	// The cached parent region must have been answered with an error and
	// relocated: otherwise this test did not test what it says.
	if st := c.Stats(); st.Relocations == 0 {
		t.Errorf("no relocation during a split and a reopen: %+v", st)
	}
	t.Logf("client stats: %+v", c.Stats())
}

// TestScanAcrossSplitAndMove scans while the region being read splits and
// later closes and reopens: the scan must return every row once, in order.
func TestScanAcrossSplitAndMove(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	const n = 3000
	var muts []*hrpc.Mutation
	for i := 0; i < n; i++ {
		muts = append(muts, put(rowKey(i), "f", "q", fmt.Sprint(i)))
	}
	if err := c.MutateBatch(ctx, table, muts); err != nil {
		t.Fatal(err)
	}
	sc := c.Scan(ctx, table, &hrpc.Scan{}, ScanOptions{RowsPerCall: 100})
	defer sc.Close()
	i := 0
	for sc.Next() {
		if got := string(sc.At().Key); got != rowKey(i) {
			t.Fatalf("row %d is %q", i, got)
		}
		i++
		switch i {
		case 550:
			// Split ahead of the scan, in the region it is reading.
			if err := c.SplitRegion(ctx, table, []byte(rowKey(1500))); err != nil {
				t.Fatalf("split: %v", err)
			}
		case 1750:
			// Close and reopen the daughter being read.
			if err := c.ReopenRegion(ctx, table, []byte(rowKey(1750))); err != nil {
				t.Fatalf("reopen: %v", err)
			}
		case 2500:
			// A move to the one server there is: HBase skips it, but
			// the call must be accepted.
			r, err := c.RegionAt(ctx, table, []byte(rowKey(2500)))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.MoveRegion(ctx, table, []byte(rowKey(2500)), r.Addr); err != nil {
				t.Fatalf("move: %v", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("after %d rows: %v", i, err)
	}
	if i != n {
		t.Fatalf("%d rows, want %d", i, n)
	}
	if st := c.Stats(); st.Relocations < 2 {
		t.Errorf("scanner reopened %d times across a split and a reopen, want 2 or more", st.Relocations)
	}
	t.Logf("client stats: %+v", c.Stats())
}

func TestAdminFlushCompactDrop(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, "row000050")
	ctx := testCtx(t)
	for round := 0; round < 2; round++ {
		var muts []*hrpc.Mutation
		for i := 0; i < 100; i++ {
			muts = append(muts, put(rowKey(i), "f", "q", fmt.Sprint(round)))
		}
		if err := c.MutateBatch(ctx, table, muts); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushTable(ctx, table); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.MajorCompactTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	cells, err := c.Get(ctx, table, &hrpc.Get{Row: []byte(rowKey(70))})
	if err != nil || len(cells) != 1 || string(cells[0].Value) != "1" {
		t.Fatalf("after compaction: %v %+v", err, cells)
	}
	checkAllRows(t, c, table, 100)

	name := table + "_drop"
	want := hrpc.Family{Name: "f", MaxVersions: 3, TTL: time.Hour, BloomFilter: "ROWCOL", DataBlockEncoding: "FAST_DIFF", Compression: "GZ"}
	if err := c.CreateTable(ctx, name, []hrpc.Family{want}, nil); err != nil {
		t.Fatal(err)
	}
	fams, err := c.TableFamilies(ctx, name)
	if err != nil || len(fams) != 1 || fams[0] != want {
		t.Fatalf("families of %s: %+v %v; want %+v", name, fams, err, want)
	}
	if err := c.Mutate(ctx, name, put("r", "f", "q", "v")); err != nil {
		t.Fatal(err)
	}
	if err := c.DisableTable(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTable(ctx, name); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.TableExists(ctx, name); err != nil || ok {
		t.Fatalf("exists after delete: %v %v", ok, err)
	}
	if _, err := c.Get(ctx, name, &hrpc.Get{Row: []byte("r")}); !IsTableNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}
