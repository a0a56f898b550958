package hbase

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// BenchmarkConcurrentSmallBatches writes as the adapter does under
// remote-write load of small requests: callers goroutines (4, or
// PROMHBASE_BENCH_CALLERS) each send batches of 200 one-cell rows of 1,000
// series spread over 16 salt buckets, into a table of one region per
// bucket and into one of a single region; each call with Multis of its own
// (separate), sharing them beyond the default Multis in flight per server
// (merged), and beyond one (merged-1). With PROMHBASE_HBASE_PID,
// hbase-cpu-ns/cell is the HBase JVM's CPU per cell.
func BenchmarkConcurrentSmallBatches(b *testing.B) {
	callers := 4
	if n, err := strconv.Atoi(os.Getenv("PROMHBASE_BENCH_CALLERS")); err == nil && n > 0 {
		callers = n
	}
	modes := []struct {
		name string
		cfg  Config
	}{
		{"separate", Config{DisableWriteCoalescing: true}},
		{"merged", Config{}},
		{"merged-1", Config{WriteMultisInFlight: 1}},
	}
	for _, regions := range []int{16, 1} {
		for _, mode := range modes {
			b.Run(fmt.Sprintf("regions%d/%s", regions, mode.name), func(b *testing.B) {
				// A fresh table each: the modes start from the same state.
				var splits []string
				if regions == 16 {
					splits = saltSplits()
				}
				cfg := mode.cfg
				cfg.ZooKeeper, cfg.ZKRoot = hbasetest.ZK(b), hbasetest.ZKRoot()
				c := New(cfg)
				b.Cleanup(func() { c.Close() }) // after the table's drop
				table := testTable(b, c, splits...)
				benchSmallBatches(b, c, table, callers)
			})
		}
	}
}

const (
	smallBatch   = 200
	smallSeries  = 1000
	smallBuckets = 16
)

func benchSmallBatches(b *testing.B, c *Client, table string, callers int) {
	ctx := context.Background()
	rows := make([][]byte, smallSeries)
	for s := range rows {
		rows[s] = binary.BigEndian.AppendUint64([]byte{byte(s % smallBuckets)}, uint64(s))
	}
	// Warm: regions located, connection open.
	if err := c.MutateBatch(ctx, table, smallMuts(rows, 0, nil)); err != nil {
		b.Fatal(err)
	}
	before := c.Stats()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	meter := startMeter()
	for range callers {
		wg.Go(func() {
			var muts []*hrpc.Mutation
			for {
				n := int(next.Add(1)) - 1
				if n >= b.N {
					return
				}
				muts = smallMuts(rows, n+1, muts)
				if err := c.MutateBatch(ctx, table, muts); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	meter.report(b, b.N*smallBatch)
	after := c.Stats()
	multis := uint64(0)
	for k := range after.CallsPerMulti {
		multis += after.CallsPerMulti[k] - before.CallsPerMulti[k]
	}
	if multis > 0 {
		b.ReportMetric(float64(after.CallsInMultis-before.CallsInMultis)/float64(multis), "calls/multi")
	}
}

// smallMuts is request n: one sample of each of smallBatch series, the
// series of consecutive requests taking turns, as a scrape's samples are
// cut into requests.
func smallMuts(rows [][]byte, n int, muts []*hrpc.Mutation) []*hrpc.Mutation {
	if muts == nil {
		muts = make([]*hrpc.Mutation, smallBatch)
		for i := range muts {
			muts[i] = &hrpc.Mutation{Type: hrpc.MutationPut, Cells: []hrpc.MutationCell{{
				Family: []byte("f"), Qualifier: make([]byte, 4), Type: hrpc.TypePut, Value: make([]byte, 8)}}}
		}
	}
	ts := int64(1_700_000_000_000) + int64(n*smallBatch/smallSeries)*15_000
	for i, m := range muts {
		m.Row = rows[(n*smallBatch+i)%smallSeries]
		cell := &m.Cells[0]
		cell.Timestamp = ts
		binary.BigEndian.PutUint32(cell.Qualifier, uint32(ts%3_600_000))
		binary.BigEndian.PutUint64(cell.Value, uint64(n))
	}
	return muts
}
