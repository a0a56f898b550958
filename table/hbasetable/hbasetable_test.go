package hbasetable

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
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
