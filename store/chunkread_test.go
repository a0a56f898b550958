package store

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// seriesRowKey returns the row key of a written series at the hour holding
// t, from its UIDs.
func seriesRowKey(t testing.TB, s *Store, ls []labels.Label, tMillis int64) []byte {
	t.Helper()
	var b labels2uid.Batch
	var metric string
	for _, l := range ls {
		if l.Name == model.MetricNameLabel {
			metric = l.Value
		}
	}
	b.Add(labels2uid.Metric, metric)
	for _, l := range ls {
		if l.Name != model.MetricNameLabel && l.Value != "" {
			b.Add(labels2uid.TagK, l.Name)
			b.Add(labels2uid.TagV, l.Value)
		}
	}
	if err := s.Resolver().Lookup(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	var tags []rowkey.TagPair
	for i := range b.Names[labels2uid.TagK] {
		if !b.Found[labels2uid.TagK][i] || !b.Found[labels2uid.TagV][i] {
			t.Fatalf("labels %v have no UIDs", ls)
		}
		tags = append(tags, rowkey.TagPair{K: b.UIDs[labels2uid.TagK][i], V: b.UIDs[labels2uid.TagV][i]})
	}
	rowkey.SortTags(tags)
	hour, _, err := rowkey.BaseHour(tMillis)
	if err != nil {
		t.Fatal(err)
	}
	sid := s.layout.AppendSeriesID(nil, b.UIDs[labels2uid.Metric][0], tags)
	return s.layout.AppendRowKey(nil, sid, hour)
}

// compactHour does what the compactor does to one series-hour, directly:
// the samples of the hour (all of them, as given, floats) become chunk
// cells cut and packed by the compactor's own planner, and the hour's raw
// cells are deleted. It returns the chunks' bytes as stored.
func compactHour(t testing.TB, s *Store, ls []labels.Label, samples []Sample) [][]byte {
	t.Helper()
	ctx := context.Background()
	key := seriesRowKey(t, s, ls, samples[0].T)
	hourMillis := samples[0].T / hour * hour
	rows, err := s.data.Get(ctx, "", [][]byte{key})
	if err != nil {
		t.Fatal(err)
	}
	var del []table.Cell
	for _, c := range rows[0].Cells {
		del = append(del, table.Cell{Row: key, Family: c.Family, Qualifier: c.Qualifier})
	}
	if len(del) > 0 {
		if err := s.data.Delete(ctx, del); err != nil {
			t.Fatal(err)
		}
	}
	p := compactPlan{xorOnly: s.cfg.FloatChunks == FloatChunksXOR}
	pts := make([]cellcodec.Point, len(samples))
	for i, smp := range samples {
		pts[i] = cellcodec.Point{T: smp.T, V: smp.V}
	}
	if err := p.addRuns(key, hourMillis, pts); err != nil {
		t.Fatal(err)
	}
	var values [][]byte
	for _, c := range p.puts {
		chunks, err := cellcodec.AppendCellChunks(nil, hourMillis, c.Qualifier, c.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunks {
			values = append(values, ch.Data)
		}
	}
	if err := s.data.Put(ctx, p.puts); err != nil {
		t.Fatal(err)
	}
	return values
}

// collectChunks drains a ChunkSeriesSet: per series its labels, its chunks'
// bytes (copied) and its samples decoded.
type chunkOut struct {
	lset    string
	chunks  []Chunk
	samples []Sample
	hists   []HistogramSample
}

func collectChunks(t testing.TB, cs ChunkSeriesSet) []chunkOut {
	t.Helper()
	defer cs.Close()
	var out []chunkOut
	for cs.Next() {
		s := cs.At()
		o := chunkOut{lset: s.Labels.String()}
		prevMax := int64(math.MinInt64)
		for _, c := range s.Chunks {
			c.Data = bytes.Clone(c.Data)
			o.chunks = append(o.chunks, c)
			x, err := chunkenc.FromData(c.Encoding, c.Data)
			if err != nil {
				t.Fatal(err)
			}
			if x.NumSamples() != c.Samples || c.Samples == 0 {
				t.Fatalf("%s: chunk claims %d samples, holds %d", o.lset, c.Samples, x.NumSamples())
			}
			it := x.Iterator(nil)
			first := true
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				var ts int64
				switch vt {
				case chunkenc.ValFloat:
					var v float64
					ts, v = it.At()
					o.samples = append(o.samples, Sample{T: ts, V: v})
				case chunkenc.ValHistogram:
					var h *histogram.Histogram
					ts, h = it.AtHistogram(nil)
					o.hists = append(o.hists, HistogramSample{T: ts, H: h})
				case chunkenc.ValFloatHistogram:
					var fh *histogram.FloatHistogram
					ts, fh = it.AtFloatHistogram(nil)
					o.hists = append(o.hists, HistogramSample{T: ts, FH: fh})
				}
				if first && ts != c.MinTime {
					t.Fatalf("%s: chunk MinTime %d, first sample %d", o.lset, c.MinTime, ts)
				}
				if ts <= prevMax {
					t.Fatalf("%s: sample %d not after %d: chunks overlap or go back", o.lset, ts, prevMax)
				}
				first, prevMax = false, ts
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if prevMax != c.MaxTime {
				t.Fatalf("%s: chunk MaxTime %d, last sample %d", o.lset, c.MaxTime, prevMax)
			}
		}
		out = append(out, o)
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func samplesString(ss []Sample) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, " %d:%x", s.T, math.Float64bits(s.V))
	}
	return b.String()
}

// TestSelectChunksPassThrough: compacted hours go out byte for byte when the
// range covers them; the range's edges and hours with late raw samples are
// decoded and cut anew, raw samples winning on equal timestamps. Hours
// stored as dense cells (FloatChunksAuto: the values have one decimal) are
// always decoded and cut anew, into chunks of at most 120 samples.
func TestSelectChunksPassThrough(t *testing.T) {
	for _, fc := range []string{FloatChunksXOR, FloatChunksAuto} {
		t.Run(fc, func(t *testing.T) { testSelectChunksPassThrough(t, fc) })
	}
}

func testSelectChunksPassThrough(t *testing.T, floatChunks string) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix, FloatChunks: floatChunks})
		ls := lbls("__name__", "pt", "job", "a")
		base := int64(1_760_000_000_000) / hour * hour
		// Four hours, a sample every 15 s: 240 per hour, two stored chunks each.
		ref := map[int64]float64{}
		var byHour [4][]Sample
		for h := range 4 {
			for ts := base + int64(h)*hour; ts < base+int64(h+1)*hour; ts += 15_000 {
				v := float64(ts/15_000) * 1.5
				if ts == base+hour+30_000 {
					v = math.Float64frombits(0x7ff0000000000002) // a staleness marker, bit-exact through chunks
				}
				byHour[h] = append(byHour[h], Sample{T: ts, V: v})
				ref[ts] = v
			}
		}
		var all []Sample
		for h := range 4 {
			all = append(all, byHour[h]...)
		}
		if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: all}}); err != nil {
			t.Fatal(err)
		}
		// Hours 0 to 2 compacted; hour 3 stays raw.
		var stored [][]byte
		for h := range 3 {
			stored = append(stored, compactHour(t, s, ls, byHour[h])...)
		}
		if k := chunkCellKinds(t, s); (floatChunks == FloatChunksXOR) != (k.dense == 0) {
			t.Fatalf("float chunks %s: cells %+v", floatChunks, k)
		}
		// Late raw samples into hour 1 (stored chunks 2 and 3): one at a new
		// time inside chunk 2, one overwriting a time of chunk 2 with
		// another value. Chunk 3 is untouched.
		late := []Sample{{T: base + hour + 7_000, V: -1}, {T: base + hour + 45_000, V: -2}}
		if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: late}}); err != nil {
			t.Fatal(err)
		}
		for _, l := range late {
			ref[l.T] = l.V
		}
		want := func(mint, maxt int64) string {
			var ss []Sample
			for ts, v := range ref {
				if ts >= mint && ts <= maxt {
					ss = append(ss, Sample{T: ts, V: v})
				}
			}
			slices.SortFunc(ss, compareSampleT)
			return samplesString(ss)
		}
		ms := []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "job", "a")}

		for _, c := range []struct {
			name       string
			mint, maxt int64
			// passed are the indexes in stored of the chunks that must go
			// out untouched; no other chunk may equal a stored one.
			passed []int
		}{
			{"whole range", base, base + 4*hour, []int{0, 1, 3, 4, 5}},
			{"edges cut", base + 60_000, base + 3*hour - 60_000, []int{1, 3, 4}},
			{"inside one chunk", base + 60_000, base + 120_000, nil},
			{"raw hour only", base + 3*hour, base + 4*hour, nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				q := Query{Start: c.mint, End: c.maxt, Matchers: ms}
				got := collectChunks(t, s.SelectChunks(ctx, q))
				if len(got) != 1 {
					t.Fatalf("%d series, want 1", len(got))
				}
				if g, w := samplesString(got[0].samples), want(c.mint, c.maxt); g != w {
					t.Fatalf("samples differ:\ngot  %s\nwant %s", g, w)
				}
				// The SAMPLES read agrees.
				if g, w := collect(t, s.Select(ctx, q)), got[0].lset+want(c.mint, c.maxt)+"\n"; g != w {
					t.Fatalf("Select:\ngot  %s\nwant %s", g, w)
				}
				var passed []int
				for _, ch := range got[0].chunks {
					i := slices.IndexFunc(stored, func(b []byte) bool { return bytes.Equal(b, ch.Data) })
					if i >= 0 {
						passed = append(passed, i)
					} else if ch.Samples > samplesPerChunk {
						t.Fatalf("a chunk cut by the read holds %d samples, more than %d", ch.Samples, samplesPerChunk)
					}
				}
				if floatChunks != FloatChunksXOR {
					c.passed = nil // dense cells, decoded
				}
				if !slices.Equal(passed, c.passed) {
					t.Fatalf("stored chunks passed through: %v, want %v", passed, c.passed)
				}
			})
		}
	})
}

// TestSelectChunksOverlappingChunks: two chunk cells of one row that overlap
// (a compaction interrupted between its writes) are decoded and merged,
// never both passed through.
func TestSelectChunksOverlappingChunks(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{})
	ls := lbls("__name__", "ov")
	base := int64(1_760_000_000_000) / hour * hour
	var smps []Sample
	for i := range 10 {
		smps = append(smps, Sample{T: base + int64(i)*1000, V: float64(i)})
	}
	if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: smps[:1]}}); err != nil {
		t.Fatal(err)
	}
	compactHour(t, s, ls, smps)
	// A second cut of the same hour beside the first: samples 3 to 9.
	key := seriesRowKey(t, s, ls, base)
	v, err := cellcodec.AppendChunkValue(nil, smps[3:])
	if err != nil {
		t.Fatal(err)
	}
	q := cellcodec.AppendChunkQualifier(nil, chunkenc.EncXOR, 3000, 9000)
	if err := s.data.Put(ctx, []table.Cell{{Row: key, Family: FamilyData, Qualifier: q, Timestamp: base + 9000, Value: v}}); err != nil {
		t.Fatal(err)
	}
	got := collectChunks(t, s.SelectChunks(ctx, Query{Start: base, End: base + hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "ov")}}))
	if len(got) != 1 || samplesString(got[0].samples) != samplesString(smps) {
		t.Fatalf("got %+v, want the 10 samples once", got)
	}
}

// TestSelectChunksMatchesSelect: on the property test's random data, the
// chunked read decodes to exactly what the sample read returns.
func TestSelectChunksMatchesSelect(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{ReadBatchSeries: 2, ReadBatchRows: 3})
	base := int64(1_760_000_000_000) / hour * hour
	var batch []SeriesIn
	for i := range 30 {
		var smps []Sample
		for j := range 50 + i*17 {
			smps = append(smps, Sample{T: base + int64(j)*int64(i+1)*37_000, V: float64(j)})
		}
		batch = append(batch, SeriesIn{Labels: lbls("__name__", fmt.Sprintf("m%d", i%4), "i", fmt.Sprint(i)), Samples: smps})
	}
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// Some hours compacted.
	for i, in := range batch {
		if i%3 != 0 {
			continue
		}
		end := sortFind(in.Samples, base+hour)
		compactHour(t, s, in.Labels, in.Samples[:end])
	}
	for _, r := range [][2]int64{{base, base + 40*hour}, {base + 1234, base + 3*hour + 99}, {base + hour, base + hour}} {
		q := Query{Start: r[0], End: r[1], Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchRegexp, "__name__", "m.*")}}
		var b strings.Builder
		for _, o := range collectChunks(t, s.SelectChunks(ctx, q)) {
			b.WriteString(o.lset + samplesString(o.samples) + "\n")
		}
		if g, w := b.String(), collect(t, s.Select(ctx, q)); g != w {
			t.Fatalf("range %v: chunks decode to\n%s\nsamples read\n%s", r, g, w)
		}
	}
}

func sortFind(ss []Sample, t int64) int {
	i, _ := slices.BinarySearchFunc(ss, t, func(s Sample, t int64) int { return compareInt64(s.T, t) })
	return i
}
