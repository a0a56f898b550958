package tablefault

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

func TestFaults(t *testing.T) {
	ctx := context.Background()
	pdb, err := pebbletable.Open(t.TempDir(), pebbletable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	db := Wrap(pdb, Config{Rate: 0.5, Seed: 1, TableSuffix: "uid"})
	for _, name := range []string{"x-uid", "x-data"} {
		if _, err := table.EnsureTable(ctx, db, table.TableSpec{Name: name, Families: []table.FamilySpec{{Name: "f"}}}); err != nil {
			t.Fatal(err)
		}
	}
	uidT, _ := db.Table(ctx, "x-uid")
	dataT, _ := db.Table(ctx, "x-data")
	var before, applied, ok int
	for i := range 400 {
		row := []byte{byte(i >> 8), byte(i)}
		err := uidT.Put(ctx, []table.Cell{{Row: row, Family: "f", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")}})
		got, gerr := pdb.Table(ctx, "x-uid")
		if gerr != nil {
			t.Fatal(gerr)
		}
		rows, gerr := got.Get(ctx, "f", [][]byte{row})
		if gerr != nil {
			t.Fatal(gerr)
		}
		landed := len(rows[0].Cells) == 1
		switch {
		case err == nil:
			ok++
			if !landed {
				t.Fatal("a put that succeeded did not land")
			}
		case !errors.Is(err, ErrInjected):
			t.Fatal(err)
		case strings.Contains(err.Error(), "reply lost"):
			applied++
			if !landed {
				t.Fatal("a fault after the call did not apply it")
			}
		default:
			before++
			if landed {
				t.Fatal("a fault before the call applied it")
			}
		}
	}
	if before < 50 || applied < 50 || ok < 100 {
		t.Errorf("%d faults before, %d after, %d clean: not the rate asked", before, applied, ok)
	}
	if int(db.Injected()) != before+applied {
		t.Errorf("Injected = %d, want %d", db.Injected(), before+applied)
	}
	for range 100 {
		if err := dataT.Put(ctx, []table.Cell{{Row: []byte("r"), Family: "f", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")}}); err != nil {
			t.Fatalf("a table not selected got a fault: %v", err)
		}
	}
	db.SetRate(0)
	if _, err := uidT.Increment(ctx, []byte("c"), "f", []byte("n"), 1); err != nil {
		t.Fatal(err)
	}
}
