package store

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// emptyRowsDB is discardDB whose data table reads every row as empty and
// counts the bytes put: WriteHistory's own cost, without storage.
type emptyRowsDB struct {
	discardDB
	t *emptyRowsTable
}

func (d emptyRowsDB) Table(ctx context.Context, name string) (table.Table, error) {
	if strings.HasSuffix(name, DataTableSuffix) {
		return d.t, nil
	}
	return d.discardDB.Table(ctx, name)
}

type emptyRowsTable struct {
	discardTable
	bytes atomic.Int64
}

func (t *emptyRowsTable) Get(_ context.Context, _ string, keys [][]byte) ([]table.Row, error) {
	rows := make([]table.Row, len(keys))
	for i, k := range keys {
		rows[i].Key = k
	}
	return rows, nil
}

func (t *emptyRowsTable) Put(_ context.Context, cells []table.Cell) error {
	n := 0
	for _, c := range cells {
		n += len(c.Qualifier) + len(c.Value)
	}
	t.bytes.Add(int64(n))
	return nil
}

// historyBench is what an importer brings: nSeries series scraped every
// 15 s for hours hours, counters and gauges as cmd/benchtool draws them
// (integer and float counters, integer gauges mostly unchanged, float
// gauges wandering), label sets of a node-exporter and Kubernetes shape.
type historyBench struct {
	series []SeriesIn
	hours  int
}

func newHistoryBench(nSeries, hours int, t0 int64) *historyBench {
	hb := &historyBench{series: make([]SeriesIn, nSeries), hours: hours}
	const metrics = 40
	kinds := [...]string{"requests_total", "cpu_seconds_total", "memory_bytes", "load_ratio"}
	for i := range hb.series {
		m := i % metrics
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		ls := lbls("__name__", "bench_"+strconv.Itoa(m)+"_"+kinds[m%4],
			"instance", "host-"+strconv.Itoa(i%60)+":9100", "job", []string{"node", "app"}[i%2],
			"pod", "pod-"+strconv.Itoa(i), "zone", "zone-"+strconv.Itoa(i%3))
		smps := make([]Sample, hours*240)
		off := rng.Int64N(15_000)
		v := float64(rng.IntN(1_000_000))
		for j := range smps {
			switch m % 4 {
			case 0: // integer counter, unchanged in half the scrapes
				if rng.IntN(2) == 0 {
					v += float64(1 + rng.IntN(20))
				}
			case 1: // float counter, two decimals
				v = math.Round((v+float64(rng.IntN(1500))/100)*100) / 100
			case 2: // integer gauge in pages, unchanged in 70 % of scrapes
				if rng.IntN(10) >= 7 {
					v += float64(4096 * (rng.IntN(201) - 100))
				}
			case 3: // float gauge, a random walk of two decimals
				if rng.IntN(2) == 0 {
					v = math.Round(math.Abs(v/1e6+rng.NormFloat64()*0.1)*100) / 100
				}
			}
			smps[j] = Sample{T: t0 + off + int64(j)*15_000, V: v}
		}
		hb.series[i] = SeriesIn{Labels: ls, Samples: smps}
	}
	return hb
}

// shift moves every sample hours later: the next import is new history.
func (hb *historyBench) shift() {
	for i := range hb.series {
		for j := range hb.series[i].Samples {
			hb.series[i].Samples[j].T += int64(hb.hours) * hour
		}
	}
}

func (hb *historyBench) samples() int { return len(hb.series) * hb.hours * 240 }

// BenchmarkWriteHistory imports 1,000 series of 4 hours at 15 s (960,000
// samples) per operation, in calls of 250 series, into closed hours: new
// history (rows empty) and the same history again (every row read, every
// sample found unchanged). "cpu" reads empty rows and discards the puts.
func BenchmarkWriteHistory(b *testing.B) {
	b.Run("cpu", func(b *testing.B) {
		db, _ := openPebble(b)
		t := &emptyRowsTable{}
		benchWriteHistory(b, emptyRowsDB{discardDB{db}, t}, "", false, t)
	})
	for _, be := range backends {
		for _, repeat := range []bool{false, true} {
			name := be.Name + "/new"
			if repeat {
				name = be.Name + "/repeat"
			}
			b.Run(name, func(b *testing.B) {
				db, prefix := be.Open(b)
				benchWriteHistory(b, db, prefix, repeat, nil)
			})
		}
	}
}

func benchWriteHistory(b *testing.B, db table.DB, prefix string, repeat bool, counted *emptyRowsTable) {
	ctx := context.Background()
	s := openStore(b, db, Config{TablePrefix: prefix})
	const nSeries, hours, perCall = 1000, 4, 250
	t0 := time.Now().Add(-60*24*time.Hour).UnixMilli() / hour * hour
	hb := newHistoryBench(nSeries, hours, t0)
	// Warm the UID caches (and, for a repeat, store the history once).
	if err := s.WriteHistory(ctx, hb.series); err != nil {
		b.Fatal(err)
	}
	if counted != nil {
		counted.bytes.Store(0)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		if !repeat {
			hb.shift()
		}
		for i := 0; i < nSeries; i += perCall {
			if err := s.WriteHistory(ctx, hb.series[i:i+perCall]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N * hb.samples())
	b.ReportMetric(n/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/sample")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/sample")
	if counted != nil {
		b.ReportMetric(float64(counted.bytes.Load())/n, "cellbytes/sample")
	}
	st := s.HistoryStats()
	b.Logf("tables %q: %d samples imported, %+v", prefix, (b.N+1)*hb.samples(), st)
	if repeat && st.Unchanged != int64(b.N*hb.samples()) {
		b.Fatalf("repeated history: %+v, want every sample unchanged", st)
	}
}
