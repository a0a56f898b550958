package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// runPromBlock writes the data set into one Prometheus TSDB block with
// Prometheus's own code (what its compactor writes for these samples) and
// prints the block's bytes: chunks, index and the rest.
func runPromBlock(args []string) error {
	fset := flag.NewFlagSet("promblock", flag.ExitOnError)
	var d dataFlags
	d.register(fset)
	dir := fset.String("dir", "", "directory to write the block into (required)")
	_ = fset.Parse(args)
	if *dir == "" || d.start == 0 {
		return errors.New("-dir and -start are required")
	}
	set := seriesSet(d.run, d.series, d.metrics)
	gens := valueGens(set)
	for _, g := range gens {
		for range d.skip {
			g.Next()
		}
	}
	ss := blockSeries(set, gens, d.start+int64(d.skip)*d.step, d.step, d.rounds)
	// One block over the whole range. The head that CreateBlock fills
	// refuses samples older than half its chunk range behind the newest, and
	// it is filled series by series: give it a range twice the data's span.
	span := int64(d.rounds) * d.step
	chunkRange := max(tsdb.DefaultBlockDuration, 2*span+d.step)
	path, err := tsdb.CreateBlock(ss, *dir, chunkRange, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("writing block: %w", err)
	}
	sizes, err := blockSizes(path)
	if err != nil {
		return err
	}
	n := float64(d.series * d.rounds)
	fmt.Printf("target=prometheus-block samples=%.0f block_bytes=%d chunks_bytes=%d index_bytes=%d bytes_per_sample=%.3f chunks_bytes_per_sample=%.3f\n",
		n, sizes["total"], sizes["chunks"], sizes["index"], float64(sizes["total"])/n, float64(sizes["chunks"])/n)
	return nil
}

// valueGens are the value generators of a set's series.
func valueGens(set []series) []*valueGen {
	gens := make([]*valueGen, len(set))
	for i, s := range set {
		gens[i] = newValueGen(s, i)
	}
	return gens
}

// blockSeries is rounds samples of every series of set, step apart from
// from, the values drawn from gens (which go on from there).
func blockSeries(set []series, gens []*valueGen, from, step int64, rounds int) []storage.Series {
	ss := make([]storage.Series, len(set))
	for i, s := range set {
		b := labels.NewScratchBuilder(len(s.labels) + 1)
		b.Add("__name__", s.metric)
		for _, l := range s.labels {
			b.Add(l[0], l[1])
		}
		b.Sort()
		samples := make([]chunks.Sample, rounds)
		for r := range samples {
			samples[r] = fsample{t: from + int64(r)*step, f: gens[i].Next()}
		}
		ss[i] = storage.NewListSeries(b.Labels(), samples)
	}
	return ss
}

// blockSizes returns the bytes of a block directory: "chunks", "index",
// "other" and their "total".
func blockSizes(path string) (map[string]int64, error) {
	sizes := map[string]int64{}
	err := filepath.WalkDir(path, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		part := "other"
		switch {
		case strings.HasPrefix(rel, "chunks"+string(os.PathSeparator)):
			part = "chunks"
		case rel == "index":
			part = "index"
		}
		sizes[part] += fi.Size()
		sizes["total"] += fi.Size()
		return nil
	})
	return sizes, err
}

// fsample is a float sample for storage.NewListSeries.
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }
