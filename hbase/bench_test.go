package hbase

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// Benchmarks against the real HBase. Set PROMHBASE_HBASE_PID to the HBase
// JVM's pid to also get the client's share of the CPU both used.

// benchRow is a 40-byte row key, like the adapter's: a prefix, a series
// number and padding.
func benchRow(dst []byte, series int) []byte {
	dst = append(dst[:0], "bench-series-"...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(series))
	for len(dst) < 40 {
		dst = append(dst, 'x')
	}
	return dst
}

// cpuMeter measures this process's and HBase's CPU time over an interval.
type cpuMeter struct {
	hbasePid    int
	self0, hb0  time.Duration
	memMallocs0 uint64
	started     time.Time
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU reads utime+stime of a process from /proc/<pid>/stat.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ is 100 on Linux
}

func startMeter() *cpuMeter {
	m := &cpuMeter{}
	m.hbasePid, _ = strconv.Atoi(os.Getenv("PROMHBASE_HBASE_PID"))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.memMallocs0 = ms.Mallocs
	m.self0 = selfCPU()
	if m.hbasePid > 0 {
		m.hb0 = procCPU(m.hbasePid)
	}
	m.started = time.Now()
	return m
}

// report adds cells/s, allocs/cell and, with a pid, the CPU share.
func (m *cpuMeter) report(b *testing.B, cells int) {
	elapsed := time.Since(m.started)
	self := selfCPU() - m.self0
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(cells)/elapsed.Seconds(), "cells/s")
	b.ReportMetric(float64(ms.Mallocs-m.memMallocs0)/float64(cells), "allocs/cell")
	b.ReportMetric(float64(self)/float64(cells), "client-cpu-ns/cell")
	if m.hbasePid > 0 {
		hb := procCPU(m.hbasePid) - m.hb0
		b.ReportMetric(float64(hb)/float64(cells), "hbase-cpu-ns/cell")
		if hb+self > 0 {
			b.ReportMetric(100*float64(self)/float64(self+hb), "client-cpu-%")
		}
	}
}

func benchClient(b *testing.B) *Client {
	c := testClient(b)
	return c
}

const (
	benchCellsPerRow = 10
	benchRowsPerPut  = 1000
)

func BenchmarkPutBatch(b *testing.B) {
	c := benchClient(b)
	table := testTable(b, c, benchSplits()...)
	ctx := context.Background()
	muts := make([]*hrpc.Mutation, benchRowsPerPut)
	for i := range muts {
		m := &hrpc.Mutation{Type: hrpc.MutationPut, Cells: make([]hrpc.MutationCell, benchCellsPerRow)}
		for j := range m.Cells {
			m.Cells[j] = hrpc.MutationCell{Family: []byte("f"), Qualifier: binary.BigEndian.AppendUint32(nil, uint32(j)),
				Type: hrpc.TypePut, Value: make([]byte, 8)}
		}
		muts[i] = m
	}
	rows := make([][]byte, 0, 1<<16)
	b.ResetTimer()
	meter := startMeter()
	for n := 0; n < b.N; n++ {
		for i, m := range muts {
			series := (n*benchRowsPerPut + i) % (1 << 16)
			if len(rows) <= series {
				rows = append(rows, benchRow(nil, series))
			}
			m.Row = rows[series]
			for j := range m.Cells {
				m.Cells[j].Timestamp = int64(1_700_000_000_000 + n)
				binary.BigEndian.PutUint64(m.Cells[j].Value, uint64(n))
			}
		}
		if err := c.MutateBatch(ctx, table, muts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	meter.report(b, b.N*benchRowsPerPut*benchCellsPerRow)
}

// benchSplits pre-splits bench tables in four, as the adapter's salted
// data table would be.
func benchSplits() []string {
	var out []string
	for _, s := range []int{1 << 14, 2 << 14, 3 << 14} {
		out = append(out, string(benchRow(nil, s)))
	}
	return out
}

var (
	scanTableOnce   sync.Once
	scanTable       string
	scanTableErr    error
	scanTableClient *Client
)

// TestMain drops the table the scan benchmarks filled, once all ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if scanTable != "" && scanTableClient != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := scanTableClient.DisableTable(ctx, scanTable); err == nil {
			_ = scanTableClient.DeleteTable(ctx, scanTable)
		}
		cancel()
		scanTableClient.Close()
	}
	os.Exit(code)
}

