package hbase

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// Write coalescing against the real HBase.

// saltSplits pre-splits a table into 16 regions on its first byte, as the
// adapter's data table is on its salt buckets.
func saltSplits() []string {
	var out []string
	for b := 1; b < 16; b++ {
		out = append(out, string([]byte{byte(b)}))
	}
	return out
}

// saltedRow is series s's row: its bucket, then the series.
func saltedRow(s int) []byte {
	return binary.BigEndian.AppendUint32([]byte{byte(s % 16)}, uint32(s))
}

// sampleBatch is batch b of writer w: one cell in each of n series, spread
// over every bucket, the cell's qualifier and value naming w and b. When
// bad >= 0, cell bad goes to a family the table lacks.
func sampleBatch(w, b, n, bad int) []*hrpc.Mutation {
	muts := make([]*hrpc.Mutation, n)
	for i := range muts {
		fam := "f"
		if i == bad {
			fam = "nosuch"
		}
		muts[i] = &hrpc.Mutation{Type: hrpc.MutationPut, Row: saltedRow(w*n + i), Cells: []hrpc.MutationCell{{
			Family: []byte(fam), Qualifier: binary.BigEndian.AppendUint32(nil, uint32(b)), Timestamp: 1_700_000_000_000 + int64(b),
			Type: hrpc.TypePut, Value: []byte(fmt.Sprintf("w%d-b%d-%d", w, b, i))}}}
	}
	return muts
}

// TestConcurrentWritesShareMultis: many goroutines write small batches
// across 16 regions through one client; every cell is there afterwards,
// Multis carried several calls, and a call with a bad cell fails for that
// cell alone while the calls sharing its Multis succeed.
func TestConcurrentWritesShareMultis(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, saltSplits()...)
	ctx := testCtx(t)
	const writers, batches, perBatch = 16, 12, 100
	var wg sync.WaitGroup
	errs := make([][]error, writers)
	for w := range writers {
		errs[w] = make([]error, batches)
		wg.Go(func() {
			for b := range batches {
				bad := -1
				if w%4 == 3 && b%3 == 0 {
					bad = (w + b) % perBatch
				}
				errs[w][b] = c.MutateBatch(ctx, table, sampleBatch(w, b, perBatch, bad))
			}
		})
	}
	wg.Wait()
	for w := range writers {
		for b, err := range errs[w] {
			checkBatchErr(t, err, w%4 == 3 && b%3 == 0, (w+b)%perBatch)
		}
	}
	cells := 0
	sc := c.Scan(ctx, table, &hrpc.Scan{}, ScanOptions{RowsPerCall: 500})
	for sc.Next() {
		for _, cl := range sc.At().Cells {
			s := int(binary.BigEndian.Uint32(cl.Row[1:]))
			w, i, b := s/perBatch, s%perBatch, int(binary.BigEndian.Uint32(cl.Qualifier))
			if want := fmt.Sprintf("w%d-b%d-%d", w, b, i); string(cl.Value) != want {
				t.Fatalf("row %x cell %d holds %q, want %q", cl.Row, b, cl.Value, want)
			}
			cells++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for w := 3; w < writers; w += 4 {
		bad += (batches + 2) / 3
	}
	if want := writers*batches*perBatch - bad; cells != want {
		t.Fatalf("%d cells read back, want %d", cells, want)
	}
	st := c.Stats()
	multis := uint64(0)
	for _, n := range st.CallsPerMulti {
		multis += n
	}
	t.Logf("%d Multis carried %d calls: %v", multis, st.CallsInMultis, st.CallsPerMulti)
	if st.CallsPerMulti[0] == multis {
		t.Errorf("no Multi carried more than one call of %d concurrent writers: %v", writers, st.CallsPerMulti)
	}
}

// checkBatchErr wants no error, or, when bad, a *BatchError failing
// exactly action i.
func checkBatchErr(t *testing.T, err error, bad bool, i int) {
	t.Helper()
	if !bad {
		if err != nil {
			t.Errorf("a batch of good cells: %v", err)
		}
		return
	}
	var be *BatchError
	if !errors.As(err, &be) || be.Failed != 1 || be.Errs[i] == nil {
		t.Errorf("a batch with cell %d bad: %v, want a *BatchError of that cell alone", i, err)
	}
}

// TestConcurrentWritesAcrossSplit: concurrent writers sharing Multis meet
// a region split by another client and a region closed and reopened: the
// region errors are retried per region, every call succeeds, every row
// lands.
func TestConcurrentWritesAcrossSplit(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, "row002000")
	ctx := testCtx(t)
	const writers, batches, perBatch = 8, 10, 50
	admin := testClient(t)
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches+2)
	// Every region cached before the split, so that the writers meet it.
	if _, err := c.Regions(ctx, table); err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				var muts []*hrpc.Mutation
				for i := range perBatch {
					n := (b*writers+w)*perBatch + i
					muts = append(muts, put(rowKey(n), "f", "q", fmt.Sprint(n)))
				}
				if err := c.MutateBatch(ctx, table, muts); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, b, err)
				}
				if w == 0 && b == 2 {
					errs <- admin.SplitRegion(ctx, table, []byte(rowKey(1000)))
				}
				if w == 1 && b == 5 {
					errs <- admin.ReopenRegion(ctx, table, []byte(rowKey(2600)))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	checkAllRows(t, c, table, writers*batches*perBatch)
	if st := c.Stats(); st.Relocations == 0 {
		t.Errorf("no relocation: the writers did not meet the split or the reopen: %+v", st)
	}
}

// TestWriteCoalescingOff: with Config.DisableWriteCoalescing, each Multi
// carries one call.
func TestWriteCoalescingOff(t *testing.T) {
	c := New(Config{ZooKeeper: hbasetest.ZK(t), ZKRoot: hbasetest.ZKRoot(), RPCTimeout: 20 * time.Second, DisableWriteCoalescing: true})
	t.Cleanup(func() { c.Close() }) // after the table's drop
	table := testTable(t, c, "\x08")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for b := range 5 {
				if err := c.MutateBatch(ctx, table, sampleBatch(w, b, 50, -1)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st := c.Stats()
	if st.CallsPerMulti[0] != 40 || st.CallsInMultis != 40 {
		t.Errorf("calls per Multi %v (sum %d), want 40 Multis of one call", st.CallsPerMulti, st.CallsInMultis)
	}
}
