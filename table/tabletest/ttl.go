package tabletest

import (
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

func testTTL(t *testing.T, s *suite) {
	// Family t keeps cells for an hour, family f forever. Cells are written
	// with timestamps two hours old: expired from the start, on any backend,
	// without waiting or touching its clock.
	_, tb := s.newTable(t, table.FamilySpec{Name: "f"}, table.FamilySpec{Name: "t", TTL: time.Hour})
	ctx := t.Context()
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	fresh := recentTS()
	put(t, tb,
		cell("r1", "t", "a-old", old, "expired"),
		cell("r1", "t", "b-fresh", fresh, "kept"),
		cell("r1", "f", "old", old, "forever"),
		cell("r2", "t", "old", old, "expired"),
		cell("r3", "t", "counter", old, string(counterValue(41))),
		cell("r3", "t", "lock", old, "held"),
	)
	r1 := rowsOf(cell("r1", "f", "old", old, "forever"), cell("r1", "t", "b-fresh", fresh, "kept"))
	rows := get(t, tb, "", []byte("r1"), []byte("r2"))
	checkRows(t, "Get with expired cells", rows[:1], r1)
	if len(rows[1].Cells) != 0 {
		t.Errorf("Get of a row of expired cells:%s", rowsString(rows[1:]))
	}
	checkRows(t, "Get of family t", get(t, tb, "t", []byte("r1")), rowsOf(cell("r1", "t", "b-fresh", fresh, "kept")))
	checkRows(t, "Scan with expired cells", scan(t, tb, table.ScanOptions{Stop: []byte("r3")}), r1)
	checkRows(t, "FirstCellOnly scan of family t", scan(t, tb, table.ScanOptions{Family: "t", FirstCellOnly: true}),
		rowsOf(cell("r1", "t", "b-fresh", fresh, "kept")))

	// Expired cells are absent to the atomic operations too.
	if n, err := tb.Increment(ctx, []byte("r3"), "t", []byte("counter"), 1); err != nil || n != 1 {
		t.Errorf("Increment of an expired counter: %d, %v; want 1", n, err)
	}
	ok, err := tb.CheckAndPut(ctx, []byte("r3"), "t", []byte("lock"), nil, []table.Cell{cell("r3", "t", "lock", table.LatestTimestamp, "mine")})
	if err != nil || !ok {
		t.Errorf("CheckAndPut expecting an expired cell absent: wrote %v, %v", ok, err)
	}
}
