package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
)

// discardDB is a benchmark harness, not a backend: it serves the UID table
// from a real DB and swallows every put to the data table, so that a
// benchmark measures the write path without storage.
type discardDB struct{ table.DB }

func (d discardDB) Table(ctx context.Context, name string) (table.Table, error) {
	if strings.HasSuffix(name, DataTableSuffix) {
		return discardTable{}, nil
	}
	return d.DB.Table(ctx, name)
}

func (d discardDB) CreateTable(ctx context.Context, spec table.TableSpec) error {
	if strings.HasSuffix(spec.Name, DataTableSuffix) {
		return nil
	}
	return d.DB.CreateTable(ctx, spec)
}

// Describe answers for the data table what a real one would hold.
func (d discardDB) Describe(ctx context.Context, name string) (table.TableSpec, error) {
	if strings.HasSuffix(name, DataTableSuffix) {
		return table.TableSpec{Name: name, Families: []table.FamilySpec{{Name: FamilyData}}}, nil
	}
	return d.DB.Describe(ctx, name)
}

func (d discardDB) AddFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	if strings.HasSuffix(name, DataTableSuffix) {
		return nil
	}
	return d.DB.AddFamily(ctx, name, fam)
}

func (d discardDB) AlterFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	if strings.HasSuffix(name, DataTableSuffix) {
		return nil
	}
	return d.DB.AlterFamily(ctx, name, fam)
}

type discardTable struct{}

var errDiscard = errors.New("discard table: write-only benchmark harness")

func (discardTable) Put(context.Context, []table.Cell) error    { return nil }
func (discardTable) Delete(context.Context, []table.Cell) error { return nil }
func (discardTable) Get(context.Context, string, [][]byte) ([]table.Row, error) {
	return nil, errDiscard
}
func (discardTable) Scan(context.Context, table.ScanOptions) table.Scanner { return nil }
func (discardTable) Increment(context.Context, []byte, string, []byte, int64) (int64, error) {
	return 0, errDiscard
}
func (discardTable) CheckAndPut(context.Context, []byte, string, []byte, []byte, []table.Cell) (bool, error) {
	return false, errDiscard
}
func (discardTable) CheckAndPutBatch(context.Context, []table.CondPut) ([]bool, error) {
	return nil, errDiscard
}
func (discardTable) DeleteVersions(context.Context, []table.Cell) error { return nil }
func (discardTable) CheckAndDeleteBatch(context.Context, []table.CondDelete) ([]bool, error) {
	return nil, errDiscard
}

// benchBatch is a remote-write-like batch: nSeries series of a node-exporter
// shape with perSeries samples each, 15 s apart.
func benchBatch(nSeries, perSeries int, t0 int64) []SeriesIn {
	batch := make([]SeriesIn, nSeries)
	for i := range batch {
		smps := make([]Sample, perSeries)
		for j := range smps {
			smps[j] = Sample{T: t0 + int64(j)*15_000, V: float64(i * j)}
		}
		batch[i] = SeriesIn{
			Labels: lbls("__name__", fmt.Sprintf("node_metric_%d", i%50), "cpu", fmt.Sprint(i%8),
				"instance", fmt.Sprintf("host-%03d:9100", i/50), "job", "node", "mode", "user"),
			Samples: smps,
		}
	}
	return batch
}

func benchWrite(b *testing.B, db table.DB, prefix string) {
	benchWriteShape(b, db, Config{TablePrefix: prefix}, 1000, 10)
}

func benchWriteShape(b *testing.B, db table.DB, cfg Config, nSeries, perSeries int) {
	benchWriteBatch(b, db, cfg, benchBatch(nSeries, perSeries, 1_760_000_000_000), int64(perSeries)*15_000)
}

// interleavedBatch is benchBatch(nSeries, perSeries) as Prometheus sends it
// when it catches up: a series per sample, the samples of a series
// perSeries series apart (every series' first sample, then every series'
// second...).
func interleavedBatch(nSeries, perSeries int, t0 int64) []SeriesIn {
	var out []SeriesIn
	grouped := benchBatch(nSeries, perSeries, t0)
	for j := range perSeries {
		for _, s := range grouped {
			out = append(out, SeriesIn{Labels: s.Labels, Samples: s.Samples[j : j+1]})
		}
	}
	return out
}

