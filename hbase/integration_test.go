package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

var tableSeq atomic.Int64

// testClient connects to the test HBase (or skips).
func testClient(t testing.TB) *Client {
	t.Helper()
	c := New(Config{ZooKeeper: hbasetest.ZK(t), ZKRoot: hbasetest.ZKRoot(), RPCTimeout: 20 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// testTable creates a table with a name unique to this run and test, so
// tests can run again on the same HBase, and drops it afterwards.
func testTable(t testing.TB, c *Client, splits ...string) string {
	t.Helper()
	name := fmt.Sprintf("t_%s_%d_%d", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), time.Now().UnixNano()%1e9, tableSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var keys [][]byte
	for _, s := range splits {
		keys = append(keys, []byte(s))
	}
	if err := c.CreateTable(ctx, name, []hrpc.Family{{Name: "f", MaxVersions: 1, BloomFilter: "ROW", DataBlockEncoding: "FAST_DIFF"}, {Name: "g"}}, keys); err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := c.DisableTable(ctx, name); err != nil {
			if !IsTableNotFound(err) { // a test may have dropped it
				t.Logf("disable %s: %v", name, err)
			}
			return
		}
		if err := c.DeleteTable(ctx, name); err != nil {
			t.Logf("delete %s: %v", name, err)
		}
	})
	return name
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(row, fam, qual, val string) *hrpc.Mutation {
	return &hrpc.Mutation{Type: hrpc.MutationPut, Row: []byte(row), Cells: []hrpc.MutationCell{{
		Family: []byte(fam), Qualifier: []byte(qual), Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypePut, Value: []byte(val)}}}
}

func TestPutGetDelete(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	if err := c.Mutate(ctx, table, put("r1", "f", "q1", "v1")); err != nil {
		t.Fatal(err)
	}
	m := put("r1", "g", "q2", "v2")
	m.Cells[0].Timestamp = 12345
	if err := c.Mutate(ctx, table, m); err != nil {
		t.Fatal(err)
	}
	cells, err := c.Get(ctx, table, &hrpc.Get{Row: []byte("r1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || string(cells[0].Value) != "v1" || string(cells[1].Value) != "v2" || cells[1].Timestamp != 12345 {
		t.Fatalf("got %+v", cells)
	}
	cells, err = c.Get(ctx, table, &hrpc.Get{Row: []byte("r1"), Families: [][]byte{[]byte("g")}})
	if err != nil || len(cells) != 1 || string(cells[0].Qualifier) != "q2" {
		t.Fatalf("family get: %v %+v", err, cells)
	}
	cells, err = c.Get(ctx, table, &hrpc.Get{Row: []byte("absent")})
	if err != nil || len(cells) != 0 {
		t.Fatalf("absent row: %v %+v", err, cells)
	}
	del := &hrpc.Mutation{Type: hrpc.MutationDelete, Row: []byte("r1"), Cells: []hrpc.MutationCell{{
		Family: []byte("f"), Qualifier: []byte("q1"), Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypeDeleteColumn}}}
	if err := c.Mutate(ctx, table, del); err != nil {
		t.Fatal(err)
	}
	cells, err = c.Get(ctx, table, &hrpc.Get{Row: []byte("r1")})
	if err != nil || len(cells) != 1 || string(cells[0].Family) != "g" {
		t.Fatalf("after delete: %v %+v", err, cells)
	}
	if err := c.Mutate(ctx, table, &hrpc.Mutation{Type: hrpc.MutationDelete, Row: []byte("r1")}); err != nil {
		t.Fatal(err)
	}
	cells, err = c.Get(ctx, table, &hrpc.Get{Row: []byte("r1")})
	if err != nil || len(cells) != 0 {
		t.Fatalf("after row delete: %v %+v", err, cells)
	}
}

func TestErrors(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	_, err := c.Get(ctx, "no_such_table_xyz", &hrpc.Get{Row: []byte("r")})
	if !IsTableNotFound(err) {
		t.Fatalf("get from absent table: %v", err)
	}
	err = c.Mutate(ctx, table, put("r", "nosuchfam", "q", "v"))
	var x *Exception
	if !errors.As(err, &x) || !strings.Contains(x.Class, "NoSuchColumnFamilyException") {
		t.Fatalf("put to absent family: %v", err)
	}
	if ok, err := c.TableExists(ctx, table); err != nil || !ok {
		t.Fatalf("exists(%s) = %v, %v", table, ok, err)
	}
	if ok, err := c.TableExists(ctx, "no_such_table_xyz"); err != nil || ok {
		t.Fatalf("exists(absent) = %v, %v", ok, err)
	}
	err = c.CreateTable(ctx, table, []hrpc.Family{{Name: "f"}}, nil)
	if !errors.As(err, &x) || x.Class != hrpc.TableExists {
		t.Fatalf("create existing: %v", err)
	}
}

// TestTableStateInMeta: a table's state as hbase:meta holds it, read
// without the master, follows the master's (enabled, disabled), and an
// absent table, or a deleted one, has none.
func TestTableStateInMeta(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	check := func(name string, want pb.TableState_State, wantFound bool) {
		t.Helper()
		st, found, err := c.TableStateInMeta(ctx, name)
		if err != nil || found != wantFound || found && st != want {
			t.Fatalf("state of %s in hbase:meta = %v, found %v, %v; want %v, found %v", name, st, found, err, want, wantFound)
		}
	}
	check(table, pb.TableState_ENABLED, true)
	check("no_such_table_xyz", 0, false)
	if err := c.DisableTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	check(table, pb.TableState_DISABLED, true)
	if err := c.DeleteTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	check(table, 0, false)
}

func TestIncrementCheckAndPut(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	for i, want := range []int64{5, 8, -2} {
		got, err := c.Increment(ctx, table, []byte("ctr"), []byte("f"), []byte("n"), []int64{5, 3, -10}[i])
		if err != nil || got != want {
			t.Fatalf("increment %d: %d, %v; want %d", i, got, err, want)
		}
	}
	ok, err := c.CheckAndPut(ctx, table, put("k", "f", "q", "a"), []byte("f"), []byte("q"), nil)
	if err != nil || !ok {
		t.Fatalf("put if absent: %v %v", ok, err)
	}
	ok, err = c.CheckAndPut(ctx, table, put("k", "f", "q", "b"), []byte("f"), []byte("q"), nil)
	if err != nil || ok {
		t.Fatalf("put if absent, present: %v %v", ok, err)
	}
	ok, err = c.CheckAndPut(ctx, table, put("k", "f", "q", "c"), []byte("f"), []byte("q"), []byte("x"))
	if err != nil || ok {
		t.Fatalf("put if x: %v %v", ok, err)
	}
	ok, err = c.CheckAndPut(ctx, table, put("k", "f", "q", "c"), []byte("f"), []byte("q"), []byte("a"))
	if err != nil || !ok {
		t.Fatalf("put if a: %v %v", ok, err)
	}
	cells, err := c.Get(ctx, table, &hrpc.Get{Row: []byte("k")})
	if err != nil || len(cells) != 1 || string(cells[0].Value) != "c" {
		t.Fatalf("get: %v %+v", err, cells)
	}
}

func rowKey(i int) string { return fmt.Sprintf("row%06d", i) }

func TestBatchAndScanAcrossRegions(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, "row000250", "row000500", "row000750")
	ctx := testCtx(t)
	const n = 1000
	var muts []*hrpc.Mutation
	for i := 0; i < n; i++ {
		m := put(rowKey(i), "f", "a", fmt.Sprint(i))
		m.Cells = append(m.Cells, hrpc.MutationCell{Family: []byte("g"), Qualifier: []byte("b"), Timestamp: int64(1000 + i), Type: hrpc.TypePut, Value: []byte("x")})
		muts = append(muts, m)
	}
	if err := c.MutateBatch(ctx, table, muts); err != nil {
		t.Fatal(err)
	}
	// Batched get, including rows that do not exist, across regions.
	var gets []*hrpc.Get
	for _, i := range []int{999, 0, 250, 249, 1234, 500} {
		gets = append(gets, &hrpc.Get{Row: []byte(rowKey(i))})
	}
	res, err := c.GetBatch(ctx, table, gets)
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range []int{999, 0, 250, 249, 1234, 500} {
		if i >= n {
			if len(res[k]) != 0 {
				t.Fatalf("row %d: %+v", i, res[k])
			}
			continue
		}
		if len(res[k]) != 2 || string(res[k][0].Value) != fmt.Sprint(i) || res[k][1].Timestamp != int64(1000+i) {
			t.Fatalf("row %d: %+v", i, res[k])
		}
	}
	// Full scan with small calls: crosses every region boundary.
	sc := c.Scan(ctx, table, &hrpc.Scan{}, ScanOptions{RowsPerCall: 37})
	i := 0
	for sc.Next() {
		r := sc.At()
		if string(r.Key) != rowKey(i) || len(r.Cells) != 2 {
			t.Fatalf("row %d: %q with %d cells", i, r.Key, len(r.Cells))
		}
		i++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	if i != n {
		t.Fatalf("scanned %d rows, want %d", i, n)
	}
	// A bounded scan with a family and a filter.
	sc = c.Scan(ctx, table, &hrpc.Scan{Start: []byte(rowKey(200)), Stop: []byte(rowKey(800)), Families: [][]byte{[]byte("f")},
		Filter: hrpc.FilterList{Op: 1, Filters: []hrpc.Filter{
			hrpc.RowFilter{Op: 2, Comparator: hrpc.RegexStringComparator{Pattern: `^row000[0-9][0-9]7$`}},
			hrpc.KeyOnlyFilter{}}}}, ScanOptions{RowsPerCall: 5})
	var got []string
	for sc.Next() {
		r := sc.At()
		if len(r.Cells) != 1 || len(r.Cells[0].Value) != 0 {
			t.Fatalf("row %q: %+v", r.Key, r.Cells)
		}
		got = append(got, string(r.Key))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 60 || got[0] != "row000207" || got[59] != "row000797" {
		t.Fatalf("filtered scan: %d rows %v", len(got), got)
	}
	// Early close leaves nothing broken: the next scan works.
	sc = c.Scan(ctx, table, &hrpc.Scan{}, ScanOptions{RowsPerCall: 10})
	if !sc.Next() || !bytes.Equal(sc.At().Key, []byte(rowKey(0))) {
		t.Fatalf("first row: %v", sc.Err())
	}
	id, seq, conn := sc.id, sc.seq, sc.conn
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if sc.Next() {
		t.Fatal("Next after Close")
	}
	// The server-side scanner is closed: the next call it would have
	// served gets no rows (HBase remembers recently closed scanners and
	// answers an error or "no more results").
	next := hrpc.NewScanNextCall(id, 10, seq, hrpc.NormalPriority)
	if _, err = conn.Call(ctx, next); err == nil {
		if r := next.Response.(*pb.ScanResponse); len(r.GetCellsPerResult()) > 0 || r.GetMoreResults() {
			t.Fatalf("scanner still open after Close: %v", r)
		}
	}
}

func TestBatchPerActionErrors(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, "m")
	ctx := testCtx(t)
	muts := []*hrpc.Mutation{put("a", "f", "q", "1"), put("b", "nosuchfam", "q", "2"), put("x", "f", "q", "3"), put("y", "nosuchfam", "q", "4")}
	err := c.MutateBatch(ctx, table, muts)
	var be *BatchError
	if !errors.As(err, &be) || be.Failed != 2 || be.Errs[0] != nil || be.Errs[1] == nil || be.Errs[2] != nil || be.Errs[3] == nil {
		t.Fatalf("got %v", err)
	}
	var x *Exception
	if !errors.As(be.Errs[1], &x) || !strings.HasSuffix(x.Class, "NoSuchColumnFamilyException") {
		t.Fatalf("action 1: %v", be.Errs[1])
	}
	res, err := c.GetBatch(ctx, table, []*hrpc.Get{{Row: []byte("a")}, {Row: []byte("b")}, {Row: []byte("x")}})
	if err != nil || len(res[0]) != 1 || len(res[1]) != 0 || len(res[2]) != 1 {
		t.Fatalf("after a partly failed batch: %v %v", err, res)
	}
}

// TestConnectionReplaced closes the client's connection under it: the next
// call must dial a new one, never reuse the closed one.
func TestConnectionReplaced(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	if err := c.Mutate(ctx, table, put("r", "f", "q", "v")); err != nil {
		t.Fatal(err)
	}
	r, err := c.locate(ctx, table, []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := c.conn(ctx, r.Addr, hrpc.ClientService)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	cells, err := c.Get(ctx, table, &hrpc.Get{Row: []byte("r")})
	if err != nil || len(cells) != 1 {
		t.Fatalf("get after the connection closed: %v %v", err, cells)
	}
	now, err := c.conn(ctx, r.Addr, hrpc.ClientService)
	if err != nil || now == old || now.Err() != nil {
		t.Fatalf("connection not replaced: %v", err)
	}
}

// TestScanPartialsAndFilters reads rows larger than the bytes allowed per
// call, which the server sends in parts, and checks the filters that the
// table layer does not use.
func TestScanPartialsAndFilters(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, "row000005")
	ctx := testCtx(t)
	const rows, cellsPerRow = 10, 50
	var muts []*hrpc.Mutation
	for i := 0; i < rows; i++ {
		m := &hrpc.Mutation{Type: hrpc.MutationPut, Row: []byte(rowKey(i))}
		for j := 0; j < cellsPerRow; j++ {
			m.Cells = append(m.Cells, hrpc.MutationCell{Family: []byte("f"), Qualifier: []byte(fmt.Sprintf("q%03d", j)),
				Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypePut, Value: bytes.Repeat([]byte{byte(j)}, 100)})
		}
		muts = append(muts, m)
	}
	if err := c.MutateBatch(ctx, table, muts); err != nil {
		t.Fatal(err)
	}
	sc := c.Scan(ctx, table, &hrpc.Scan{}, ScanOptions{BytesPerCall: 1000, RowsPerCall: 3})
	n := 0
	for sc.Next() {
		r := sc.At()
		if string(r.Key) != rowKey(n) || len(r.Cells) != cellsPerRow {
			t.Fatalf("row %d: %q with %d cells", n, r.Key, len(r.Cells))
		}
		for j, cell := range r.Cells {
			if string(cell.Qualifier) != fmt.Sprintf("q%03d", j) || cell.Value[0] != byte(j) || string(cell.Row) != rowKey(n) {
				t.Fatalf("row %d cell %d: %q", n, j, cell.Qualifier)
			}
		}
		n++
	}
	if err := sc.Err(); err != nil || n != rows {
		t.Fatalf("%d rows, %v", n, err)
	}
	sc.Close()
	if c.Stats().Partials == 0 {
		t.Error("rows of 5 KB read 1 KB at a time came whole: the partial path went untested")
	}

	keys := func(f hrpc.Filter) []string {
		sc := c.Scan(ctx, table, &hrpc.Scan{Filter: f}, ScanOptions{})
		defer sc.Close()
		var out []string
		for sc.Next() {
			out = append(out, string(sc.At().Key))
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := keys(hrpc.FilterList{Op: 1, Filters: []hrpc.Filter{hrpc.PrefixFilter{Prefix: []byte("row00000")}, hrpc.FirstKeyOnlyFilter{}}}); len(got) != 10 {
		t.Errorf("prefix filter: %v", got)
	}
	got := keys(hrpc.MultiRowRangeFilter{Ranges: []hrpc.RowRange{
		{Start: []byte(rowKey(1)), StartInclusive: true, Stop: []byte(rowKey(3))},
		{Start: []byte(rowKey(6)), StartInclusive: false, Stop: []byte(rowKey(8)), StopInclusive: true},
	}})
	if strings.Join(got, ",") != strings.Join([]string{rowKey(1), rowKey(2), rowKey(7), rowKey(8)}, ",") {
		t.Errorf("multi-row-range filter: %v", got)
	}
	got = keys(hrpc.FuzzyRowFilter{Keys: []hrpc.FuzzyKey{{Key: []byte("row00000\x00"), Mask: []byte{0, 0, 0, 0, 0, 0, 0, 0, 1}}}})
	if len(got) != 10 {
		t.Errorf("fuzzy filter: %v", got)
	}
}
