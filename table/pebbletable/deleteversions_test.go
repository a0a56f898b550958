package pebbletable

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestDeleteVersionsRuns: cells of one row adjacent in key order go as one
// range deletion (a scan then finds the cells it would step over covered by
// it), and nothing else goes with them: a cell between them whose version
// was replaced stays and parts the run, the row's other family and the
// neighbouring rows stay, and a short run goes as point deletions.
func TestDeleteVersionsRuns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), Options{SweepInterval: -1})
	tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "d", Families: []table.FamilySpec{{Name: "r"}, {Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	tb := tt.(*tbl)
	q := func(i int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(i)) }
	var puts, del []table.Cell
	for _, row := range []string{"a", "b", "c"} {
		for i := range 100 {
			puts = append(puts, table.Cell{Row: []byte(row), Family: "r", Qualifier: q(i), Timestamp: 1000, Value: []byte{byte(i)}})
		}
		puts = append(puts, table.Cell{Row: []byte(row), Family: "t", Qualifier: q(0), Timestamp: 1000, Value: []byte("chunk")})
	}
	// Row b's cell 50 was written again since the deleter read it.
	puts = append(puts, table.Cell{Row: []byte("b"), Family: "r", Qualifier: q(50), Timestamp: 2000, Value: []byte("late")})
	if err := tb.Put(ctx, puts); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		del = append(del, table.Cell{Row: []byte("b"), Family: "r", Qualifier: q(i), Timestamp: 1000})
	}
	// Row c: a run of 10, below minRangeRun, and one of 30, parted by a
	// cell not asked for (20).
	for i := range 10 {
		del = append(del, table.Cell{Row: []byte("c"), Family: "r", Qualifier: q(i), Timestamp: 1000})
	}
	for i := 21; i < 51; i++ {
		del = append(del, table.Cell{Row: []byte("c"), Family: "r", Qualifier: q(i), Timestamp: 1000})
	}
	if err := tb.DeleteVersions(ctx, del); err != nil {
		t.Fatal(err)
	}

	got := map[string][]string{}
	sc := tb.Scan(ctx, table.ScanOptions{})
	for sc.Next() {
		r := sc.At()
		for _, c := range r.Cells {
			got[string(r.Key)] = append(got[string(r.Key)], fmt.Sprintf("%s/%d", c.Family, binary.BigEndian.Uint16(c.Qualifier)))
		}
	}
	if err := errors.Join(sc.Err(), sc.Close()); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 101, "b": 2, "c": 101 - 40}
	for row, n := range want {
		if len(got[row]) != n {
			t.Errorf("row %s: %d cells left, want %d: %v", row, len(got[row]), n, got[row])
		}
	}
	if fmt.Sprint(got["b"]) != "[r/50 t/0]" {
		t.Errorf("row b keeps %v, want the late cell r/50 and the chunk t/0", got["b"])
	}
	for _, c := range []int{10, 20, 51, 99} {
		if !slices.Contains(got["c"], fmt.Sprintf("r/%d", c)) {
			t.Errorf("row c lost r/%d, which was not asked for: %v", c, got["c"])
		}
	}

	// Row b's two runs (0-49, 51-99) are range deletions: reading the row
	// meets its deleted cells as covered by them. Row c's run of 30 is one
	// as well, its run of 10 point deletions.
	covered := func(row string) uint64 {
		lo := appendRowPrefix(nil, tb.id, []byte(row))
		hi := append(append([]byte(nil), lo[:len(lo)-1]...), pastRow)
		it, err := tb.db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
		}
		return it.Stats().InternalStats.PointsCoveredByRangeTombstones
	}
	if n := covered("b"); n != 99 {
		t.Errorf("row b: %d deleted cells covered by range deletions, want 99", n)
	}
	if n := covered("c"); n != 30 {
		t.Errorf("row c: %d deleted cells covered by range deletions, want the run of 30", n)
	}
	if n := covered("a"); n != 0 {
		t.Errorf("row a: %d cells covered by range deletions, want 0", n)
	}
}

