package main

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// TestImportRetentionRaised: an import run with a retention that cuts a
// block in two marks the block done from where it began; a later run with
// a longer retention (the adapters' retention raised, the import run again
// to fill in older history) imports the block again, the part between the
// two horizons too. The block was once skipped as done, that part never
// imported while older blocks were.
func TestImportRetentionRaised(t *testing.T) {
	const hour = int64(time.Hour / time.Millisecond)
	now := time.Now().UnixMilli() / hour * hour
	// One block from 10 days ago to 6 days ago, a sample an hour.
	from := now - 10*24*hour
	var smp []chunks.Sample
	for i := range int64(4 * 24) {
		smp = append(smp, sample{t: from + i*hour, f: float64(i)})
	}
	blocks := t.TempDir()
	if _, err := tsdb.CreateBlock([]storage.Series{storage.NewListSeries(labels.FromStrings("__name__", "g"), smp)},
		blocks, 4*3600*1000, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	for _, ret := range []string{"8d", "30d"} {
		f, err := parseImportFlags([]string{"--storage.path=" + data, "--storage.retention=" + ret, "--progress=log", "prometheus", blocks})
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := importBlocks(context.Background(), f, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("retention %s: imported %d, skipped %d, samples %d", ret, sum.Imported, sum.Skipped, sum.Samples)
	}
	db, err := pebbletable.Open(data, pebbletable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := store.Open(context.Background(), db, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ss := st.Select(context.Background(), store.Query{Start: math.MinInt64 / 2, End: math.MaxInt64 / 2,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "g")}})
	defer ss.Close()
	got := 0
	for ss.Next() {
		got += len(ss.At().Samples)
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(smp) {
		t.Errorf("store holds %d of the block's %d samples after the import was run again with a 30d retention (all within it)", got, len(smp))
	}
}

type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }
