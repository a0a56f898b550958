package pebbletable

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// benchRow is shaped like a data-table row key: salt, metric UID, base hour,
// three tag pairs; the zero bytes exercise the escaping.
func benchRow(dst []byte, i int) []byte {
	dst = append(dst[:0], byte(i%16), 0, 0, 1)
	dst = binary.BigEndian.AppendUint32(dst, uint32(1700000000+3600*(i/1000)))
	for t := range 3 {
		dst = append(dst, 0, 0, byte(t+1), 0, 0, byte(i>>8), byte(i))
	}
	return dst
}

func BenchmarkAppendCellKey(b *testing.B) {
	row := benchRow(nil, 12345)
	q := []byte{0, 0, 0x12, 0x34}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendCellKey(buf[:0], 7, row, 0, q)
	}
}

func benchTable(b *testing.B, opts Options) *tbl {
	b.Helper()
	opts.SweepInterval = -1
	db := openTest(b, b.TempDir(), opts)
	tt, err := table.EnsureTable(context.Background(), db, table.TableSpec{Name: "bench", Families: []table.FamilySpec{{Name: "t"}}})
	if err != nil {
		b.Fatal(err)
	}
	return tt.(*tbl)
}

// benchCells returns n sample-like cells over n/100 rows.
func benchCells(n int) []table.Cell {
	cells := make([]table.Cell, n)
	for i := range cells {
		cells[i] = table.Cell{
			Row:       benchRow(nil, i/100),
			Family:    "t",
			Qualifier: binary.BigEndian.AppendUint32(nil, uint32(i%100)*1000),
			Timestamp: 1700000000000 + int64(i),
			Value:     binary.BigEndian.AppendUint64(nil, uint64(i)),
		}
	}
	return cells
}

// BenchmarkPut measures one Put of a 1000-cell batch, synced to disk.
func BenchmarkPut(b *testing.B) {
	tb := benchTable(b, Options{})
	cells := benchCells(1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := tb.Put(ctx, cells); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cells)), "ns/cell")
}

// BenchmarkPutEncode measures the batch encoding of Put without the commit.
func BenchmarkPutEncode(b *testing.B) {
	tb := benchTable(b, Options{})
	cells := benchCells(1000)
	b.ReportAllocs()
	for b.Loop() {
		batch := tb.db.pdb.NewBatch()
		if _, err := tb.addPuts(batch, cells, 0); err != nil {
			b.Fatal(err)
		}
		_ = batch.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cells)), "ns/cell")
}

func benchScan(b *testing.B, opts table.ScanOptions, wantRows int) {
	tb := benchTable(b, Options{})
	cells := benchCells(100000) // 1000 rows of 100 cells
	ctx := context.Background()
	if err := tb.Put(ctx, cells); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		scanRows(b, tb, opts, wantRows)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cells)), "ns/cell")
}

// scanRows scans t with opts and fails b unless it returns wantRows rows.
func scanRows(b *testing.B, t table.Table, opts table.ScanOptions, wantRows int) {
	sc := t.Scan(context.Background(), opts)
	n := 0
	for sc.Next() {
		n++
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	_ = sc.Close()
	if n != wantRows {
		b.Fatalf("scanned %d rows, want %d", n, wantRows)
	}
}

// BenchmarkScan reads 1000 rows of 100 cells; ns/cell counts all cells stored.
func BenchmarkScan(b *testing.B) { benchScan(b, table.ScanOptions{}, 1000) }

// BenchmarkScanKeys lists the row keys, the first phase of a query.
func BenchmarkScanKeys(b *testing.B) {
	benchScan(b, table.ScanOptions{KeyOnly: true, FirstCellOnly: true}, 1000)
}

// BenchmarkScanRegex lists the row keys that a regex over binary bytes accepts.
func BenchmarkScanRegex(b *testing.B) {
	benchScan(b, table.ScanOptions{KeyOnly: true, FirstCellOnly: true, Filter: &table.KeyFilter{
		// Rows whose tag 2 has a value in 256..511, as a tag-value filter.
		Regex: `(?s).{8}(?:.{7})*\x00\x00\x02\x00\x00\x01.(?:.{7})*`,
	}}, 256)
}

// BenchmarkScanQualifierPrefixes reads 2 cells of each of 1000 rows of 100,
// as a query reads the marks of its metrics from the compaction table.
func BenchmarkScanQualifierPrefixes(b *testing.B) {
	benchScan(b, table.ScanOptions{QualifierPrefixes: [][]byte{
		binary.BigEndian.AppendUint32(nil, 17000), binary.BigEndian.AppendUint32(nil, 63000),
	}}, 1000)
}

// BenchmarkGet fetches 100 rows of 100 cells by key.
func BenchmarkGet(b *testing.B) {
	tb := benchTable(b, Options{})
	cells := benchCells(100000)
	ctx := context.Background()
	if err := tb.Put(ctx, cells); err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, 100)
	for i := range keys {
		keys[i] = benchRow(nil, i*10)
	}
	b.ReportAllocs()
	for b.Loop() {
		rows, err := tb.Get(ctx, "t", keys)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows[99].Cells) != 100 {
			b.Fatalf("row has %d cells", len(rows[99].Cells))
		}
	}
}