// FuzzDeleteVersionsModel runs puts, DeleteVersions and scans, decoded from
// the fuzz input, against a table and a map model: rows with up to 32
// qualifiers a family, so that deletions of adjacent cells reach
// minRangeRun and go as range deletions, and asked for with right and
// wrong versions, of cells present and absent, of one row or two, in order
// or not. A DeleteVersions deletes exactly the cells whose version it
// names, whatever way it goes.
func FuzzDeleteVersionsModel(f *testing.F) {
	f.Add([]byte("\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0\x01\x1f\x00\xff\xff\x02"))
	f.Add([]byte("\x00\x01\x00\x02\x00\x03\x01\x00\x1f\xaa\xaa\xaa\xaa\x02\x01\x40\x20\xff\x00\xf0\x0f"))
	db := openTest(f, f.TempDir(), Options{SweepInterval: -1})
	rows := []string{"a", "a\x00", "a\x00\x01", "b", "\xff"}
	n := 0
	f.Fuzz(func(t *testing.T, prog []byte) {
		ctx := context.Background()
		n++
		tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: fmt.Sprint("dv", n), Families: []table.FamilySpec{{Name: "r"}, {Name: "t"}}})
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]int64{} // a cell's version, by modelKey
		pr := progReader(prog)
		next := pr.next
		fam := func(b byte) string { return []string{"r", "t"}[b&1] }
		for len(pr) > 0 {
			op := next()
			switch op % 3 {
			case 0: // put a run of cells of one row and family
				row, f, first, count := rows[int(op>>2)%len(rows)], fam(op>>5), next()%32, int(next()%33)
				ts := int64(1 + op>>6&1)
				var cells []table.Cell
				for q := first; q < 32 && int(q-first) < count; q++ {
					cells = append(cells, table.Cell{Row: []byte(row), Family: f, Qualifier: []byte{q}, Timestamp: ts, Value: []byte{q}})
					model[modelKey(row, f, q)] = ts
				}
				if err := tt.Put(ctx, cells); err != nil {
					t.Fatal(err)
				}
			case 1: // delete versions: one or two rows, a range of qualifiers each
				var cells []table.Cell
				for range 1 + int(op>>2&1) {
					row, f, first, count, mask := rows[int(next())%len(rows)], fam(op>>3), next()%32, int(next()%33), next()
					for q := first; q < 32 && int(q-first) < count; q++ {
						// The version asked for: mostly 1, 2 where the mask says.
						ts := int64(1 + (mask>>(q%8))&1&(op>>4))
						cells = append(cells, table.Cell{Row: []byte(row), Family: f, Qualifier: []byte{q}, Timestamp: ts})
					}
				}
				if op&0x80 != 0 {
					slices.Reverse(cells)
				}
				if err := tt.DeleteVersions(ctx, cells); err != nil {
					t.Fatal(err)
				}
				for _, c := range cells {
					k := modelKey(string(c.Row), c.Family, c.Qualifier[0])
					if v, ok := model[k]; ok && v == c.Timestamp {
						delete(model, k)
					}
				}
			default:
				checkVersionsModel(t, tt, model)
			}
		}
		checkVersionsModel(t, tt, model)
	})
}

func modelKey(row, family string, qualifier byte) string {
	return fmt.Sprintf("%q/%s/%d", row, family, qualifier)
}

func checkVersionsModel(t *testing.T, tt table.Table, model map[string]int64) {
	t.Helper()
	var want []string
	for k, v := range model {
		want = append(want, fmt.Sprintf("%s@%d", k, v))
	}
	var got []string
	sc := tt.Scan(context.Background(), table.ScanOptions{})
	for sc.Next() {
		r := sc.At()
		for _, c := range r.Cells {
			got = append(got, fmt.Sprintf("%s@%d", modelKey(string(r.Key), c.Family, c.Qualifier[0]), c.Timestamp))
		}
	}
	if err := errors.Join(sc.Err(), sc.Close()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("cells:\ngot  %q\nwant %q", got, want)
	}
}
