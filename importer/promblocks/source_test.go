package promblocks

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
)

// t0 is 2026-01-01T00:00:00Z: blocks start on 2 h boundaries.
const (
	t0     = int64(1767225600000)
	minute = int64(60_000)
)

// mixed is a block's worth of series of every kind, two hours from start.
func mixed(start int64, tag string) []testSeries {
	return []testSeries{
		{lbls("__name__", "up", "job", "a", "b", tag), floats(start, 15_000, 480, -1, 1)},
		{lbls("__name__", "gauge", "job", "a", "b", tag), floats(start+7, 60_000, 120, 50, 2)},
		{lbls("__name__", "latency", "job", "b", "b", tag), hists(start, 30_000, 240)},
		{lbls("__name__", "size", "job", "b", "b", tag), floatHists(start+1000, minute, 120)},
	}
}

func TestSourceReadsBlocks(t *testing.T) {
	dir := t.TempDir()
	a, b := mixed(t0, "x"), mixed(t0+2*60*minute, "x")
	pa, pb := writeBlock(t, dir, a), writeBlock(t, dir, b)
	// What a data directory holds beside its blocks is not read.
	for _, d := range []string{"wal", "chunks_head", "01ARZ3NDEKTSV4RRFFQ69G5FAV.tmp-for-deletion"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, err := New(Options{Dir: dir, PieceSamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	units, _ := src.Units(context.Background())
	if len(units) != 2 || units[0].ID != filepath.Base(pa) || units[1].ID != filepath.Base(pb) {
		t.Fatalf("units %+v, want the blocks %s and %s", units, pa, pb)
	}
	if u := units[0]; u.MinTime != t0 || u.MaxTime != t0+479*15_000 || u.Series != 4 || u.Samples != 480+120+240+120 || u.Bytes == 0 {
		t.Errorf("unit %+v", u)
	}
	if d := diffSeries(want(append(a, b...), math.MinInt64, math.MaxInt64), readAll(t, src)); d != "" {
		t.Error(d)
	}

	// One block named directly.
	one, err := New(Options{Dir: pb})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffSeries(want(b, math.MinInt64, math.MaxInt64), readAll(t, one)); d != "" {
		t.Error(d)
	}
	if _, err := New(Options{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no TSDB block") {
		t.Errorf("empty directory: %v", err)
	}
}

func TestSourceMergesOverlappingBlocks(t *testing.T) {
	dir := t.TempDir()
	// In order, then an out-of-order block over the second hour holding
	// some of the same samples and others in between, and a block after.
	inOrder := []testSeries{{lbls("__name__", "m"), floats(t0, 2*minute, 60, -1, 0)}}
	late := []testSeries{
		{lbls("__name__", "m"), lateSamples()},
		{lbls("__name__", "late_only"), floats(t0+70*minute, minute, 30, -1, 3)},
	}
	after := []testSeries{{lbls("__name__", "m"), floats(t0+4*60*minute, 2*minute, 10, -1, 0)}}
	pa, pl, _ := writeBlock(t, dir, inOrder), writeBlock(t, dir, late), writeBlock(t, dir, after)
	src, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	units, _ := src.Units(context.Background())
	ids := []string{filepath.Base(pa), filepath.Base(pl)}
	if ids[0] > ids[1] {
		ids[0], ids[1] = ids[1], ids[0]
	}
	if len(units) != 2 || units[0].ID != ids[0]+"+"+ids[1] || units[0].MinTime != t0 {
		t.Fatalf("units %+v, want the overlapping blocks as one", units)
	}
	all := append(append(inOrder, late...), after...)
	if d := diffSeries(want(all, math.MinInt64, math.MaxInt64), readAll(t, src)); d != "" {
		t.Error(d)
	}
}

// lateSamples are m's out-of-order samples: every minute of the second
// hour, so that half repeat in-order ones (same values) and half are new.
func lateSamples() []smp {
	var out []smp
	for i := range 60 {
		ts := t0 + 60*minute + int64(i)*minute
		out = append(out, smp{t: ts, f: math.Sin(float64((ts-t0)/(2*minute))) * 100})
		if i%2 == 1 {
			out[len(out)-1].f = float64(i) // no in-order sample here
		}
	}
	return out
}

func TestSourceHonoursTombstones(t *testing.T) {
	dir := t.TempDir()
	series := mixed(t0, "y")
	path := writeBlock(t, dir, series)
	blk, err := tsdb.OpenBlock(nil, path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The whole of "gauge", and the first half hour of "up".
	if err := blk.Delete(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gauge")); err != nil {
		t.Fatal(err)
	}
	if err := blk.Delete(ctx, t0, t0+30*minute-1, labels.MustNewMatcher(labels.MatchEqual, "__name__", "up")); err != nil {
		t.Fatal(err)
	}
	if err := blk.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	exp := want([]testSeries{series[2], series[3]}, math.MinInt64, math.MaxInt64)
	for k, v := range want(series[:1], t0+30*minute, math.MaxInt64) {
		exp[k] = v
	}
	if d := diffSeries(exp, readAll(t, src)); d != "" {
		t.Error(d)
	}
}

func TestSourceSelection(t *testing.T) {
	dir := t.TempDir()
	var all []testSeries
	for i := range 3 {
		s := mixed(t0+int64(i)*120*minute, "z")
		writeBlock(t, dir, s)
		all = append(all, s...)
	}
	// up or any series of job b, in the last hour of the first block
	// and the first of the second: the third block is left out.
	mint, maxt := t0+60*minute, t0+180*minute-1
	sel := [][]*labels.Matcher{
		{labels.MustNewMatcher(labels.MatchEqual, "__name__", "up")},
		{labels.MustNewMatcher(labels.MatchRegexp, "job", "b")},
	}
	src, err := New(Options{Dir: dir, Matchers: sel, MinTime: mint, MaxTime: maxt})
	if err != nil {
		t.Fatal(err)
	}
	units, _ := src.Units(context.Background())
	if len(units) != 2 || units[0].MinTime != mint || units[1].MaxTime != maxt || units[0].Samples != 0 {
		t.Fatalf("units %+v", units)
	}
	var selected []testSeries
	for _, s := range all {
		if s.lset.Get("__name__") == "up" || s.lset.Get("job") == "b" {
			selected = append(selected, s)
		}
	}
	if d := diffSeries(want(selected, mint, maxt), readAll(t, src)); d != "" {
		t.Error(d)
	}
	if len(src.Matchers()) != 2 {
		t.Errorf("Matchers: %v", src.Matchers())
	}
	if _, err := New(Options{Dir: dir, MinTime: 5, MaxTime: 4}); err == nil {
		t.Error("min time after max time accepted")
	}
}

// TestSourcePieces reads a long series in small pieces: each ends on an
// hour boundary, unless an hour holds more than twice the piece size.
func TestSourcePieces(t *testing.T) {
	dir := t.TempDir()
	series := []testSeries{
		{lbls("__name__", "per_second"), floats(t0, 1000, 2*3600, -1, 0)},     // 3600 an hour
		{lbls("__name__", "per_minute"), floats(t0+500, minute, 2*60, 10, 1)}, // 60 an hour
	}
	writeBlock(t, dir, series)
	src, err := New(Options{Dir: dir, PieceSamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	units, _ := src.Units(context.Background())
	it, err := src.Open(context.Background(), units[0])
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var perMinute []int
	for it.Next() {
		in := it.At()
		if in.Labels[0].Value != "per_minute" {
			continue
		}
		perMinute = append(perMinute, len(in.Samples))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(perMinute) != 2 || perMinute[0] != 60 || perMinute[1] != 60 {
		t.Errorf("per_minute in pieces of %v, want an hour each", perMinute)
	}
	if d := diffSeries(want(series, math.MinInt64, math.MaxInt64), readAll(t, src)); d != "" {
		t.Error(d)
	}
}