// BenchmarkWriteInterleaved writes 250 series x 8 samples a request, a
// series per sample as interleavedBatch sends them (make bench's ingest at
// 2,000 a request), into a backend that discards the cells: the row sort
// finds each row's cells in 8 runs.
func BenchmarkWriteInterleaved(b *testing.B) {
	db, _ := openPebble(b)
	benchWriteBatch(b, discardDB{db}, Config{}, interleavedBatch(250, 8, 1_760_000_000_000), 8*15_000)
}

// benchWriteBatch writes batch again and again, its samples advance later
// each time, as in production.
func benchWriteBatch(b *testing.B, db table.DB, cfg Config, batch []SeriesIn, advance int64) {
	ctx := context.Background()
	s := openStore(b, db, cfg)
	n := 0
	for _, si := range batch {
		n += len(si.Samples)
	}
	if err := s.Write(ctx, batch); err != nil { // warm the UID caches
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Advance time so that each write is new samples, as in production.
		for j := range batch {
			for k := range batch[j].Samples {
				batch[j].Samples[k].T += advance
			}
		}
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	samples := float64(b.N * n)
	b.ReportMetric(samples/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/samples, "allocs/sample")
}

// BenchmarkWriteOneSampleASeries writes as Prometheus sends in its steady
// state, one sample of each of 2,000 series a request, into a backend that
// discards the cells: the write path's cost per series. Its 2,000 series
// stay in the CPU's caches, as a real sender's many more do not.
func BenchmarkWriteOneSampleASeries(b *testing.B) {
	db, _ := openPebble(b)
	benchWriteShape(b, discardDB{db}, Config{}, 2000, 1)
}

func BenchmarkWrite(b *testing.B) {
	b.Run("discard", func(b *testing.B) {
		db, _ := openPebble(b)
		benchWrite(b, discardDB{db}, "")
	})
	for _, be := range backends {
		b.Run(be.Name, func(b *testing.B) {
			db, prefix := be.Open(b)
			benchWrite(b, db, prefix)
		})
	}
}

// BenchmarkRead reads 200 series of 6 hours at 15 s (288,000 samples) per
// operation.
func BenchmarkRead(b *testing.B) {
	for _, be := range backends {
		b.Run(be.Name, func(b *testing.B) {
			db, prefix := be.Open(b)
			ctx := context.Background()
			s := openStore(b, db, Config{TablePrefix: prefix})
			const nSeries, hours = 200, 6
			t0 := int64(1_760_000_000_000) / hour * hour
			for h := range int64(hours) {
				if err := s.Write(ctx, benchBatch(nSeries, 240, t0+h*hour)); err != nil {
					b.Fatal(err)
				}
			}
			q := Query{Start: t0, End: t0 + hours*hour, Matchers: []*labels.Matcher{mustMatcher(b, labels.MatchEqual, "job", "node")}}
			n := 0
			b.ResetTimer()
			for b.Loop() {
				ss := s.Select(ctx, q)
				for ss.Next() {
					n += len(ss.At().Samples)
				}
				if err := ss.Err(); err != nil {
					b.Fatal(err)
				}
				ss.Close()
			}
			if n != b.N*nSeries*hours*240 {
				b.Fatalf("read %d samples, want %d", n, b.N*nSeries*hours*240)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// BenchmarkSortByRow sorts the cells of a write by row (writer.sortByRow):
// 2,000 series of one sample, and 250 series of 8 interleaved as
// interleavedBatch sends them, where each row's cells come in 8 runs.
func BenchmarkSortByRow(b *testing.B) {
	for _, shape := range []struct {
		name  string
		batch []SeriesIn
	}{
		{"2000x1", benchBatch(2000, 1, 1_760_000_000_000)},
		{"250x8interleaved", interleavedBatch(250, 8, 1_760_000_000_000)},
	} {
		b.Run(shape.name, func(b *testing.B) {
			db, _ := openPebble(b)
			s := openStore(b, discardDB{db}, Config{})
			w, _, err := s.beginWrite(context.Background(), shape.batch, s.validate)
			if err != nil {
				b.Fatal(err)
			}
			s.appendBatch(w, shape.batch)
			in := slices.Clone(w.refs)
			for b.Loop() {
				w.refs = append(w.refs[:0], in...)
				w.sortByRow()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/cell")
		})
	}
}