// BenchmarkCheckAndPutBatch writes 100 rows conditionally, half of them
// winning (absent expected on rows written in an earlier round).
func BenchmarkCheckAndPutBatch(b *testing.B) {
	tb := benchTable(b, Options{})
	ctx := context.Background()
	puts := make([]table.CondPut, 100)
	round := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range puts {
			row := benchRow(nil, round*50+i)
			puts[i] = table.CondPut{Row: row, Family: "t", Qualifier: []byte("id"),
				Put: []table.Cell{{Row: row, Family: "t", Qualifier: []byte("id"), Timestamp: 1, Value: []byte("v")}}}
		}
		if _, err := tb.CheckAndPutBatch(ctx, puts); err != nil {
			b.Fatal(err)
		}
		round++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(puts)), "ns/put")
}

// BenchmarkDeleteVersions deletes 1000 cells by exact version, as the
// compactor does after folding raw samples into a chunk.
func BenchmarkDeleteVersions(b *testing.B) {
	tb := benchTable(b, Options{})
	ctx := context.Background()
	cells := benchCells(1000)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := tb.Put(ctx, cells); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := tb.DeleteVersions(ctx, cells); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cells)), "ns/cell")
}

// BenchmarkScanFamilyBeside reads one family of 10,000 rows shaped like a
// compacted data table's: a 200-byte chunk cell in "t", and beside it, in
// "f", a one-byte fence cell (none: the table before fences). With the
// fence's family numbered first (a table created with it) the scan meets
// it before each row's "t" cell, numbered last (added to an older table)
// after it. ns/row.
func BenchmarkScanFamilyBeside(b *testing.B) {
	for _, tc := range []struct {
		name     string
		families []string // in the order they are made
		fence    bool
	}{
		{"none", []string{"t"}, false},
		{"fence-first", []string{"f", "t"}, true},
		{"fence-added", []string{"t", "f"}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db := openTest(b, b.TempDir(), Options{SweepInterval: -1})
			ctx := context.Background()
			tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: "bench", Families: []table.FamilySpec{{Name: tc.families[0]}}})
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range tc.families[1:] {
				if err := db.AddFamily(ctx, "bench", table.FamilySpec{Name: f}); err != nil {
					b.Fatal(err)
				}
			}
			const rows = 10000
			var cells []table.Cell
			for i := range rows {
				row := benchRow(nil, i)
				cells = append(cells, table.Cell{Row: row, Family: "t", Qualifier: []byte{1, 0x84, 0, 0, 0, 0, 0, 0x36, 0xee, 0x7f}, Timestamp: 1700000000000, Value: make([]byte, 200)})
				if tc.fence {
					cells = append(cells, table.Cell{Row: row, Family: "f", Qualifier: []byte{1, 0xff}, Timestamp: 1700000000000, Value: []byte{1}})
				}
			}
			if err := tt.Put(ctx, cells); err != nil {
				b.Fatal(err)
			}
			if err := db.pdb.Flush(); err != nil { // read from a table file, as compacted hours are
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				scanRows(b, tt, table.ScanOptions{Family: "t"}, rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
	}
}
