package pebbletable

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

func gateTable(t *testing.T, db *DB) table.Table {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateTable(ctx, table.TableSpec{Name: "g", Families: []table.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	tb, err := db.Table(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	var cells []table.Cell
	for i := range 100 {
		cells = append(cells, table.Cell{Row: fmt.Appendf(nil, "r%03d", i), Family: "f", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")})
	}
	if err := tb.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestCloseWaitsForScans: Close, while a scan is open (a query that
// outlived the HTTP server's grace at shutdown), refuses new calls and
// waits for the scan to end before it closes Pebble, which panics on use
// after its Close; the scan reads on meanwhile.
func TestCloseWaitsForScans(t *testing.T) {
	db, err := Open(t.TempDir(), Options{SweepInterval: -1, CloseWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tb := gateTable(t, db)
	sc := tb.Scan(ctx, table.ScanOptions{})
	if !sc.Next() {
		t.Fatalf("scan: %v", sc.Err())
	}
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	// New calls are refused once Close has begun.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := tb.Get(ctx, "", [][]byte{[]byte("r000")}); errors.Is(err, errClosed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still accepted 10 s after Close began")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a scan open", err)
	case <-time.After(50 * time.Millisecond):
	}
	n := 1
	for sc.Next() {
		n++
	}
	if err := sc.Err(); err != nil || n != 100 {
		t.Fatalf("the open scan read %d rows, %v; want 100", n, err)
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close after the scan ended: %v", err)
	}
}

// TestCloseGivesUpOnLeakedScan: a scan that never ends holds Close for
// CloseWait; then Close reports it and leaves Pebble open, so the scan
// still reads instead of panicking.
func TestCloseGivesUpOnLeakedScan(t *testing.T) {
	db, err := Open(t.TempDir(), Options{SweepInterval: -1, CloseWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tb := gateTable(t, db)
	sc := tb.Scan(context.Background(), table.ScanOptions{})
	if err := db.Close(); err == nil {
		t.Fatal("Close with a scan open returned nil")
	}
	n := 0
	for sc.Next() {
		n++
	}
	if err := sc.Err(); err != nil || n != 100 {
		t.Fatalf("the leaked scan read %d rows, %v; want 100", n, err)
	}
	_ = sc.Close()
}
