package pebbletable

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestScanFamilySkipsOthers: a scan of one family returns exactly its
// cells, whether the other families' cells of a row come before or after
// them and however many there are (stepped over one by one, or sought
// past: skipFamily), rows holding none of the family included.
func TestScanFamilySkipsOthers(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	ctx := context.Background()
	tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "fams", Families: []table.FamilySpec{{Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddFamily(ctx, "fams", table.FamilySpec{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := db.AddFamily(ctx, "fams", table.FamilySpec{Name: "a"}); err != nil { // numbered after b and c
		t.Fatal(err)
	}
	counts := []int{0, 1, 3, 4, 5, 9}
	want := map[string][]string{}
	var cells []table.Cell
	row := 0
	for _, na := range counts {
		for _, nb := range counts {
			for _, nc := range counts {
				r := fmt.Sprintf("row%04d", row)
				row++
				for fam, n := range map[string]int{"a": na, "b": nb, "c": nc} {
					for q := range n {
						cells = append(cells, table.Cell{Row: []byte(r), Family: fam, Qualifier: []byte{byte(q)}, Timestamp: 1, Value: []byte(fam)})
						want[fam] = append(want[fam], fmt.Sprintf("%s/%s/%d", r, fam, q))
					}
				}
			}
		}
	}
	if err := tt.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	for _, flush := range []bool{false, true} {
		if flush {
			if err := db.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		for _, fam := range []string{"a", "b", "c"} {
			sc := tt.Scan(ctx, table.ScanOptions{Family: fam})
			var got []string
			for sc.Next() {
				for _, c := range sc.At().Cells {
					got = append(got, fmt.Sprintf("%s/%s/%d", c.Row, c.Family, c.Qualifier[0]))
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			_ = sc.Close()
			slices.Sort(want[fam])
			if !slices.Equal(got, want[fam]) {
				t.Errorf("flushed %v, scan of family %s: %d cells, want %d", flush, fam, len(got), len(want[fam]))
			}
		}
	}
}
