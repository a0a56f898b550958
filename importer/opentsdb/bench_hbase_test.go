package opentsdb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb/tsdtest"
)

// The table BenchmarkSourceHBase has OpenTSDB load: benchSeries series (5
// metrics, 3 of integers and 2 of floats) with a point every 10 s for
// benchHours hours.
const (
	benchSeries  = 500
	benchHours   = 4
	benchMetrics = 5
)

// BenchmarkSourceHBase reads a table that a real OpenTSDB 2.4.1 loaded on
// the test HBase through the source, units, scans, decoding, tag values and
// labels: rows/s and samples/s, with the rows as OpenTSDB wrote them (a
// column a point; compaction off) and then compacted by OpenTSDB (a query
// reads and rewrites every row), the table flushed and major-compacted.
func BenchmarkSourceHBase(b *testing.B) {
	zk := hbasetest.ZK(b)
	tsdtest.Require(b)
	client := hbase.New(hbase.Config{ZooKeeper: zk})
	b.Cleanup(func() { client.Close() })
	prefix := fmt.Sprintf("i2otsdb_bench%d_", time.Now().UnixNano()%1e9)
	b.Cleanup(func() {
		if err := tsdtest.DropTables(context.Background(), client, prefix); err != nil {
			b.Logf("dropping tables: %v", err)
		}
	})
	cfg := tsdtest.Config{ZK: zk, RunDir: b.TempDir(), Prefix: prefix}
	raw := cfg
	raw.Extra = []string{"tsd.storage.enable_compaction = false"}

	tsd := tsdtest.Start(b, raw)
	start := time.Now()
	for h := range int64(benchHours) {
		tsd.Put(b, benchHour(h))
	}
	b.Logf("OpenTSDB loaded %d points in %v", benchSeries*benchHours*360, time.Since(start).Round(time.Millisecond))
	tsd.Stop(b)
	ctx := context.Background()
	if err := client.FlushTable(ctx, prefix+"tsdb"); err != nil {
		b.Fatal(err)
	}
	opts := opentsdb.Options{DataTable: prefix + "tsdb", UIDTable: prefix + "tsdb-uid", Logger: slog.New(slog.DiscardHandler)}
	b.Run("raw", func(b *testing.B) { benchRead(b, client, opts) })

	tsd = tsdtest.Start(b, cfg)
	for m := range benchMetrics {
		tsd.Query(b, fmt.Sprintf("bench.m%d", m), t0*1000, (t0+benchHours*3600)*1000)
	}
	tsd.WaitIdle(b)
	tsd.Stop(b)
	// HBase drops the cells OpenTSDB deleted when it major-compacts, as it
	// does on its own within days.
	if err := client.FlushTable(ctx, prefix+"tsdb"); err != nil {
		b.Fatal(err)
	}
	if err := client.MajorCompactTable(ctx, prefix+"tsdb"); err != nil {
		b.Fatal(err)
	}
	b.Run("compacted", func(b *testing.B) { benchRead(b, client, opts) })
}

// benchHour is an hour of the benchmark's points.
func benchHour(h int64) []tsdtest.Point {
	pts := make([]tsdtest.Point, 0, benchSeries*360)
	for s := range benchSeries {
		m := s % benchMetrics
		tags := map[string]string{"host": "host-" + strconv.Itoa(s/benchMetrics), "dc": "dc" + strconv.Itoa(s%3)}
		for i := range int64(360) {
			v := strconv.FormatInt(i*int64(s)%100000, 10)
			if m >= 3 {
				v = strconv.FormatFloat(float64(i*int64(s))/7, 'g', -1, 64)
			}
			pts = append(pts, tsdtest.Point{Metric: fmt.Sprintf("bench.m%d", m),
				Timestamp: t0 + h*3600 + i*10, Value: json.RawMessage(v), Tags: tags})
		}
	}
	return pts
}

func benchRead(b *testing.B, c *hbase.Client, opts opentsdb.Options) {
	ctx := context.Background()
	var rows, samples int64
	for b.Loop() {
		src, err := opentsdb.New(ctx, c, opts)
		if err != nil {
			b.Fatal(err)
		}
		units, err := src.Units(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range units {
			it, err := src.Open(ctx, u)
			if err != nil {
				b.Fatal(err)
			}
			for it.Next() {
				samples += int64(len(it.At().Samples))
			}
			if err := it.Err(); err != nil {
				b.Fatal(err)
			}
			it.Close()
		}
		rows += src.Stats().Rows
		src.Close()
	}
	if want := int64(b.N) * benchSeries * benchHours * 360; samples != want {
		b.Fatalf("read %d samples, want %d", samples, want)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
}
