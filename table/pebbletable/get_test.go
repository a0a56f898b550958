package pebbletable

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/prom-hbase/prom-hbase/table"
)

// getAllocated returns the bytes one Get of keys allocates.
func getAllocated(t *testing.T, tb *tbl, keys [][]byte) (uint64, []table.Row) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rows, err := tb.Get(context.Background(), "", keys)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return after.TotalAlloc - before.TotalAlloc, rows
}

// TestGetAllocationFollowsResult is the regression test of issue 12,
// finding 2: Get sized its whole result from its first rows, so a wide first
// row followed by many small or missing ones allocated the wide row's size
// once per key (4,111 cells and a thousand keys: 191 MiB). What a Get
// allocates must follow what it returns, whatever the order of the rows.
func TestGetAllocationFollowsResult(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	tt, err := table.EnsureTable(context.Background(), db, table.TableSpec{Name: "wide", Families: []table.FamilySpec{{Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	tb := tt.(*tbl)
	const wide, keys = 4111, 1000
	cells := make([]table.Cell, 0, wide+keys)
	for i := range wide {
		cells = append(cells, table.Cell{Row: []byte("wide"), Family: "t", Qualifier: binary.BigEndian.AppendUint32(nil, uint32(i)),
			Timestamp: 1700000000000, Value: make([]byte, 16)})
	}
	ks := [][]byte{[]byte("wide")}
	for i := range keys - 1 {
		row := binary.BigEndian.AppendUint32([]byte("narrow"), uint32(i))
		ks = append(ks, row)
		if i%2 == 0 {
			cells = append(cells, table.Cell{Row: row, Family: "t", Qualifier: []byte("q"), Timestamp: 1700000000000, Value: make([]byte, 16)})
		}
	}
	if err := tb.Put(context.Background(), cells); err != nil {
		t.Fatal(err)
	}
	// The result's own size: its cells and their bytes.
	var resultBytes uint64
	alloc, rows := getAllocated(t, tb, ks)
	n := 0
	for _, r := range rows {
		n += len(r.Cells)
		for _, c := range r.Cells {
			resultBytes += uint64(len(c.Qualifier) + len(c.Value))
		}
	}
	resultBytes += uint64(n)*uint64(cellSize) + uint64(len(rows))*uint64(rowSize)
	if n != wide+keys/2 {
		t.Fatalf("Get returned %d cells, want %d", n, wide+keys/2)
	}
	// Amortized growth may double the result and an iterator costs some
	// tens of KiB: four times the result plus 1 MiB is generous, and far
	// below the old cost (wide row times keys: over 250 MiB).
	if limit := 4*resultBytes + 1<<20; alloc > limit {
		t.Fatalf("Get of a %d-cell row and %d small ones allocated %d bytes, %.1f times its %d-byte result (limit %d)",
			wide, keys-1, alloc, float64(alloc)/float64(resultBytes), resultBytes, limit)
	}
	t.Logf("Get allocated %d bytes for a %d-byte result", alloc, resultBytes)
}

const (
	cellSize = unsafe.Sizeof(table.Cell{})
	rowSize  = unsafe.Sizeof(table.Row{})
)