const scanCells = 1_000_000

// scanBenchTable fills a table of 1M cells once per process.
func scanBenchTable(b *testing.B, c *Client) string {
	scanTableOnce.Do(func() {
		ctx := context.Background()
		scanTableClient = New(c.cfg)
		scanTable = fmt.Sprintf("bench_scan_%d", time.Now().UnixNano())
		if scanTableErr = c.CreateTable(ctx, scanTable, []hrpc.Family{{Name: "f", DataBlockEncoding: "FAST_DIFF"}}, nil); scanTableErr != nil {
			return
		}
		var muts []*hrpc.Mutation
		for r := 0; r < scanCells/benchCellsPerRow; r++ {
			m := &hrpc.Mutation{Type: hrpc.MutationPut, Row: benchRow(nil, r)}
			for j := 0; j < benchCellsPerRow; j++ {
				m.Cells = append(m.Cells, hrpc.MutationCell{Family: []byte("f"), Qualifier: binary.BigEndian.AppendUint32(nil, uint32(j)),
					Timestamp: 1_700_000_000_000, Type: hrpc.TypePut, Value: binary.BigEndian.AppendUint64(nil, uint64(r))})
			}
			muts = append(muts, m)
			if len(muts) == 2000 {
				if scanTableErr = c.MutateBatch(ctx, scanTable, muts); scanTableErr != nil {
					return
				}
				muts = muts[:0]
			}
		}
		if scanTableErr = c.MutateBatch(ctx, scanTable, muts); scanTableErr != nil {
			return
		}
		// Scan from files, as a long-term store mostly does.
		scanTableErr = c.FlushTable(ctx, scanTable)
	})
	if scanTableErr != nil {
		b.Fatal(scanTableErr)
	}
	return scanTable
}

func BenchmarkScan1M(b *testing.B) {
	c := benchClient(b)
	table := scanBenchTable(b, c)
	ctx := context.Background()
	b.ResetTimer()
	meter := startMeter()
	for n := 0; n < b.N; n++ {
		sc := c.Scan(ctx, table, &hrpc.Scan{}, ScanOptions{})
		cells := 0
		for sc.Next() {
			cells += len(sc.At().Cells)
		}
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
		sc.Close()
		if cells != scanCells {
			b.Fatalf("scanned %d cells, want %d", cells, scanCells)
		}
	}
	b.StopTimer()
	meter.report(b, b.N*scanCells)
}

func BenchmarkGet(b *testing.B) {
	c := benchClient(b)
	table := testTable(b, c)
	ctx := context.Background()
	const rows = 1000
	var muts []*hrpc.Mutation
	for r := 0; r < rows; r++ {
		m := &hrpc.Mutation{Type: hrpc.MutationPut, Row: benchRow(nil, r)}
		for j := 0; j < benchCellsPerRow; j++ {
			m.Cells = append(m.Cells, hrpc.MutationCell{Family: []byte("f"), Qualifier: binary.BigEndian.AppendUint32(nil, uint32(j)),
				Timestamp: 1_700_000_000_000, Type: hrpc.TypePut, Value: binary.BigEndian.AppendUint64(nil, uint64(r))})
		}
		muts = append(muts, m)
	}
	if err := c.MutateBatch(ctx, table, muts); err != nil {
		b.Fatal(err)
	}
	row := make([]byte, 0, 40)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		row = benchRow(row, (n*7919)%rows)
		cells, err := c.Get(ctx, table, &hrpc.Get{Row: row})
		if err != nil {
			b.Fatal(err)
		}
		if len(cells) != benchCellsPerRow {
			b.Fatalf("row %q: %d cells", row, len(cells))
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/get")
}
