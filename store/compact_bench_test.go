package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/hbasetable"
)

// realisticBatch is series x samples at a 15 s step from start, with the
// value shapes of real exporters (as cmd/benchtool makes them): integer
// counters that grow in half the scrapes, float counters with two
// decimals, page-sized gauges unchanged in 70 % of scrapes, a two-decimal
// random walk.
func realisticBatch(series, samples int, start int64, run string) []SeriesIn {
	kinds := []string{"requests_total", "cpu_seconds_total", "memory_bytes", "load_ratio"}
	out := make([]SeriesIn, series)
	for i := range out {
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		kind := i % 4
		v := []float64{float64(rng.IntN(1e6)), float64(rng.IntN(1e7)) / 100, float64(4096 * (1e4 + rng.IntN(1e6))), float64(rng.IntN(400)) / 100}[kind]
		smps := make([]Sample, samples)
		for j := range smps {
			switch kind {
			case 0:
				if rng.IntN(2) == 0 {
					v += float64(1 + rng.IntN(20))
				}
			case 1:
				v = math.Round((v+float64(rng.IntN(1500))/100)*100) / 100
			case 2:
				if rng.IntN(10) >= 7 {
					v += float64(4096 * (rng.IntN(201) - 100))
				}
			case 3:
				if rng.IntN(2) == 0 {
					v = math.Round(math.Abs(v+rng.NormFloat64()*0.1)*100) / 100
				}
			}
			smps[j] = Sample{T: start + int64(j)*15000, V: v}
		}
		out[i] = SeriesIn{
			Labels: lbls("__name__", fmt.Sprintf("node_%d_%s", i%25, kinds[kind]), "instance", fmt.Sprintf("host-%d_9100", i/25),
				"job", "node", "pod", fmt.Sprintf("%s-pod-%d", run, i)),
			Samples: smps,
		}
	}
	return out
}

// BenchmarkCompactPass compacts series x one hour of 15 s samples per
// iteration, on Pebble and, with PROMHBASE_TEST_ZK set, on HBase; the
// writes are outside the timer. Each series has a metric name of its own,
// so every batch of rows is one row: with 2,000, a pass's cost once grew
// with the square of its folds (pendingDeletes).
func BenchmarkCompactPass(b *testing.B) {
	for _, backend := range backends {
		for _, series := range []int{100, 2000} {
			b.Run(fmt.Sprintf("%s/series=%d", backend.Name, series), func(b *testing.B) {
				db, prefix := backend.Open(b)
				benchCompactPass(b, db, prefix, series)
			})
		}
	}
}

func benchCompactPass(b *testing.B, db table.DB, prefix string, series int) {
	s, clock := clockedStore(b, db, Config{TablePrefix: prefix})
	c := clockedCompactor(b, s, clock)
	ctx := context.Background()
	hourStart := (time.Now().Add(-24*time.Hour).UnixMilli() / hour) * hour
	const samples = 240
	n := 0
	for b.Loop() {
		b.StopTimer()
		batch := realisticBatch(series, samples, hourStart-int64(n)*hour, "bench")
		for i := range batch {
			batch[i].Labels[0].Value = fmt.Sprintf("bench_%d_%s", i, batch[i].Labels[0].Value)
		}
		for i := 0; i < len(batch); i += 100 {
			if err := s.Write(ctx, batch[i:min(i+100, len(batch))]); err != nil {
				b.Fatal(err)
			}
		}
		n++
		clock.advance(DefaultCompactQuiet + time.Second)
		b.StartTimer()
		st, err := c.Pass(ctx)
		if err != nil || st.RawCellsDeleted != series*samples {
			b.Fatalf("%+v, %v", st, err)
		}
	}
	b.ReportMetric(float64(series*samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkCompactedBytes measures the data table's bytes per sample on
// HBase after flush and major compaction, raw and then compacted: 1,000
// series x 360 samples at 15 s (the figures of issue 11). It needs the
// shared HBase's root directory on this machine in PROMHBASE_TEST_HBASE_ROOT
// (e.g. /tmp/shared-hbase/data/hbase) and runs once:
//
//	go test -run '^$' -bench CompactedBytes -benchtime 1x ./store/
func BenchmarkCompactedBytes(b *testing.B) {
	root := os.Getenv("PROMHBASE_TEST_HBASE_ROOT")
	if root == "" {
		b.Skip("PROMHBASE_TEST_HBASE_ROOT is not set")
	}
	db, prefix := openHBase(b)
	client := db.(*hbasetable.DB).Client()
	ctx := context.Background()
	s := openStore(b, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 1}})
	const series, samples = 1000, 360
	start := (time.Now().Add(-24*time.Hour).UnixMilli()/hour)*hour + 7*60_000
	batch := realisticBatch(series, samples, start, "bytes")
	for i := 0; i < len(batch); i += 50 {
		if err := s.Write(ctx, batch[i:min(i+50, len(batch))]); err != nil {
			b.Fatal(err)
		}
	}
	name := prefix + DataTableSuffix
	measure := func() float64 {
		since := time.Now()
		time.Sleep(1100 * time.Millisecond) // file times have a second's resolution
		if err := client.FlushTable(ctx, name); err != nil {
			b.Fatal(err)
		}
		if err := client.MajorCompactTable(ctx, name); err != nil {
			b.Fatal(err)
		}
		return float64(newestStoreFiles(b, root, name, since)) / (series * samples)
	}
	for b.Loop() {
		raw := measure()
		clock := &testClock{}
		clock.advance(DefaultCompactQuiet + time.Second)
		c := clockedCompactor(b, s, clock)
		st, err := c.Pass(ctx)
		if err != nil || st.RawCellsDeleted != series*samples {
			b.Fatalf("%+v, %v", st, err)
		}
		compacted := measure()
		b.ReportMetric(raw, "raw-bytes/sample")
		b.ReportMetric(compacted, "compacted-bytes/sample")
		b.ReportMetric(float64(st.BytesWritten)/(series*samples), "chunk-bytes/sample")
	}
}

// newestStoreFiles sums, over the stores (region x family) of a table, the
// size of each store's newest file written after since, waiting until every
// store has one: a major compaction's output, beside files it replaced that
// HBase removes later.
func newestStoreFiles(tb testing.TB, root, tableName string, since time.Time) int64 {
	dir := filepath.Join(root, "data", "default", tableName)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var total int64
		complete := true
		stores, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		for _, st := range stores {
			base := filepath.Base(st)
			if strings.HasPrefix(base, ".") || base == "recovered.edits" || strings.HasPrefix(filepath.Base(filepath.Dir(st)), ".") {
				continue
			}
			entries, err := os.ReadDir(st)
			if err != nil {
				continue
			}
			var newest os.FileInfo
			for _, e := range entries {
				fi, err := e.Info()
				if err != nil || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				if newest == nil || fi.ModTime().After(newest.ModTime()) {
					newest = fi
				}
			}
			switch {
			case newest == nil:
			case newest.ModTime().Before(since):
				complete = false
			default:
				total += newest.Size()
			}
		}
		if complete && len(stores) > 0 {
			return total
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no compacted files of %s under %s", tableName, dir)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
