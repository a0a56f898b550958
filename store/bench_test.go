package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
	ctx := context.Background()
	s := openStore(b, db, cfg)
	t0 := int64(1_760_000_000_000)
	batch := benchBatch(nSeries, perSeries, t0)
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
				batch[j].Samples[k].T += int64(perSeries) * 15_000
			}
		}
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	samples := float64(b.N * nSeries * perSeries)
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
