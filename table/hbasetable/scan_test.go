package hbasetable

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestGroupRangesByRegion checks that ranges held by one region share a
// group and ranges of different regions do not: what makes a multi-range
// scan one region scanner instead of one per range.
func TestGroupRangesByRegion(t *testing.T) {
	ctx, db := openTestDB(t)
	name := "hbasetable_groups_" + strings.ToLower(rand.Text()[:8])
	spec := table.TableSpec{Name: name, Families: []table.FamilySpec{{Name: "f"}},
		SplitKeys: [][]byte{[]byte("b"), []byte("c")}}
	if err := db.CreateTable(ctx, spec); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		_ = db.c.DisableTable(context.Background(), name)
		_ = db.c.DeleteTable(context.Background(), name)
	})
	tb, err := db.Table(ctx, name)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	r := func(a, b string) table.RowRange { return table.RowRange{Start: []byte(a), Stop: []byte(b)} }
	ranges := []table.RowRange{r("a1", "a2"), r("a3", "a4"), r("a5", "b1"), r("b2", "b3"), r("c", "c1"), r("c2", "c3")}
	groups, err := tb.(*Table).GroupRanges(ctx, ranges)
	if err != nil {
		t.Fatalf("GroupRanges: %v", err)
	}
	// a5..b1 crosses into region [b, c) and stays in the group of its start.
	want := "[[{a1 a2} {a3 a4} {a5 b1}] [{b2 b3}] [{c c1} {c2 c3}]]"
	if got := fmt.Sprintf("%s", groups); got != want {
		t.Errorf("GroupRanges = %s, want %s", got, want)
	}
}
